// headwise/model/llama.hpp -- a Llama decoder (SmolLM2-135M-Instruct) from its GGUF file, through the
// course's own attention (lesson 12).
//
// One block, as the formula reads (x (N, d_model), N new tokens at positions P .. P + N - 1):
//   h = rmsnorm(x) * attn_norm
//   q = h W_q^T (N, H * d_head), k = h W_k^T, v = h W_v^T (N, H_kv * d_head)
//   q, k rotated at their positions (RoPE, lesson 09; GGUF's llama weights are stored permuted so that
//        the pairs are adjacent: lesson 09's "interleaved" layout)
//   k, v appended to the layer's KV cache (lesson 08), (1, H_kv, P + N, d_head)
//   a = softmax(q k^T / sqrt(d_head), causal) v, query head h reading K/V head h / (H / H_kv)
//   x = x + a W_o^T
//   h = rmsnorm(x) * ffn_norm
//   x = x + (silu(h W_gate^T) * (h W_up^T)) W_down^T
// then rmsnorm(x) * output_norm and the logits x E^T, E the token embedding (tied).
//
// Two paths through the same code, differing only in the matrix products:
//   Path::exact  every weight dequantized to float32 once (4x the file's memory), BLAS products:
//                the definition, checked against an independent PyTorch implementation;
//   Path::fast   weights stay in their Q4_1 / Q8_0 blocks. A few tokens (decode): the activation
//                rows quantized per block and integer dot products on the blocks (quant_dot.hpp).
//                Many tokens (prefill): one matrix at a time dequantized into a float32 scratch and
//                multiplied by BLAS, the tokens shared between the cores. Checked against the exact path.
// Both spread their products over a Team of threads started once (fast/team.hpp).
#pragma once

#include "headwise/inference/kv_cache.hpp"
#include "headwise/model/bpe.hpp"
#include "headwise/model/gguf.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace headwise::fast {
class Team;
}

namespace headwise::llama {

struct Config {
    std::size_t layers = 0, d_model = 0, heads = 0, kv_heads = 0, d_head = 0, d_ff = 0, vocab = 0, context = 0;
    double rope_base = 10000.0;
    float rms_eps = 1e-5f;

    // From the file's llama.* keys; usage_error when a key is missing or the sizes disagree.
    static Config from(const gguf::File& file);
    std::size_t kv_width() const { return kv_heads * d_head; }
    std::size_t group() const { return heads / kv_heads; }
};

// One block's tensors, in the order the formula uses them.
struct Block {
    const gguf::TensorInfo *attn_norm, *w_q, *w_k, *w_v, *w_o, *ffn_norm, *w_gate, *w_up, *w_down;
};

// Where the model is looked for: $HEADWISE_DECODER_DIR, else ${XDG_CACHE_HOME:-~/.cache}/headwise/models/
// SmolLM2-135M-Instruct (scripts/fetch-model puts it there), file SmolLM2-135M-Instruct.Q4_1.gguf.
std::filesystem::path default_model_path();

enum class Path { exact, fast };
std::string_view to_string(Path path);

// Where Model::open leaves the Q4_1 matrices' bytes: where the file has them, the file mapped
// read-only (for code that reads the blocks itself, as exercise 12's grader does with the
// learner's dequantization), or read into memory and regrouped
// in panels where the AVX-512 product runs (quant.hpp; ~2x fewer instructions per byte: the fast
// path's decode ~1.2x faster). Every library function reads either layout.
enum class WeightLayout { as_in_file, fastest };

class Model {
public:
    // Reads the file, checks every tensor's shape against the config, builds the tokenizer.
    static Model open(const std::filesystem::path& path, WeightLayout layout = WeightLayout::fastest);

    const Config& config() const { return config_; }
    const gguf::File& file() const { return *file_; }
    const bpe::Tokenizer& tokenizer() const { return *tokenizer_; }
    const std::vector<Block>& blocks() const { return blocks_; }
    const gguf::TensorInfo& embedding() const { return *embedding_; }  // (vocab, d_model), also the output
    const gguf::TensorInfo& output_norm() const { return *output_norm_; }
    std::int32_t eos() const { return eos_; }        // generation stops here
    std::int32_t im_end() const { return im_end_; }  // the chat turn's end (-1 if none)

    // The prompt as the model's chat template lays out one user turn (ChatML, with SmolLM2's
    // system line), ending where the assistant's answer starts.
    std::string chat_prompt(std::string_view user) const;

    // The exact path's float32 copy of a tensor (made on first use, kept; thread-safe).
    const float* dequantized(const gguf::TensorInfo& tensor) const;

    // Bytes of weights one decode step reads on the fast path (every block's matrices, one row of
    // the embedding, the whole output matrix, the norms).
    std::uint64_t bytes_per_token() const;

private:
    struct Cache;
    std::unique_ptr<gguf::File> file_;
    Config config_;
    std::unique_ptr<bpe::Tokenizer> tokenizer_;
    std::vector<Block> blocks_;
    const gguf::TensorInfo *embedding_ = nullptr, *output_norm_ = nullptr;
    std::int32_t eos_ = -1, im_end_ = -1;
    std::shared_ptr<Cache> fp32_;
};

// One sequence: the KV caches, the scratch of a forward pass, the threads.
class Session {
public:
    // `capacity`: the most tokens this sequence will hold (the caches are allocated for it).
    Session(const Model& model, Path path, std::size_t capacity, std::size_t threads = 0);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    const Model& model() const { return model_; }
    Path path() const { return path_; }
    std::size_t length() const { return caches_.empty() ? 0 : caches_[0].length(); }
    std::size_t capacity() const { return capacity_; }
    const KVCache& cache(std::size_t layer) const { return caches_.at(layer); }

    // Runs `tokens` at positions length() .. length() + N - 1 and writes the logits of the last
    // one (vocab floats), or of every one ((N, vocab)) when all_logits. usage_error when the
    // tokens would not fit in the capacity or an id is outside the vocabulary.
    void forward(std::span<const std::int32_t> tokens, float* logits, bool all_logits = false);

    // Forget every token (the caches' storage is kept).
    void clear();

    // When on, forward() keeps each layer's rotated queries so that attention_weights() can give the
    // (H, N_q, N_k) weights of the last forward's tokens over every key (for lesson 12's head roles).
    void keep_queries(bool on) { keep_queries_ = on; }
    std::vector<float> attention_weights(std::size_t layer) const;

private:
    struct Scratch;
    void block(std::size_t layer, std::size_t n, std::size_t first_position);
    struct Product {
        const gguf::TensorInfo* w;
        float* y;
    };
    void linear(std::initializer_list<Product> products, const float* x, std::size_t n);  // at most 4
    void float_product(const gguf::TensorInfo& w, const float* x, std::size_t n, float* y);
    void attend(std::size_t layer, std::size_t n, std::size_t first_position);

    const Model& model_;
    Path path_;
    std::size_t capacity_;
    std::vector<KVCache> caches_;
    std::unique_ptr<fast::Team> team_;
    std::unique_ptr<Scratch> scratch_;
    bool keep_queries_ = false;
    std::vector<std::vector<float>> kept_q_;
    std::size_t kept_first_ = 0, kept_n_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Choosing the next token from the logits.

struct Sampling {
    float temperature = 0.0f;  // 0: greedy (the largest logit, deterministic)
    std::size_t top_k = 0;     // 0: every token
    float top_p = 1.0f;        // (0, 1]: the smallest set of tokens whose probability reaches p
    std::uint64_t seed = 0;
};

// usage_error naming the flag when temperature < 0 or not finite, or top_p outside (0, 1].
void validate(const Sampling& sampling);

class Sampler {
public:
    explicit Sampler(const Sampling& sampling);
    std::int32_t next(std::span<const float> logits);

private:
    Sampling sampling_;
    std::uint64_t state_;
    std::vector<std::pair<float, std::int32_t>> candidates_;
};

// Mean log-likelihood per token of ids[1..] given what precedes each (natural log), from the
// (N, vocab) logits of a forward over ids.
double mean_log_likelihood(std::span<const float> logits, std::span<const std::int32_t> ids, std::size_t vocab);

}  // namespace headwise::llama
