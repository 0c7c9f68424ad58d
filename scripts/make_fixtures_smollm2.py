"""Write the reference fixtures of lesson 12 (the SmolLM2-135M-Instruct decoder) into tests/fixtures/smollm2/.
Used only to make committed fixtures; never needed to build or test headwise.

    apt-get install -y python3-torch python3-numpy                 # Debian bookworm: torch 1.13, numpy 1.24
    /usr/bin/python3 -m venv --system-site-packages /opt/hw-ref-venv
    /opt/hw-ref-venv/bin/pip install gguf==0.17.1 transformers==4.44.2    # (tokenizers 0.19.1 comes with it)
    /opt/hw-ref-venv/bin/python scripts/make_fixtures_smollm2.py [--crosscheck] [path/to/...Q4_1.gguf]

The model is scripts/smollm2_reference.py: every tensor dequantized by gguf.quants.dequantize, a plain
Llama forward pass written there, in float64 (logits stored as float32). Re-running gives the same bytes.

Files (all new ones start with reference_ or text_):
  reference_prompts.json   {"model", "made_by", "notes", "prompts": [...], "text_long": {...}}
      each prompt: "name", "text", "ids" (the prompt's token ids; no BOS: the GGUF's add_bos_token is
      false), "tokens", "logits" (file name), "logits_rows" (= len(ids): row i is the logits after
      ids[0..i]), "greedy_ids" / "greedy_text" (32 greedy tokens after the prompt, argmax of float64
      logits, the prompt and the tokens generated so far recomputed without a cache at each step),
      "greedy_margins" (top-1 minus top-2 logit at each step: a step with a small margin is where a
      float32 implementation may legitimately pick the other token).
      "text_long": {"file", "n_tokens", "mean_log_likelihood", "ids"}: mean_log_likelihood is the mean
      over i >= 1 of log p(ids[i] | ids[0..i-1]) for all of text_long.txt's ids (no BOS), in float64.
  reference_logits_<k>.npy (len(ids_k), 49152) float32: every prompt position's logits.
  text_long.txt            original English prose about attention (written for this course), >= 600 tokens.

Token ids come from Hugging Face `tokenizers` built from the GGUF's own tokens and merges with SmolLM2's
pre-tokenizer Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False, use_regex=True)],
its ByteLevel decoder and its control tokens as special tokens (smollm2_reference.gguf_tokenizer).

Checks made on every run (assertions): the two right RoPE layouts (adjacent pairs on the GGUF rows, and
rotate_half on the rows un-permuted to HF's layout) give the same logits to 1e-9; greedy decoding with a
KV cache gives the same tokens as without. --crosscheck also loads the model through transformers
4.44.2's own GGUF loader (its dequantization, its un-permutation, LlamaForCausalLM) and prints how far
each RoPE layout of the reference is from it (the right ones ~1e-4, the wrong ones O(1..10)).
"""
import importlib.metadata
import json
import pathlib
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import smollm2_reference as ref  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "smollm2"
N_GREEDY = 32


def random_ids():
    """Induction-style prompt: 4 ids drawn with a fixed seed from ordinary tokens, repeated twice."""
    rng = np.random.RandomState(12)
    base = [int(i) for i in rng.randint(1000, 40000, size=4)]
    return base + base


PROMPTS = [
    ("plain", "The capital of France is"),
    ("code", "def add(a, b):\n    return"),
    ("chat", "<|im_start|>user\nWhat is attention?<|im_end|>\n<|im_start|>assistant\n"),
    ("repeat", None),   # ids from random_ids(); text is their decoding
]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    crosscheck = "--crosscheck" in sys.argv
    path = args[0] if args else ref.DEFAULT_GGUF
    torch.set_num_threads(2)
    OUT.mkdir(parents=True, exist_ok=True)

    model = ref.SmolLM2(path, dtype=torch.float64, rope="pairs")
    tok = ref.gguf_tokenizer(reader=model.reader)

    prompts = []
    for name, text in PROMPTS:
        if text is None:
            ids = random_ids()
            text = tok.decode(ids, skip_special_tokens=False)
        else:
            ids = tok.encode(text).ids
        prompts.append((name, text, ids))
    assert sum(len(p[2]) for p in prompts) <= 36

    entries = []
    all_logits = []
    for k, (name, text, ids) in enumerate(prompts):
        logits = model.logits(ids)
        all_logits.append(logits)
        fname = f"reference_logits_{k}.npy"
        np.save(OUT / fname, logits.to(torch.float32).numpy())
        greedy, margins = model.greedy(ids, N_GREEDY)
        cached, _ = model.greedy(ids, N_GREEDY, use_cache=True)
        assert cached == greedy, (name, cached, greedy)
        entries.append({
            "name": name, "text": text, "ids": ids,
            "tokens": [tok.id_to_token(i) for i in ids],
            "logits": fname, "logits_rows": len(ids),
            "greedy_ids": greedy,
            "greedy_text": tok.decode(greedy, skip_special_tokens=False),
            "greedy_margins": [round(m, 4) for m in margins],
        })
        print(f"{name:7s} {len(ids):2d} ids -> {entries[-1]['greedy_text']!r} (min margin {min(margins):.3f})")

    long_text = (OUT / "text_long.txt").read_text(encoding="utf-8")
    long_ids = tok.encode(long_text).ids
    assert len(long_ids) >= 600
    mll = model.mean_log_likelihood(long_ids)
    print(f"text_long: {len(long_ids)} tokens, mean log-likelihood {mll:.6f} (perplexity {np.exp(-mll):.3f})")

    # The other right RoPE layout (rows un-permuted to HF's, rotate_half) must give the same function.
    del model
    half = ref.SmolLM2(path, dtype=torch.float64, rope="half")
    worst = max(float((half.logits(ids) - lg).abs().max()) for (_, _, ids), lg in zip(prompts, all_logits))
    print(f"rope pairs-on-GGUF-rows vs rotate_half-on-HF-rows: max |diff| {worst:.2e}")
    assert worst < 1e-9
    del half

    doc = {
        "model": pathlib.Path(path).name,
        "made_by": "scripts/make_fixtures_smollm2.py (scripts/smollm2_reference.py: gguf "
                   f"{importlib.metadata.version('gguf')} dequantize, tokenizers "
                   f"{importlib.metadata.version('tokenizers')}, torch {torch.__version__.split('+')[0]} "
                   "float64 forward)",
        "notes": "Logits are the float64 reference rounded to float32. No BOS token is prepended (the GGUF's "
                 "add_bos_token is false). greedy_* are 32 argmax steps after the prompt; greedy_margins is "
                 "the top-1 minus top-2 logit at each step. text_long.mean_log_likelihood is the mean over "
                 "i >= 1 of log p(ids[i] | ids[:i]) over all of text_long.txt's ids.",
        "prompts": entries,
        "text_long": {"file": "text_long.txt", "n_tokens": len(long_ids),
                      "mean_log_likelihood": round(mll, 6), "ids": long_ids},
    }
    (OUT / "reference_prompts.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n",
                                                encoding="utf-8")

    if crosscheck:
        print("cross-check against transformers' GGUF loader:")
        res = ref.crosscheck_transformers([ids for _, _, ids in prompts] + [long_ids[:128]], path)
        assert res["pairs"] < 1e-2 and res["half"] < 1e-2, res
        assert res["wrong-pairs-on-hf"] > 1.0 and res["wrong-half-on-gguf"] > 1.0, res


if __name__ == "__main__":
    main()
