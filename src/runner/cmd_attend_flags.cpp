// runner/cmd_attend_flags.cpp -- `headwise attend`'s flags and help (cmd_attend.hpp).
#include "cmd_attend.hpp"
#include "common.hpp"

#include <CLI/CLI.hpp>

#include <memory>

namespace headwise::runner {

void add_attend_command(CLI::App& app, Action& action) {
    auto a = std::make_shared<AttendArgs>();
    auto* cmd = app.add_subcommand(
        "attend",
        "multi-head attention on .npy arrays, with torch.nn.MultiheadAttention(batch_first=True) conventions");
    cmd->footer(
        "Example (self-attention, 4 heads):\n"
        "  ./headwise attend --query x.npy --heads 4 --in-proj-weight w_in.npy --out-proj-weight w_o.npy \\\n"
        "                    --output y.npy --weights a.npy\n"
        "Grouped-query attention (H_kv key/value heads shared by H query heads, H_kv dividing H): add\n"
        "  --kv-heads H_kv, with in_proj_weight (H*d_head + 2*H_kv*d_head, d_model) = [W_q; W_k; W_v];\n"
        "  query head h reads K/V head h / (H / H_kv) (PyTorch: repeat_interleave K, V over the head axis).\n"
        "Positions: --rope rotates q and k (half-split pairs as in Hugging Face's Llama, or --rope-layout\n"
        "  interleaved), token n at position --positions-from + n; --alibi adds -slope_h |i - j| to the scores.\n"
        "Gradients: --grad-output dY.npy --grads DIR writes the backward of the loss sum(output * dY):\n"
        "  one .npy per input that has a gradient, named after its flag (query.npy, in_proj_weight.npy, ...).\n"
        "Inputs may be float32 or float64 (C or Fortran order); outputs are float32.\n");
    cmd->add_option("--query", a->query, "query (B, N_q, d_model) .npy")->required();
    auto* key = cmd->add_option("--key", a->key, "key (B, N_k, d_model) .npy; omit key and value for self-attention");
    auto* value = cmd->add_option("--value", a->value, "value (B, N_k, d_model) .npy");
    key->needs(value);
    value->needs(key);
    cmd->add_option("--heads", a->heads, "number of heads H (d_model must be divisible by H)")
        ->required()
        ->check(CLI::Range(1LL, 1LL << 20));
    cmd->add_option("--kv-heads", a->kv_heads,
                    "key/value heads H_kv for grouped-query attention (must divide H; 1 = multi-query)")
        ->check(CLI::Range(1LL, 1LL << 20));
    cmd->add_option("--in-proj-weight", a->in_proj_weight,
                    "in_proj_weight (3 * d_model, d_model): [W_q; W_k; W_v]; with --kv-heads (H*d_head + "
                    "2*H_kv*d_head, d_model)")
        ->required();
    cmd->add_option("--in-proj-bias", a->in_proj_bias,
                    "in_proj_bias (3 * d_model, or H*d_head + 2*H_kv*d_head); omitted = no bias");
    cmd->add_option("--out-proj-weight", a->out_proj_weight, "out_proj.weight (d_model, d_model): W_o")->required();
    cmd->add_option("--out-proj-bias", a->out_proj_bias, "out_proj.bias (d_model); omitted = no bias");
    cmd->add_flag("--causal", a->causal, "query i attends to keys 0..i only (attn_mask = triu(ones, 1))");
    cmd->add_option("--key-padding-mask", a->key_padding_mask,
                    "key_padding_mask (B, N_k) bool .npy, True = ignore that key");
    auto* rope =
        cmd->add_flag("--rope", a->rope, "rotary position embeddings on q and k (RoPE, after the projections)");
    cmd->add_option("--rope-base", a->rope_base, "RoPE base (> 1): 10000 as in Llama 2, 500000 as in Llama 3")
        ->needs(rope)
        ->capture_default_str();
    cmd->add_option("--rope-layout", a->rope_layout,
                    "RoPE pairs: half = (i, i + d_head/2) as in HF Llama/GPT-NeoX, interleaved = (2i, 2i+1) as in "
                    "RoFormer/GPT-J")
        ->check(CLI::IsMember({"half", "interleaved"}))
        ->needs(rope)
        ->capture_default_str();
    cmd->add_option("--positions-from", a->positions_from,
                    "RoPE position of the first token (the tokens before it in a KV cache)")
        ->check(CLI::Range(0LL, 1LL << 40))
        ->needs(rope);
    cmd->add_flag("--alibi", a->alibi, "ALiBi: add -slope_h |i - j| to head h's scores (slopes 2^(-8h/H))");
    cmd->add_option("--output", a->output, "where to write the output (B, N_q, d_model), float32")->required();
    auto* weights = cmd->add_option("--weights", a->weights, "also write the attention weights (B, H, N_q, N_k)");
    cmd->add_flag("--average-weights", a->average_weights, "write weights averaged over heads: (B, N_q, N_k)")
        ->needs(weights);
    auto* grad_output =
        cmd->add_option("--grad-output", a->grad_output,
                        "dY (B, N_q, d_model) .npy: the loss's gradient with respect to the output; with --grads");
    auto* grads = cmd->add_option("--grads", a->grads,
                                  "write into DIR PyTorch's .grad of every input (query.npy, key.npy, value.npy, "
                                  "in_proj_weight.npy, ...), float32, each in its input's shape")
                      ->type_name("DIR");
    grads->needs(grad_output);
    grad_output->needs(grads);
    cmd->callback([&action, a] { action = [a] { return run_attend(*a); }; });
}

}  // namespace headwise::runner
