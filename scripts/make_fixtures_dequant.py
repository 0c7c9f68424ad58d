"""Writes tests/fixtures/smollm2/dequant_*: what the `gguf` Python package (llama.cpp's own, 0.17.1)
decodes from SmolLM2-135M-Instruct.Q4_1.gguf, for tests/quant_test.cpp to compare with.

    python3 -m venv --system-site-packages /tmp/gguf-venv
    /tmp/gguf-venv/bin/pip install gguf==0.17.1 numpy
    scripts/fetch-model --model smollm2
    /tmp/gguf-venv/bin/python scripts/make_fixtures_dequant.py

tests/fixtures/smollm2/dequant_manifest.json
    {"model": {file, bytes, sha256}, "gguf": version, "tensors": [{name, type, shape, rows, file}],
     "quantize": {input, q8_0, q4_1}}: which rows of which tensor each .npy holds. Shapes are
    PyTorch's order (GGUF's ne reversed), as headwise::gguf::TensorInfo gives them.
tests/fixtures/smollm2/dequant_<tensor>.npy   (len(rows), columns) float32: gguf.quants.dequantize
    of those rows of the tensor (Q4_1 attention and FFN weights, the Q8_0 embedding, F32 norms).
tests/fixtures/smollm2/dequant_quantize_*.npy (4, 64) float32: seeded random rows, and what they
    become after gguf.quants.quantize then dequantize to Q8_0 and Q4_1 (the package's quantizers are
    bit-exact ports of llama.cpp's reference ones): headwise's quantizers must give the same.
Only the tests read these; nothing in the build needs Python.
"""
import hashlib
import importlib.metadata
import json
import os
import pathlib
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "smollm2"
NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

# (tensor, rows): a few rows of each kind, first, middle and last rows included.
PICKS = [
    ("blk.0.attn_q.weight", [0, 100, 101, 102, 575]),           # Q4_1 (576, 576)
    ("blk.29.ffn_down.weight", [0, 575]),                       # Q4_1 (576, 1536): long rows
    ("blk.7.attn_k.weight", [191]),                             # Q4_1 (192, 576): grouped-query K
    ("token_embd.weight", [0, 1, 2, 12345, 49151]),             # Q8_0 (49152, 576)
    ("blk.0.attn_norm.weight", [0]),                            # F32 (576,)
    ("output_norm.weight", [0]),                                # F32 (576,)
]


def model_path():
    override = os.environ.get("HEADWISE_DECODER_DIR")
    if override:
        return pathlib.Path(override) / NAME
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "headwise" / "models" / "SmolLM2-135M-Instruct" / NAME


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def rows_of(tensor, rows):
    """gguf's dequantization of `rows` of a tensor, as (len(rows), columns) float32."""
    raw = np.asarray(tensor.data)
    if raw.ndim == 1:  # a vector is one row
        raw = raw.reshape(1, -1)
    picked = raw[rows]
    if tensor.tensor_type == Q.F32:
        return np.ascontiguousarray(picked, dtype=np.float32)
    return np.ascontiguousarray(gguf.quants.dequantize(picked, tensor.tensor_type), dtype=np.float32)


def quantize_cases():
    rng = np.random.default_rng(20240612)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    x[1] *= 0.01           # small weights
    x[2, :32] = 0.25       # a block of equal values: d = 0
    x[3] = np.abs(x[3])    # one sign only
    out = {"input": x}
    for name, qtype in (("q8_0", Q.Q8_0), ("q4_1", Q.Q4_1)):
        out[name] = gguf.quants.dequantize(gguf.quants.quantize(x, qtype), qtype).astype(np.float32)
    return out


def main():
    path = model_path()
    if not path.is_file():
        sys.exit(f"no {path}: run scripts/fetch-model --model smollm2 first")
    reader = gguf.GGUFReader(path)
    tensors = {t.name: t for t in reader.tensors}
    OUT.mkdir(parents=True, exist_ok=True)
    manifest = {
        "model": {"file": NAME, "bytes": path.stat().st_size, "sha256": sha256(path)},
        "gguf": importlib.metadata.version("gguf"),
        "tensors": [],
    }
    for name, rows in PICKS:
        t = tensors[name]
        shape = [int(n) for n in reversed(t.shape)]
        values = rows_of(t, rows)
        assert values.shape == (len(rows), shape[-1]), (name, values.shape)
        file = f"dequant_{name.removesuffix('.weight')}.npy"
        np.save(OUT / file, values)
        manifest["tensors"].append({"name": name, "type": t.tensor_type.name, "shape": shape, "rows": rows,
                                    "file": file})
    cases = quantize_cases()
    manifest["quantize"] = {}
    for key, values in cases.items():
        file = f"dequant_quantize_{key}.npy"
        np.save(OUT / file, values)
        manifest["quantize"][key] = file
    with open(OUT / "dequant_manifest.json", "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    total = sum((OUT / e["file"]).stat().st_size for e in manifest["tensors"])
    print(f"wrote {len(manifest['tensors'])} tensor fixtures ({total} bytes) and the quantize cases into {OUT}")


if __name__ == "__main__":
    main()
