"""Speed peers for lesson 12's decoder (SmolLM2-135M-Instruct, Q4_1 GGUF): llama.cpp and PyTorch eager.
Optional: never needed to build or test headwise. Prints one JSON object on stdout (progress on stderr),
so that `./headwise bench` can print these rows beside its own from the same run.

    scripts/install-bench-peers --llama-cpp      # builds llama-cpp-python from source into a venv, once
    python3 scripts/bench_decode_peers.py [--threads 2] [--gguf PATH] [--skip-torch] [--skip-llama]

If `llama_cpp` cannot be imported, the script re-runs itself under the first of $HEADWISE_LLAMA_VENV,
${XDG_CACHE_HOME:-~/.cache}/headwise/llama-venv and /opt/llama-venv that exists. That venv sees the
system's torch and numpy (--system-site-packages: Debian's python3-torch 1.13), and has gguf==0.17.1 for
the PyTorch peer, which is scripts/smollm2_reference.py's forward pass in float32 (weights dequantized by
gguf.quants.dequantize) with a KV cache. Run it as
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 scripts/bench_decode_peers.py

What is measured, each with the same number of threads (default 2):
  decode:  greedy (argmax of the logits), 128 tokens after a short prompt (the reference's "plain"
           prompt), one token per call. llama.cpp: tokens/s from its own counters (llama_perf_context:
           n_eval / t_eval_ms) and from the wall clock of the loop (Python's argmax included); PyTorch:
           wall clock of the 128 steps.
  prompt:  the first 512 tokens of tests/fixtures/smollm2/text_long.txt in one call (llama.cpp: n_batch =
           n_ubatch = 512, only the last row's logits; its n_p_eval / t_p_eval_ms. PyTorch: one forward
           over 512 positions filling the cache, only the last row's logits).
  Each figure is the best of --repeats (3) runs after an untimed warm-up; the machine's load average
  before and after is recorded, since a shared machine's other work slows every peer.
  quality: the mean log-likelihood per token of all of text_long.txt under llama.cpp (logits_all=True),
           beside the reference's value from reference_prompts.json; whether llama.cpp's tokenizer
           gives the fixture's ids; how llama.cpp's logits and greedy tokens compare with the reference's.
"""
import argparse
import json
import os
import pathlib
import platform
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "smollm2"
N_DECODE = 128
N_PROMPT = 512


def _maybe_reexec():
    try:
        import llama_cpp  # noqa: F401
        return
    except ImportError:
        pass
    if os.environ.get("HEADWISE_PEERS_REEXEC"):
        return
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    for venv in (os.environ.get("HEADWISE_LLAMA_VENV"), os.path.join(cache, "headwise", "llama-venv"),
                 "/opt/llama-venv"):
        if venv and os.path.exists(os.path.join(venv, "bin", "python3")):
            os.environ["HEADWISE_PEERS_REEXEC"] = "1"
            py = os.path.join(venv, "bin", "python3")
            os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def cpu_model():
    """'model name' of /proc/cpuinfo, with its family/model numbers and the SIMD extensions that matter."""
    info = {}
    try:
        for line in open("/proc/cpuinfo"):
            if ":" in line:
                k, v = (x.strip() for x in line.split(":", 1))
                info.setdefault(k, v)
    except OSError:
        return platform.processor() or platform.machine()
    simd = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16") if f in info.get("flags", "").split()]
    return f"{info.get('model name', '?')} (family {info.get('cpu family', '?')} model {info.get('model', '?')}; " \
           f"{' '.join(simd)})"


def bench_llama(path, threads, ids_short, ids_long, ref, repeats):
    import numpy as np
    import llama_cpp
    from llama_cpp import Llama
    out = {"version": llama_cpp.__version__, "threads": threads}

    llm = Llama(model_path=path, n_ctx=1024, n_batch=N_PROMPT, n_ubatch=N_PROMPT, n_threads=threads,
                n_threads_batch=threads, logits_all=False, verbose=False)
    ctx = llm._ctx.ctx
    vocab = llm.n_vocab()

    # Tokenizer agreement with the fixture's ids (HF tokenizers built from the same GGUF).
    agree = all(llm.tokenize(p["text"].encode("utf-8"), add_bos=False, special=True) == p["ids"]
                for p in ref["prompts"] if p["name"] != "repeat")
    text = (FIX / "text_long.txt").read_text(encoding="utf-8")
    agree = agree and llm.tokenize(text.encode("utf-8"), add_bos=False, special=True) == ids_long
    out["tokenizer_matches_fixture_ids"] = bool(agree)

    def last_logits():
        return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, -1), shape=(vocab,))

    # Warm-up (first touches of the mapped weights), not timed.
    llm.reset()
    llm.eval(ids_long[:N_PROMPT])
    llama_cpp.llama_synchronize(ctx)

    # Decode: greedy, one token per call. llama.cpp counts a call's time when the context synchronizes
    # (reading logits does it), hence the explicit synchronize after the last one.
    best = None
    for r in range(repeats + 1):
        llm.reset()
        llm.eval(ids_short)
        llama_cpp.llama_synchronize(ctx)
        llama_cpp.llama_perf_context_reset(ctx)
        gen = []
        t0 = time.perf_counter()
        for _ in range(N_DECODE):
            t = int(np.argmax(last_logits()))
            gen.append(t)
            llm.eval([t])
        llama_cpp.llama_synchronize(ctx)
        wall = time.perf_counter() - t0
        if r == 0:
            continue   # warm-up
        perf = llama_cpp.llama_perf_context(ctx)
        own = perf.n_eval / (perf.t_eval_ms / 1e3) if perf.t_eval_ms > 0 else None
        log(f"llama.cpp decode run {r}: {N_DECODE / wall:.1f} tok/s wall, {own:.1f} tok/s own ({perf.n_eval} evals)")
        if best is None or wall < best[0]:
            best = (wall, own, gen)
    out["decode_tokens"] = N_DECODE
    out["decode_tokens_per_s"] = round(best[1], 2)
    out["decode_wall_tokens_per_s"] = round(N_DECODE / best[0], 2)
    plain = next(p for p in ref["prompts"] if p["name"] == "plain")
    gen = best[2][:len(plain["greedy_ids"])]
    same = next((i for i, (a, b) in enumerate(zip(gen, plain["greedy_ids"])) if a != b), len(gen))
    out["greedy_prefix_matching_reference"] = same

    # Prompt processing: 512 tokens in one call.
    rates = []
    for r in range(repeats):
        llm.reset()
        llama_cpp.llama_perf_context_reset(ctx)
        llm.eval(ids_long[:N_PROMPT])
        llama_cpp.llama_synchronize(ctx)
        perf = llama_cpp.llama_perf_context(ctx)
        rates.append(perf.n_p_eval / (perf.t_p_eval_ms / 1e3))
        log(f"llama.cpp prompt run {r}: {rates[-1]:.1f} tok/s ({perf.n_p_eval} tokens)")
    out["prompt_tokens"] = N_PROMPT
    out["prompt_tokens_per_s"] = round(max(rates), 2)
    llm.close() if hasattr(llm, "close") else None
    del llm

    # Quality: every position's logits.
    llm = Llama(model_path=path, n_ctx=1024, n_batch=N_PROMPT, n_ubatch=N_PROMPT, n_threads=threads,
                n_threads_batch=threads, logits_all=True, verbose=False)

    def all_logits(ids):
        llm.reset()
        llm.eval(ids)
        return np.array(llm.scores[:len(ids)], dtype=np.float64)

    lg = all_logits(ids_long)
    lse = np.log(np.exp(lg - lg.max(1, keepdims=True)).sum(1)) + lg.max(1)
    lp = lg[np.arange(len(ids_long) - 1), ids_long[1:]] - lse[:-1]
    out["mean_log_likelihood"] = round(float(lp.mean()), 6)
    worst, agree_n, total = 0.0, 0, 0
    for p in ref["prompts"]:
        rl = np.load(FIX / p["logits"]).astype(np.float64)
        ll = all_logits(p["ids"])
        worst = max(worst, float(np.abs(ll - rl).max()))
        agree_n += int((ll.argmax(1) == rl.argmax(1)).sum())
        total += len(p["ids"])
    out["prompt_logits_max_abs_diff_vs_reference"] = round(worst, 4)
    out["prompt_argmax_agree_with_reference"] = f"{agree_n}/{total}"
    del llm
    return out


def bench_torch(path, threads, ids_short, ids_long, repeats):
    import torch
    sys.path.insert(0, str(ROOT / "scripts"))
    import smollm2_reference as refmod
    torch.set_num_threads(threads)
    out = {"version": torch.__version__.split("+")[0], "threads": torch.get_num_threads(), "dtype": "float32"}
    model = refmod.SmolLM2(path, dtype=torch.float32, rope="pairs")
    with torch.no_grad():
        model.forward(ids_long[:64], cache=[], last_only=True)   # warm-up, not timed
        best = None
        for r in range(repeats):
            cache = []
            logits = model.forward(ids_short, cache=cache, last_only=True)[-1]
            pos = len(ids_short)
            t0 = time.perf_counter()
            for _ in range(N_DECODE):
                t = int(torch.argmax(logits))
                logits = model.forward([t], cache=cache, pos0=pos)[-1]
                pos += 1
            wall = time.perf_counter() - t0
            log(f"pytorch decode run {r}: {N_DECODE / wall:.1f} tok/s")
            best = wall if best is None else min(best, wall)
        out["decode_tokens"] = N_DECODE
        out["decode_tokens_per_s"] = round(N_DECODE / best, 2)
        best = None
        for r in range(repeats):
            t0 = time.perf_counter()
            model.forward(ids_long[:N_PROMPT], cache=[], last_only=True)
            wall = time.perf_counter() - t0
            log(f"pytorch prompt run {r}: {N_PROMPT / wall:.1f} tok/s")
            best = wall if best is None else min(best, wall)
        out["prompt_tokens"] = N_PROMPT
        out["prompt_tokens_per_s"] = round(N_PROMPT / best, 2)
    return out


def main():
    _maybe_reexec()
    sys.path.insert(0, str(ROOT / "scripts"))
    from smollm2_reference import DEFAULT_GGUF
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--gguf", default=DEFAULT_GGUF)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--skip-llama", action="store_true")
    a = ap.parse_args()
    ref = json.loads((FIX / "reference_prompts.json").read_text(encoding="utf-8"))
    ids_short = next(p for p in ref["prompts"] if p["name"] == "plain")["ids"]
    ids_long = ref["text_long"].get("ids")
    if ids_long is None:   # the fixture stores the count; the ids come from the same tokenizer
        from smollm2_reference import gguf_tokenizer
        ids_long = gguf_tokenizer(a.gguf).encode((FIX / "text_long.txt").read_text(encoding="utf-8")).ids
    assert len(ids_long) == ref["text_long"]["n_tokens"] and len(ids_long) >= N_PROMPT
    result = {
        "model": os.path.basename(a.gguf),
        "cpu": cpu_model(),
        "threads": a.threads,
        "env_OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
        "reference_mean_log_likelihood": ref["text_long"]["mean_log_likelihood"],
        "text_long_tokens": len(ids_long),
        "loadavg_before": [round(x, 2) for x in os.getloadavg()],
    }
    if not a.skip_llama:
        try:
            result["llama_cpp"] = bench_llama(a.gguf, a.threads, ids_short, ids_long, ref, a.repeats)
        except ImportError as e:
            result["llama_cpp"] = {"error": f"llama_cpp not importable: {e} (scripts/install-bench-peers --llama-cpp)"}
    if not a.skip_torch:
        result["pytorch_eager"] = bench_torch(a.gguf, a.threads, ids_short, ids_long, a.repeats)
    result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
