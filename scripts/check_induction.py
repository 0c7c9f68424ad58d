"""An independent check of a `headwise train` checkpoint, in PyTorch.

The pinned architecture written again with torch.nn modules (nn.Embedding, nn.LayerNorm,
nn.MultiheadAttention without biases, a causal mask), the checkpoint read with json + numpy,
and the circuit measured on fresh repeated sequences drawn by numpy, not by headwise:

  python3 scripts/check-induction model.safetensors            # the four figures, exit 1 if one misses
  python3 scripts/check-induction model.safetensors --logits tokens.npy logits.npy
                                                               # headwise's logits reproduced (<= 1e-4)
Exit 77 (skipped) when numpy or torch is not installed (a test runs this where they are).
"""
import argparse
import json
import math
import struct
import sys

# Both optional (Debian's python3-numpy and python3-torch): without either, exit 77 (ctest:
# skipped) with one line naming what is missing, before anything imports them.
try:
    import numpy as np
    import torch
    from torch import nn
except ImportError as e:
    print(f"skipped: check-induction needs {e.name or 'numpy and torch'}, which {sys.executable} cannot import "
          "(apt-get install python3-numpy python3-torch)")
    sys.exit(77)


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, t in header.items():
        assert t["dtype"] == "F32", name
        begin, end = t["data_offsets"]
        tensors[name] = torch.from_numpy(np.frombuffer(data[begin:end], dtype="<f4").reshape(t["shape"]).copy())
    return meta, tensors


class Layer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, bias=False, batch_first=True)


class Model(nn.Module):
    """x = embed[token] + pos_embed[position]; x = x + MHA(LN(x)) per layer (causal); logits = LN_f(x) unembed^T."""

    def __init__(self, vocab, context, d, heads, layers):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos_embed = nn.Embedding(context, d)
        self.layers = nn.ModuleList(Layer(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.unembed = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):  # tokens (B, N) -> logits (B, N, V), weights [L] of (B, H, N, N)
        n = tokens.shape[1]
        x = self.embed(tokens) + self.pos_embed(torch.arange(n))
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)  # True = masked (future)
        weights = []
        for layer in self.layers:
            y = layer.ln(x)
            out, w = layer.attn(y, y, y, attn_mask=mask, need_weights=True, average_attn_weights=False)
            x = x + out
            weights.append(w)
        return self.unembed(self.ln_f(x)), weights


def load(path):
    meta, tensors = read_safetensors(path)
    vocab, d = tensors["embed.weight"].shape
    model = Model(vocab, int(meta["context"]), d, int(meta["heads"]), int(meta["layers"]))
    model.load_state_dict(tensors, strict=True)  # every name and shape must match
    return model.eval()


def repeated_sequences(rng, batch, n, vocab):
    """N random tokens; a segment of length 4..N/2 appears again at a random later place."""
    tokens = rng.integers(0, vocab, size=(batch, n))
    repeats = []
    for b in range(batch):
        length = int(rng.integers(4, n // 2 + 1))
        first = int(rng.integers(0, n - 2 * length + 1))
        second = int(rng.integers(first + length, n - length + 1))
        tokens[b, second:second + length] = tokens[b, first:first + length]
        repeats.append((first, second, length))
    return torch.from_numpy(tokens), repeats


def measure(model, tokens, repeats):
    with torch.no_grad():
        logits, weights = model(tokens)
    logp = torch.log_softmax(logits.double(), dim=-1)
    copy = []
    for b, (first, second, length) in enumerate(repeats):
        for i in range(length - 1):  # predict token second+i+1 from position second+i
            copy.append(-logp[b, second + i, tokens[b, second + i + 1]].item())
    n = tokens.shape[1]
    prev = [w[:, :, torch.arange(1, n), torch.arange(0, n - 1)].mean(dim=(0, 2)) for w in weights]
    last = weights[-1]
    ind = torch.zeros(last.shape[1])
    count = 0
    for b, (first, second, length) in enumerate(repeats):
        for i in range(length):
            ind += last[b, :, second + i, first + i + 1]
            count += 1
    return float(np.mean(copy)), prev, ind / count


def check_circuit(path, sequences, seed):
    model = load(path)
    vocab, context = model.embed.num_embeddings, model.pos_embed.num_embeddings
    tokens, repeats = repeated_sequences(np.random.default_rng(seed), sequences, context, vocab)
    copy, prev, ind = measure(model, tokens, repeats)
    head = int(torch.argmax(prev[0]))
    d_head = model.embed.embedding_dim // model.layers[0].attn.num_heads
    with torch.no_grad():  # zeroing a head's output = zeroing its columns of W_o
        model.layers[0].attn.out_proj.weight[:, head * d_head:(head + 1) * d_head] = 0
    ablated, _, _ = measure(model, tokens, repeats)
    ln_v = math.log(vocab)
    rows = [
        ("copy loss / ln V", copy / ln_v, "<=", 0.2),
        ("best last-layer induction score", float(ind.max()), ">=", 0.5),
        ("best layer-0 previous-token score (head %d)" % head, float(prev[0][head]), ">=", 0.5),
        ("copy loss / ln V without that head", ablated / ln_v, ">=", 0.5),
    ]
    ok = True
    print("%s on %d fresh sequences (PyTorch %s):" % (path, sequences, torch.__version__))
    for name, value, op, bound in rows:
        passed = value <= bound if op == "<=" else value >= bound
        ok &= passed
        print("  %-45s %.3f  (%s %.2f: %s)" % (name, value, op, bound, "ok" if passed else "MISSED"))
    return 0 if ok else 1


def check_logits(path, tokens_npy, logits_npy):
    model = load(path)
    tokens = torch.from_numpy(np.load(tokens_npy).astype(np.int64))
    expected = torch.from_numpy(np.load(logits_npy))
    with torch.no_grad():
        logits, _ = model(tokens)
    diff = float((logits - expected).abs().max())
    print("largest |PyTorch - headwise| over the logits %s: %.2e" % (tuple(logits.shape), diff))
    return 0 if diff <= 1e-4 else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint")
    p.add_argument("--sequences", type=int, default=1024)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--logits", nargs=2, metavar=("TOKENS_NPY", "LOGITS_NPY"))
    a = p.parse_args()
    torch.set_num_threads(2)
    if a.logits:
        return check_logits(a.checkpoint, *a.logits)
    return check_circuit(a.checkpoint, a.sequences, a.seed)


if __name__ == "__main__":
    sys.exit(main())
