"""One training step of lesson 11's model in PyTorch eager mode: forward, cross-entropy on every
next token, backward, AdamW -- the same model (scripts/check_induction.py's Model), the same batch
size and the same thread count as `headwise train`. Prints the median wall and CPU milliseconds per step
(CPU time, summed over threads, is what a loaded machine inflates least).

  python3 scripts/bench_train.py --threads 2 --steps 100
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_induction import Model, repeated_sequences  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--vocab", type=int, default=64)
    p.add_argument("--context", type=int, default=32)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    model = Model(a.vocab, a.context, a.d_model, a.heads, a.layers)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    rng = np.random.default_rng(1)
    times, cpu = [], []
    for step in range(a.steps + 5):
        tokens, _ = repeated_sequences(rng, a.batch, a.context, a.vocab)
        start, start_cpu = time.perf_counter(), time.process_time()
        logits, _ = model(tokens)
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, a.vocab), tokens[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= 5:  # the first steps allocate
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    print("pytorch %s eager, %d threads: %.2f ms a step; %.2f ms of CPU time a step (medians of %d)" % (
        torch.__version__, a.threads, 1e3 * statistics.median(times), 1e3 * statistics.median(cpu), len(times)))


if __name__ == "__main__":
    main()
