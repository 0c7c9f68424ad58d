// headwise/train/model.hpp -- the pinned attention-only transformer of lesson 11.
//
//   x = embed[token] + pos_embed[position]                       (B, N, d)
//   for each layer:  x = x + MHA(LN(x))    causal, nn.MultiheadAttention's layout, no biases
//   logits = LN_f(x) . unembed^T                                  (B, N, V)
//
// The architecture is pinned so that other code (docs/11's PyTorch loader, scripts/check-induction)
// can load a checkpoint and compute the same logits. All parameters live in one flat array (so
// AdamW is one loop) at the offsets of a Layout; gradients use the same layout.
#pragma once

#include "headwise/base/random.hpp"
#include "headwise/base/tensor.hpp"
#include "headwise/train/data.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace headwise::train {

struct Config {
    std::size_t vocab = 64;    // V
    std::size_t context = 32;  // N, the longest sequence (pos_embed's rows)
    std::size_t d_model = 64;  // d
    std::size_t heads = 4;     // H
    std::size_t layers = 2;    // L
    std::size_t d_head() const { return d_model / heads; }
};

// Throws usage_error (one line) unless heads divides d_model, context >= 8, vocab >= 2 and every size >= 1.
void check(const Config& config);

// One named tensor of the model, as the checkpoint names it.
struct ParamInfo {
    std::string name;                // "layers.0.attn.in_proj_weight"
    std::vector<std::size_t> shape;  // (3d, d)
    std::size_t offset = 0;          // into the flat array
    std::size_t count() const;
};

struct LayerOffsets {
    std::size_t ln_weight, ln_bias;  // (d)
    std::size_t in_proj;             // (3d, d): rows [W_q; W_k; W_v]
    std::size_t out_proj;            // (d, d): W_o
};

struct Layout {
    std::size_t embed = 0;      // (V, d)
    std::size_t pos_embed = 0;  // (N, d)
    std::vector<LayerOffsets> layers;
    std::size_t ln_f_weight = 0, ln_f_bias = 0;  // (d)
    std::size_t unembed = 0;                     // (V, d)
    std::size_t total = 0;
    std::vector<ParamInfo> params;  // every tensor above, in this order
};

Layout make_layout(const Config& config);

// Parameters (or their gradients): one flat float array at the layout's offsets.
struct Params {
    Config config;
    Layout layout;
    std::vector<float> values;

    explicit Params(const Config& c) : config(c), layout(make_layout(c)), values(layout.total, 0.0f) {}
    float* at(std::size_t offset) { return values.data() + offset; }
    const float* at(std::size_t offset) const { return values.data() + offset; }
};

// PyTorch's default initialisation of the same modules: embeddings N(0, 1), in_proj Xavier-uniform,
// out_proj and unembed U(-1/sqrt(d), 1/sqrt(d)), LayerNorms weight 1 and bias 0.
Params init_params(const Config& config, Random& rng);

// What forward() keeps for backward(), per layer, and the outputs. Buffers are reused from call
// to call: once sized, a training step allocates only inside the attention core.
struct LayerCache {
    std::vector<float> xhat;         // (B, N, d) LN(x) before its weight and bias
    std::vector<float> rstd;         // (B, N)   1 / sqrt(var + eps)
    std::vector<float> y;            // (B, N, d) LN(x)
    Tensor4 q, k, v;                 // (B, H, N, d_head)
    std::vector<float> z;            // (B, N, d) the heads merged, before W_o
    std::vector<float> lse;          // (B, H, N) each query row's log-sum-exp, for the backward
    std::optional<Tensor4> weights;  // (B, H, N, N) when asked for
};

struct Activations {
    std::size_t batch = 0, seq = 0;
    std::vector<LayerCache> layers;
    std::vector<float> x_final, xhat_f, rstd_f, y_f;  // (B, N, d), (B, N, d), (B, N), (B, N, d)
    std::vector<float> logits;                        // (B, N, V)
    // Buffers a step uses and forgets, kept from step to step: a training step reuses them
    // instead of asking the allocator for megabytes (and the kernel for fresh pages) each time.
    struct Scratch {
        std::vector<float> qkv, out;          // forward: (B, N, 3d), (B, N, d)
        std::vector<float> dy, dx, dz, dqkv;  // backward: (B, N, d) x 3, (B, N, 3d)
    } scratch;
};

// How an ablated head's output z_h (B, N, d_head) is replaced before W_o:
//   zero: by 0 -- which also removes whatever constant the head always writes;
//   mean: by its mean over the batch's sequences at each position, (N, d_head) broadcast over B --
//     removes what the head says about this sequence's tokens and keeps what it says at every
//     position whatever the tokens (the batch is the one measured: give it many sequences).
enum class Ablation { zero, mean };

struct ForwardOptions {
    bool keep_weights = false;                             // fill LayerCache::weights
    std::optional<std::size_t> ablate_layer, ablate_head;  // replace that head's output (both or neither)
    Ablation ablate_with = Ablation::zero;
};

// tokens (B, N) with N <= context.
void forward(const Params& params, std::span<const std::int32_t> tokens, std::size_t batch, std::size_t seq,
             Activations& acts, const ForwardOptions& options = {});

// Gradients of the loss whose gradient w.r.t. the logits is dlogits (B, N, V), accumulated into
// grads (which the caller zeroes), from the activations of the forward pass on the same tokens.
void backward(const Params& params, std::span<const std::int32_t> tokens, Activations& acts,
              std::span<const float> dlogits, Params& grads);

// Next-token targets for every position: tokens[b, n + 1], and -1 (ignored) at the last position.
std::vector<std::int32_t> next_token_targets(const Batch& batch);

}  // namespace headwise::train
