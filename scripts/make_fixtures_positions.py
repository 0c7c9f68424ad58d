"""Regenerate tests/fixtures/positions/ (re-runnable, deterministic). Run through scripts/make-fixtures-positions.

tests/fixtures/positions/rope_<case>/ -- q.npy and k.npy (B, H, N, d_head), float32, and their rotations at
positions first_position .. first_position + N - 1 (times position_scale):
  q_half.npy, k_half.npy                Hugging Face's Llama: LlamaRotaryEmbedding's frequencies and
                                        apply_rotary_pos_emb (rotate_half: pairs (i, i + d_head/2))
  q_interleaved.npy, k_interleaved.npy  the RoFormer / original Llama layout, written here by hand as a
                                        complex product: pairs (2i, 2i + 1) read as x_2i + i x_2i+1

tests/fixtures/positions/attend_<case>/ -- `headwise attend --rope/--alibi` cases: the inputs as in
tests/fixtures/gqa (query.npy, in_proj_weight (H*d_head + 2*H_kv*d_head, d_model), ...) and the answer
(output.npy (B, N, d_model), weights.npy (B, H, N, N)), attention written out in torch.

The manifest also holds the ALiBi slopes for H = 6, 8, 12, 16 from the rule of the ALiBi paper's code
(get_slopes: 2^(-8h/H) for a power of two, else the closest power of two's slopes plus every other slope
of twice that).

Precision: LlamaRotaryEmbedding.forward computes its angles in float32 on purpose (transformers PR 29285);
at position 1000 that alone moves a rotated value by ~1e-4. The fixtures take the frequencies and the
cos/sin layout that transformers defines (checked against its float32 output, the largest difference
recorded in the manifest) but evaluate the angles in float64, so that they test the formula, not float32
rounding; apply_rotary_pos_emb itself then runs in float64. Everything runs in float64 on the stored float32
inputs; the answers are stored as float32.
"""
import json
import math
import pathlib
import shutil
import sys

try:
    import numpy as np
    import torch
    import transformers
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb
except ImportError as e:
    sys.exit(f"make-fixtures-positions: {e.name} is missing: run it through scripts/make-fixtures-positions")

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "positions"

ROPE_CASES = [
    dict(name="rope_n8_d8_base1e4_from0", batch=1, heads=2, n=8, d_head=8, base=10000.0, first=0, scale=1.0),
    dict(name="rope_n16_d64_base1e4_from37", batch=2, heads=3, n=16, d_head=64, base=10000.0, first=37, scale=1.0),
    dict(name="rope_n12_d128_base5e5_from1000", batch=1, heads=2, n=12, d_head=128, base=500000.0, first=1000,
         scale=1.0),
    dict(name="rope_n10_d32_base1e4_from5_interp4", batch=2, heads=2, n=10, d_head=32, base=10000.0, first=5,
         scale=0.25),
    dict(name="rope_n6_d16_base100_from3", batch=1, heads=4, n=6, d_head=16, base=100.0, first=3, scale=1.0),
]

# rope: (layout, base, positions_from) or None; kv_heads None = multi-head.
ATTEND_CASES = [
    dict(name="attend_rope_half_causal_d32_h4", batch=2, n=7, d_model=32, heads=4, kv_heads=None,
         rope=("half", 10000.0, 0), alibi=False, causal=True),
    dict(name="attend_rope_interleaved_from100_gqa_d32_h4_kv2", batch=2, n=6, d_model=32, heads=4, kv_heads=2,
         rope=("interleaved", 500000.0, 100), alibi=False, causal=True),
    dict(name="attend_rope_half_from5_bidirectional_d24_h2", batch=1, n=5, d_model=24, heads=2, kv_heads=None,
         rope=("half", 10000.0, 5), alibi=False, causal=False),
    dict(name="attend_alibi_causal_d48_h6", batch=2, n=6, d_model=48, heads=6, kv_heads=None, rope=None, alibi=True,
         causal=True),
    dict(name="attend_alibi_bidirectional_d32_h4", batch=1, n=5, d_model=32, heads=4, kv_heads=None, rope=None,
         alibi=True, causal=False),
    dict(name="attend_rope_alibi_gqa_d64_h8_kv2", batch=2, n=9, d_model=64, heads=8, kv_heads=2,
         rope=("half", 10000.0, 3), alibi=True, causal=True),
]


def save(path, array):
    np.save(path, np.ascontiguousarray(array), allow_pickle=False)


def alibi_slopes(n):
    """The ALiBi paper's rule, as its code states it."""
    def power_of_two(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_two(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_two(closest) + alibi_slopes(2 * closest)[0::2][:n - closest]


def llama_cos_sin(d_head, base, scale, positions, batch):
    """cos, sin (B, N, d_head) for Llama's rotate_half layout: transformers' frequencies, angles in float64.

    Returns them with the largest difference from LlamaRotaryEmbedding's own (float32) output."""
    rope_scaling = None if scale == 1.0 else {"rope_type": "linear", "factor": 1.0 / scale}
    config = LlamaConfig(hidden_size=d_head * 2, num_attention_heads=2, rope_theta=base,
                         max_position_embeddings=4096, rope_scaling=rope_scaling)
    rotary = LlamaRotaryEmbedding(config=config)
    position_ids = torch.tensor(positions, dtype=torch.int64)[None, :].expand(batch, -1)
    cos32, sin32 = rotary(torch.zeros(1, dtype=torch.float64), position_ids)
    # The same definition in float64: theta_i = base^(-2i/d_head), linear scaling divides it by the factor,
    # emb = cat(freqs, freqs) over the last axis.
    inv_freq = 1.0 / (base ** (torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)) * scale
    freqs = position_ids[:, :, None].double() * inv_freq[None, None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    drift = max((cos - cos32).abs().max().item(), (sin - sin32).abs().max().item())
    if drift > 1e-3:
        sys.exit(f"make-fixtures-positions: transformers' rotary embedding disagrees with the formula by {drift}")
    return cos, sin, drift


def interleaved_rope(x, d_head, base, scale, positions):
    """Pairs (2i, 2i + 1) as complex numbers times e^(i p theta_i), like Meta's original Llama code."""
    theta = 1.0 / (base ** (torch.arange(0, d_head, 2, dtype=torch.float64) / d_head))
    angles = torch.tensor(positions, dtype=torch.float64)[:, None] * scale * theta[None, :]  # (N, d_head / 2)
    rotation = torch.polar(torch.ones_like(angles), angles)
    pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], d_head // 2, 2).contiguous())
    return torch.view_as_real(pairs * rotation).reshape(x.shape)


def half_to_interleaved(d_head):
    return [j for i in range(d_head // 2) for j in (i, i + d_head // 2)]


def make_rope_case(seed, c):
    torch.manual_seed(seed)
    shape = (c["batch"], c["heads"], c["n"], c["d_head"])
    stored = {"q": torch.randn(*shape).numpy(), "k": torch.randn(*shape).numpy()}
    q, k = (torch.from_numpy(stored[n].astype(np.float64)) for n in ("q", "k"))
    positions = list(range(c["first"], c["first"] + c["n"]))
    cos, sin, drift = llama_cos_sin(c["d_head"], c["base"], c["scale"], positions, c["batch"])
    q_half, k_half = apply_rotary_pos_emb(q, k, cos, sin)  # unsqueeze_dim=1: (B, 1, N, d_head) over the heads
    q_inter = interleaved_rope(q, c["d_head"], c["base"], c["scale"], positions)
    k_inter = interleaved_rope(k, c["d_head"], c["base"], c["scale"], positions)
    # The two layouts are one permutation of the dimensions apart.
    perm = half_to_interleaved(c["d_head"])
    if not torch.allclose(interleaved_rope(q[..., perm], c["d_head"], c["base"], c["scale"], positions),
                          q_half[..., perm], atol=1e-12):
        sys.exit(f"make-fixtures-positions: {c['name']}: the layouts are not one permutation apart")
    folder = OUT / c["name"]
    folder.mkdir(parents=True)
    for name, array in stored.items():
        save(folder / f"{name}.npy", array)
    for name, t in (("q_half", q_half), ("k_half", k_half), ("q_interleaved", q_inter), ("k_interleaved", k_inter)):
        save(folder / f"{name}.npy", t.numpy().astype(np.float32))
    return {"name": c["name"], "batch": c["batch"], "heads": c["heads"], "n": c["n"], "d_head": c["d_head"],
            "base": c["base"], "first_position": c["first"], "position_scale": c["scale"],
            "llama_float32_angles_max_diff": drift,
            "inputs": {"q": "q.npy", "k": "k.npy"},
            "expected": {"q_half": "q_half.npy", "k_half": "k_half.npy", "q_interleaved": "q_interleaved.npy",
                         "k_interleaved": "k_interleaved.npy"}}


def random_params(d, heads, kv_heads):
    rows = d + 2 * kv_heads * (d // heads)
    bound = 1.0 / math.sqrt(d)
    p = {"in_proj_weight": torch.empty(rows, d).uniform_(-bound, bound) * math.sqrt(3.0),
         "in_proj_bias": torch.empty(rows).uniform_(-0.5, 0.5),
         "out_proj_weight": torch.empty(d, d).uniform_(-bound, bound),
         "out_proj_bias": torch.empty(d).uniform_(-0.5, 0.5)}
    return {k: v.numpy().astype(np.float32) for k, v in p.items()}


def attend(x, t, heads, kv_heads, rope, alibi, causal):
    """Self-attention with RoPE on q and k and/or the ALiBi bias. Returns output and weights (B, H, N, N)."""
    w, b, wo, bo = t["in_proj_weight"], t["in_proj_bias"], t["out_proj_weight"], t["out_proj_bias"]
    bsz, n, d = x.shape
    dh = d // heads
    kvw = kv_heads * dh
    q = (x @ w[:d].T + b[:d]).view(bsz, n, heads, dh).transpose(1, 2)                          # (B, H, N, d_head)
    k = (x @ w[d:d + kvw].T + b[d:d + kvw]).view(bsz, n, kv_heads, dh).transpose(1, 2)         # (B, H_kv, N, d_head)
    v = (x @ w[d + kvw:].T + b[d + kvw:]).view(bsz, n, kv_heads, dh).transpose(1, 2)
    if rope is not None:
        layout, base, first = rope
        positions = list(range(first, first + n))
        if layout == "half":
            cos, sin, _ = llama_cos_sin(dh, base, 1.0, positions, bsz)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
        else:
            q, k = interleaved_rope(q, dh, base, 1.0, positions), interleaved_rope(k, dh, base, 1.0, positions)
    k = k.repeat_interleave(heads // kv_heads, dim=1)
    v = v.repeat_interleave(heads // kv_heads, dim=1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(dh)  # (B, H, N, N)
    if alibi:
        distance = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).abs().double()  # |i - j|
        slopes = torch.tensor(alibi_slopes(heads), dtype=torch.float64)
        scores = scores - slopes[None, :, None, None] * distance[None, None]
    if causal:
        scores = scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = (weights @ v).transpose(1, 2).reshape(bsz, n, d) @ wo.T + bo
    return out, weights


def make_attend_case(seed, c):
    torch.manual_seed(seed)
    heads, kv_heads = c["heads"], c["kv_heads"] or c["heads"]
    stored = random_params(c["d_model"], heads, kv_heads)
    stored["query"] = torch.randn(c["batch"], c["n"], c["d_model"]).numpy()
    t = {k: torch.from_numpy(v.astype(np.float64)) for k, v in stored.items()}
    out, weights = attend(t["query"], t, heads, kv_heads, c["rope"], c["alibi"], c["causal"])
    folder = OUT / c["name"]
    folder.mkdir(parents=True)
    for name, array in stored.items():
        save(folder / f"{name}.npy", array)
    save(folder / "output.npy", out.numpy().astype(np.float32))
    save(folder / "weights.npy", weights.numpy().astype(np.float32))
    rope = None if c["rope"] is None else {"layout": c["rope"][0], "base": c["rope"][1], "positions_from": c["rope"][2]}
    return {"name": c["name"], "heads": heads, "kv_heads": c["kv_heads"], "d_model": c["d_model"], "batch": c["batch"],
            "query_len": c["n"], "causal": c["causal"], "rope": rope, "alibi": c["alibi"],
            "inputs": {name: f"{name}.npy" for name in stored},
            "expected": {"output": "output.npy", "weights": "weights.npy"}}


def main():
    torch.set_num_threads(1)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    rope = [make_rope_case(4000 + i, c) for i, c in enumerate(ROPE_CASES)]
    attend_cases = [make_attend_case(5000 + i, c) for i, c in enumerate(ATTEND_CASES)]
    manifest = {
        "_comment": "Written by scripts/make-fixtures-positions; do not edit. RoPE half-split from transformers' "
                    "Llama (rotary frequencies, apply_rotary_pos_emb), interleaved by hand as a complex product; "
                    "angles in float64 (see the script's docstring). ALiBi slopes from the ALiBi paper's rule.",
        "generator": "scripts/make-fixtures-positions",
        "torch_version": torch.__version__.split("+")[0],
        "transformers_version": transformers.__version__,
        "numpy_version": np.__version__,
        "alibi_slopes": {str(h): alibi_slopes(h) for h in (6, 8, 12, 16)},
        "rope_cases": rope,
        "attend_cases": attend_cases,
    }
    with open(OUT / "manifest.json", "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    print(f"make-fixtures-positions: wrote {len(rope)} RoPE cases and {len(attend_cases)} attend cases under "
          f"{OUT.relative_to(ROOT)}/")


if __name__ == "__main__":
    main()
