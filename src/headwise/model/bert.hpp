// headwise/model/bert.hpp -- a BERT encoder (lesson 07's all-MiniLM-L6-v2) on the library's attention.
//
// The forward pass, in PyTorch's (B, N, d_model) order, with Hugging Face's parameter names:
//   x = LayerNorm(word[id] + position[i] + token_type[t])                    (B, N, d_model)
//   (t = 0, or 1 for the second sentence of a pair)
//   for each of the L layers (post-LayerNorm, as in the original BERT):
//     a = MultiHeadAttention(x, key_padding_mask)     headwise::MultiHeadAttention, [W_q; W_k; W_v]
//     x = LayerNorm(x + a)
//     x = LayerNorm(x + GELU(x . W_1^T + b_1) . W_2^T + b_2)     GELU(z) = z/2 (1 + erf(z / sqrt 2))
//   embedding = x averaged over the real (unpadded) tokens, divided by its L2 norm   (B, d_model)
// Padding is a key padding mask (true = [PAD]): no query attends to a padded key; padded rows are
// computed like any other and ignored by the pooling.
//
// The model folder holds model.safetensors, vocab.txt and config.json (scripts/fetch-model puts
// them in the cache); HEADWISE_MODEL_DIR overrides where it is looked for.
#pragma once

#include "headwise/reference/attention.hpp"
#include "headwise/model/safetensors.hpp"
#include "headwise/base/tensor.hpp"
#include "headwise/model/tokenizer.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace headwise::bert {

// $HEADWISE_MODEL_DIR, else ${XDG_CACHE_HOME:-~/.cache}/headwise/models/all-MiniLM-L6-v2.
std::filesystem::path model_dir();

// The model folder is missing or incomplete: a usage_error whose message says how to get it.
struct model_missing : usage_error {
    using usage_error::usage_error;
};
// Throws model_missing unless `dir` holds the three files.
void require_model(const std::filesystem::path& dir);

struct Config {
    std::size_t vocab_size = 30522;
    std::size_t d_model = 384;        // hidden_size
    std::size_t layers = 6;           // num_hidden_layers
    std::size_t heads = 12;           // num_attention_heads
    std::size_t d_ffn = 1536;         // intermediate_size
    std::size_t max_positions = 512;  // max_position_embeddings
    std::size_t type_vocab_size = 2;
    float layer_norm_eps = 1e-12f;
    std::size_t d_head() const { return d_model / heads; }
};
// Reads config.json; usage_error for a missing key, a value out of range, or an activation
// other than "gelu" (erf GELU, the only one implemented).
Config read_config(const std::filesystem::path& config_json);

struct Layer {
    MultiHeadAttention attention;  // in_proj = [query; key; value], out_proj = attention.output.dense
    Tensor1 ln1_gamma, ln1_beta;   // attention.output.LayerNorm  (d_model)
    Tensor2 w_1;                   // intermediate.dense          (d_ffn, d_model)
    Tensor1 b_1;                   //                             (d_ffn)
    Tensor2 w_2;                   // output.dense                (d_model, d_ffn)
    Tensor1 b_2;                   //                             (d_model)
    Tensor1 ln2_gamma, ln2_beta;   // output.LayerNorm            (d_model)

    // This layer with head `head` removed: its d_head columns of W_O are zeroed, so what it computes
    // never reaches the residual stream (what Hugging Face's head_mask does).
    Layer without_head(std::size_t head) const;
};

struct Model {
    Config config;
    WordPiece vocab;
    Tensor2 word_embeddings;        // (vocab_size, d_model)
    Tensor2 position_embeddings;    // (max_positions, d_model)
    Tensor2 token_type_embeddings;  // (type_vocab_size, d_model)
    Tensor1 embed_ln_gamma, embed_ln_beta;
    std::vector<Layer> layers;

    // Loads config.json, vocab.txt and model.safetensors from `dir` (require_model first).
    static Model load(const std::filesystem::path& dir);
    // Builds the weights from an opened safetensors file (names as in BertModel's state dict,
    // with or without a "bert." prefix); every tensor's dtype and shape is checked.
    static Model from_safetensors(const safetensors::File& file, Config config, WordPiece vocab);
};

// A batch of token ids, padded on the right with [PAD] to the longest.
struct Batch {
    std::vector<std::vector<std::int32_t>> ids;  // B rows of N ids
    Mask2 padding;                               // (B, N), true = [PAD]
    // B rows of N token types (0 = first sentence, 1 = second of a pair); empty = all 0.
    std::vector<std::vector<std::int32_t>> token_types;
    std::size_t size() const { return ids.size(); }
    std::size_t seq() const { return ids.empty() ? 0 : ids[0].size(); }
};
Batch make_batch(const std::vector<std::vector<std::int32_t>>& ids, std::int32_t pad_id);
// Tokenizes each text (WordPiece::encode) and pads.
Batch tokenize(const Model& model, const std::vector<std::string>& texts);
// A pair of sentences as one input, as BertTokenizer(a, b) builds it: [CLS] a [SEP] b [SEP], token
// type 0 up to and including the first [SEP], 1 after it. `tokens` and `boundary` (the first
// token of b) are for display. usage_error past the model's positions.
struct Pair {
    Batch batch;  // one row
    std::vector<std::string> tokens;
    std::size_t boundary = 0;
};
Pair encode_pair(const Model& model, const std::string& a, const std::string& b);

struct Outputs {
    Tensor3 last;                    // (B, N, d_model): the last layer
    Tensor2 embedding;               // (B, d_model): mean over real tokens, L2-normalised
    std::vector<Tensor4> attention;  // if asked: L x (B, H, N, N)
    std::vector<Tensor3> hidden;     // if asked: L + 1 x (B, N, d_model), the embeddings first
};
struct ForwardOptions {
    bool keep_attention = false;
    bool keep_hidden = false;
    // Head ablation: run layer `ablate_layer` without head `ablate_head` (Layer::without_head).
    std::optional<std::size_t> ablate_layer, ablate_head;
};
Outputs forward(const Model& model, const Batch& batch, const ForwardOptions& options = {});

// The steps, for the lesson and the tests.
Tensor3 embed(const Model& model, const Batch& batch);                                       // (B, N, d_model)
Tensor3 layer_norm(const Tensor3& x, const Tensor1& gamma, const Tensor1& beta, float eps);  // over d_model
Tensor3 gelu(Tensor3 x);                                                                     // erf GELU, elementwise
// One encoder layer: (B, N, d_model) -> (B, N, d_model); `weights` receives (B, H, N, N) if given.
Tensor3 encoder_layer(const Layer& layer, const Tensor3& x, const Mask2& padding, float eps,
                      Tensor4* weights = nullptr);
// Mean over the unpadded tokens, then divided by the L2 norm: (B, N, d) -> (B, d).
Tensor2 mean_pool_normalize(const Tensor3& x, const Mask2& padding);

// Cosine similarity of two vectors of the same length.
double cosine(const float* a, const float* b, std::size_t n);

}  // namespace headwise::bert
