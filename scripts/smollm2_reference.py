"""An independent PyTorch reference for SmolLM2-135M-Instruct read from its GGUF file (lesson 12).

Used only to make committed fixtures (scripts/make_fixtures_smollm2.py) and by the speed peers
(scripts/bench_decode_peers.py); never needed to build or test headwise.

Environment (outside the repository; nothing here is pip-installed into the system):
    apt-get install -y python3-torch python3-numpy        # Debian bookworm: torch 1.13, numpy 1.24
    /usr/bin/python3 -m venv --system-site-packages /opt/hw-ref-venv
    /opt/hw-ref-venv/bin/pip install gguf==0.17.1 transformers==4.44.2   # brings tokenizers 0.19.1
transformers is optional: only `crosscheck_transformers` (run by make_fixtures_smollm2.py --crosscheck)
uses it; the reference itself needs torch, numpy, gguf and tokenizers.

What the reference does
    * Every tensor is dequantized with the gguf package's own `gguf.quants.dequantize` (Q4_1 weights,
      the Q8_0 token embedding, F32 norms), giving float32 matrices of shape (rows, cols) = the GGUF
      dims reversed (GGUF lists dims fastest-first), so a projection is y = x @ W^T.
    * The forward pass is a plain Llama decoder written here, run in float64 (the float32 dequantized
      weights widened exactly) unless a dtype is given: embedding lookup; per block RMSNorm ->
      q, k, v -> RoPE -> causal grouped-query attention (query head h reads KV head h // 3) -> output
      projection -> residual -> RMSNorm -> SwiGLU down(silu(gate(x)) * up(x)) -> residual; final RMSNorm;
      logits = x @ token_embd^T (the output matrix is tied to the embedding: the GGUF has no output.weight).
    * RoPE layout. llama.cpp's convert script permutes the rows of attn_q / attn_k inside each head so
      that HF's half-split pairs (i, i + 32) become adjacent rows (2i, 2i + 1). `rope="pairs"` (default)
      rotates adjacent pairs (2i, 2i+1) of the GGUF rows directly, by angle pos * base^(-2i/64);
      `rope="half"` first un-permutes the rows back to HF's layout and uses rotate_half on (i, i + 32).
      Both are the same function (make_fixtures_smollm2.py asserts it); `rope="wrong-*"` variants pair the
      rows the other way, for the proof that only these two are right (see crosscheck_transformers).
    * RMSNorm eps is the GGUF's float32 value (9.99999975e-06), widened.
"""
import math
import os
import pathlib

import numpy as np
import torch

DEFAULT_GGUF = os.environ.get("HEADWISE_SMOLLM2_GGUF") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "headwise", "models",
    "SmolLM2-135M-Instruct", "SmolLM2-135M-Instruct.Q4_1.gguf")


def _field(reader, key):
    return reader.fields[key].contents()


class SmolLM2:
    """The GGUF's weights, dequantized, and a Llama forward pass over them."""

    def __init__(self, path=DEFAULT_GGUF, dtype=torch.float64, rope="pairs"):
        import gguf  # gguf==0.17.1
        reader = gguf.GGUFReader(path)
        self.path = path
        self.reader = reader
        self.dtype = dtype
        self.rope = rope
        assert _field(reader, "general.architecture") == "llama"
        self.n_layer = int(_field(reader, "llama.block_count"))
        self.d_model = int(_field(reader, "llama.embedding_length"))
        self.n_head = int(_field(reader, "llama.attention.head_count"))
        self.n_kv = int(_field(reader, "llama.attention.head_count_kv"))
        self.d_ff = int(_field(reader, "llama.feed_forward_length"))
        self.base = float(_field(reader, "llama.rope.freq_base"))
        self.eps = float(_field(reader, "llama.attention.layer_norm_rms_epsilon"))
        self.d_head = self.d_model // self.n_head
        self.raw = {}   # name -> float32 numpy array, rows x cols, exactly as gguf dequantizes it
        for t in reader.tensors:
            w = gguf.quants.dequantize(t.data, t.tensor_type)
            shape = tuple(int(s) for s in reversed(t.shape))   # GGUF dims are fastest-first
            self.raw[t.name] = np.array(w.reshape(shape), dtype=np.float32, order="C")  # a writable copy
        assert "output.weight" not in self.raw   # tied: logits use token_embd
        self.vocab = self.raw["token_embd.weight"].shape[0]
        self.w = {}
        for name, w in self.raw.items():
            if rope == "half" and (".attn_q." in name or ".attn_k." in name):
                heads = self.n_head if ".attn_q." in name else self.n_kv
                w = unpermute_rows(w, heads)
            self.w[name] = torch.from_numpy(w).to(dtype)
        half = self.d_head // 2
        self.inv_freq = 1.0 / (self.base ** (torch.arange(0, half, dtype=torch.float64) * 2.0 / self.d_head))

    # ---- pieces -------------------------------------------------------------------------------
    def rms_norm(self, x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * w

    def rotate(self, x, positions):
        """x: (heads, n, d_head); positions: (n,) absolute positions."""
        ang = positions.to(torch.float64)[:, None] * self.inv_freq[None, :]        # (n, d_head/2)
        cos, sin = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
        half = self.d_head // 2
        if self.rope in ("pairs", "wrong-half-on-gguf"):
            layout = "pairs" if self.rope == "pairs" else "half"
        else:
            layout = "half" if self.rope == "half" else "pairs"   # "wrong-pairs-on-hf" pairs HF rows
        if layout == "pairs":          # adjacent pairs (2i, 2i+1) share angle i
            a, b = x[..., 0::2], x[..., 1::2]
            out = torch.empty_like(x)
            out[..., 0::2] = a * cos - b * sin
            out[..., 1::2] = a * sin + b * cos
            return out
        a, b = x[..., :half], x[..., half:]   # rotate_half: pairs (i, i + half) share angle i
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)

    # ---- forward ------------------------------------------------------------------------------
    def forward(self, ids, cache=None, pos0=0, last_only=False):
        """Logits (n, vocab) for the token ids `ids` at positions pos0 .. pos0 + n - 1.

        cache: None (no cache: pos0 must be 0) or a list that is filled / extended with each layer's
        (K, V) of shape (n_kv, positions, d_head): prefill then decode one token at a time."""
        ids = torch.as_tensor(ids, dtype=torch.long)
        n = ids.shape[0]
        if cache is None:
            assert pos0 == 0
        positions = torch.arange(pos0, pos0 + n)
        W = self.w
        x = W["token_embd.weight"][ids]                                     # (n, d)
        total = pos0 + n
        mask = None
        if n > 1:
            kpos = torch.arange(total)
            mask = torch.zeros(n, total, dtype=x.dtype)
            mask.masked_fill_(kpos[None, :] > positions[:, None], float("-inf"))
        scale = 1.0 / math.sqrt(self.d_head)
        group = self.n_head // self.n_kv
        for l in range(self.n_layer):
            p = f"blk.{l}."
            h = self.rms_norm(x, W[p + "attn_norm.weight"])
            q = (h @ W[p + "attn_q.weight"].T).view(n, self.n_head, self.d_head).transpose(0, 1)
            k = (h @ W[p + "attn_k.weight"].T).view(n, self.n_kv, self.d_head).transpose(0, 1)
            v = (h @ W[p + "attn_v.weight"].T).view(n, self.n_kv, self.d_head).transpose(0, 1)
            q = self.rotate(q, positions)
            k = self.rotate(k, positions)
            if cache is not None:
                if len(cache) <= l:
                    cache.append((k, v))
                else:
                    k = torch.cat([cache[l][0], k], dim=1)
                    v = torch.cat([cache[l][1], v], dim=1)
                    cache[l] = (k, v)
            # Query head hq = j * group + g reads KV head j = hq // group: the group's queries are
            # stacked as rows of one product with that KV head's keys (no copies of K or V).
            qg = q.reshape(self.n_kv, group * n, self.d_head)                # rows (g, i) of KV head j
            s = (qg @ k.transpose(1, 2)) * scale                             # (n_kv, group * n, total)
            if mask is not None:
                s = (s.view(self.n_kv, group, n, total) + mask).view(self.n_kv, group * n, total)
            a = torch.softmax(s, dim=-1)
            o = (a @ v).view(self.n_head, n, self.d_head).transpose(0, 1).reshape(n, self.d_model)
            x = x + o @ W[p + "attn_output.weight"].T
            h = self.rms_norm(x, W[p + "ffn_norm.weight"])
            g = h @ W[p + "ffn_gate.weight"].T
            u = h @ W[p + "ffn_up.weight"].T
            x = x + (torch.nn.functional.silu(g) * u) @ W[p + "ffn_down.weight"].T
        if last_only:
            x = x[-1:]
        x = self.rms_norm(x, W["output_norm.weight"])
        return x @ W["token_embd.weight"].T

    @torch.no_grad()
    def logits(self, ids):
        return self.forward(ids)

    @torch.no_grad()
    def greedy(self, ids, n_new, use_cache=False):
        """Greedy continuation: (new ids, top-1 minus top-2 logit margin at each step)."""
        ids = list(ids)
        out, margins = [], []
        cache = [] if use_cache else None
        logits = self.forward(ids, cache=cache, last_only=True)[-1]
        for step in range(n_new):
            top2 = torch.topk(logits, 2)
            nxt = int(top2.indices[0])
            out.append(nxt)
            margins.append(float(top2.values[0] - top2.values[1]))
            if step + 1 == n_new:
                break
            if use_cache:
                logits = self.forward([nxt], cache=cache, pos0=len(ids) + len(out) - 1)[-1]
            else:
                logits = self.forward(ids + out, last_only=True)[-1]
        return out, margins

    @torch.no_grad()
    def mean_log_likelihood(self, ids):
        """Mean over i >= 1 of log p(ids[i] | ids[:i])."""
        lp = torch.log_softmax(self.forward(ids).to(torch.float64), dim=-1)
        t = torch.as_tensor(ids[1:], dtype=torch.long)
        return float(lp[:-1].gather(1, t[:, None]).mean())


def unpermute_rows(w, n_head):
    """Undo llama.cpp convert_hf_to_gguf's LlamaModel.permute on a (n_head * d_head, cols) matrix:
    GGUF row h*d + 2i + j  <-  HF row h*d + j*(d/2) + i   (j in {0, 1})."""
    rows = w.shape[0]
    d = rows // n_head
    return np.ascontiguousarray(w.reshape(n_head, d // 2, 2, -1).swapaxes(1, 2).reshape(w.shape))


# ---- tokenizer ---------------------------------------------------------------------------------
def gguf_tokenizer(path=DEFAULT_GGUF, reader=None):
    """HF `tokenizers` BPE built from the GGUF's tokens and merges, with SmolLM2's pre-tokenizer
    Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False, use_regex=True)],
    a ByteLevel decoder, no normalizer, no BOS added (tokenizer.ggml.add_bos_token is false), and
    every CONTROL token (token_type 3, e.g. <|im_start|>) registered as a special token."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    if reader is None:
        import gguf
        reader = gguf.GGUFReader(path)
    assert _field(reader, "tokenizer.ggml.model") == "gpt2"
    tokens = _field(reader, "tokenizer.ggml.tokens")
    types = _field(reader, "tokenizer.ggml.token_type")
    merges = [tuple(m.split(" ")) for m in _field(reader, "tokenizer.ggml.merges")]
    vocab = {t: i for i, t in enumerate(tokens)}
    assert len(vocab) == len(tokens)
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    tk.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    special = [AddedToken(tokens[i], special=True, normalized=False) for i, t in enumerate(types) if int(t) == 3]
    tk.add_special_tokens(special)
    return tk


# ---- the proof of the RoPE layout against transformers' own GGUF loader -------------------------
def _dequant_q4_1_numpy(data, n_bytes):
    """Q4_1, written from the block layout (independent of the gguf package): 32 weights per 20-byte
    block: f16 scale d, f16 minimum m, 16 bytes of nibbles; w[j] = d*lo(q[j]) + m, w[j+16] = d*hi(q[j]) + m."""
    b = np.frombuffer(np.asarray(data).tobytes(), dtype=np.uint8)[:n_bytes].reshape(-1, 20)
    d = b[:, 0:2].copy().view(np.float16).astype(np.float32)
    m = b[:, 2:4].copy().view(np.float16).astype(np.float32)
    q = b[:, 4:]
    lo = (q & 0x0F).astype(np.float32)
    hi = (q >> 4).astype(np.float32)
    return np.concatenate([d * lo + m, d * hi + m], axis=1).reshape(-1)


def transformers_model(path=DEFAULT_GGUF):
    """transformers 4.44.2's GGUF loader (it reads the config, dequantizes and un-permutes attn_q/attn_k
    itself, then LlamaForCausalLM with rotate_half RoPE). 4.44.2 has no Q4_1 kernel, so the loader's
    load_dequant_gguf_tensor is given one (_dequant_q4_1_numpy, not the gguf package's); its own Q8_0
    and F32 paths and its own reverse_permute_weights are used as they are."""
    import transformers.modeling_gguf_pytorch_utils as mgu
    from transformers import AutoModelForCausalLM
    orig = mgu.load_dequant_gguf_tensor

    def patched(shape, ggml_type, data, n_bytes):
        if ggml_type == 3:   # GGML_TYPE_Q4_1
            return _dequant_q4_1_numpy(data, n_bytes).reshape(shape[::-1])
        return orig(shape=shape, ggml_type=ggml_type, data=data, n_bytes=n_bytes)

    mgu.load_dequant_gguf_tensor = patched
    try:
        p = pathlib.Path(path)
        model = AutoModelForCausalLM.from_pretrained(str(p.parent), gguf_file=p.name,
                                                     tie_word_embeddings=True, torch_dtype=torch.float32)
    finally:
        mgu.load_dequant_gguf_tensor = orig
    model.eval()
    return model


@torch.no_grad()
def crosscheck_transformers(ids_list, path=DEFAULT_GGUF, log=print):
    """Compare the reference (both right layouts and both wrong ones) with transformers' GGUF model.
    Returns {layout: max |logit difference| over all prompts}."""
    hf = transformers_model(path)
    cfg = hf.config
    log(f"transformers config: layers {cfg.num_hidden_layers} heads {cfg.num_attention_heads}/"
        f"{cfg.num_key_value_heads} rope_theta {cfg.rope_theta} eps {cfg.rms_norm_eps} "
        f"tied {cfg.tie_word_embeddings}")
    hf_logits = [hf(torch.tensor([ids])).logits[0].to(torch.float64) for ids in ids_list]
    result = {}
    for rope in ("pairs", "half", "wrong-pairs-on-hf", "wrong-half-on-gguf"):
        ref = SmolLM2(path, rope=rope if rope in ("pairs", "half") else
                      ("half" if rope == "wrong-pairs-on-hf" else "pairs"))
        ref.rope = rope
        worst, agree, total = 0.0, 0, 0
        for ids, hl in zip(ids_list, hf_logits):
            rl = ref.logits(ids)
            worst = max(worst, float((rl - hl).abs().max()))
            agree += int((rl.argmax(-1) == hl.argmax(-1)).sum())
            total += len(ids)
        log(f"  rope={rope:20s} max|ref - transformers| = {worst:.3e}   argmax agree {agree}/{total}")
        result[rope] = worst
        del ref
    return result
