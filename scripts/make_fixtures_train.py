"""tests/fixtures/train/: one training step's loss and gradients from PyTorch autograd.

The model is scripts/check_induction.py's (the pinned architecture in torch.nn), with every axis
a different size (V 11, N 10, d 12, H 3, L 2, B 3) and every parameter drawn at random (LayerNorm
weights and biases too, so no gradient is trivially zero). Autograd runs in float64 on the float32
values that are saved, so the fixture's gradients are exact to float32 rounding.

  params.safetensors  the model, in the checkpoint's names and metadata
  tokens.npy          (B, N) float32 (headwise reads float .npy): repeated sequences
  grads.safetensors   d loss / d parameter, the same names; metadata: the loss
"""
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_induction import Model, repeated_sequences  # noqa: E402

V, N, D, H, L, B = 11, 10, 12, 3, 2, 3


def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": metadata}
    offset = 0
    blobs = []
    for name, t in tensors.items():
        data = np.ascontiguousarray(t.detach().numpy().astype("<f4")).tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "train")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(11)
    model = Model(V, N, D, H, L)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_((0.5 * torch.randn(p.shape)).float())
        for name, p in model.named_parameters():
            if name.endswith("ln.weight") or name == "ln_f.weight":
                p.add_(1.0)
    meta = {"heads": str(H), "layers": str(L), "vocab": str(V), "context": str(N), "d_model": str(D)}
    write_safetensors(os.path.join(out, "params.safetensors"), dict(model.state_dict()), meta)
    tokens, _ = repeated_sequences(np.random.default_rng(7), B, N, V)
    np.save(os.path.join(out, "tokens.npy"), tokens.numpy().astype(np.float32))  # exact: small whole numbers

    model = model.double()
    logits, _ = model(tokens)
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1))
    loss.backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    write_safetensors(os.path.join(out, "grads.safetensors"), grads, dict(meta, loss=repr(loss.item())))
    print("wrote %s: loss %.6f, %d tensors" % (os.path.normpath(out), loss.item(), len(grads)))


if __name__ == "__main__":
    main()
