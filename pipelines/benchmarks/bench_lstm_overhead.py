"""Epoch time of RNNClassifier(cell="lstm") (skorch loop, per-batch collate) against a
hand-written PyTorch loop training the same module on the same tensors.

    PYTHONPATH=. python pipelines/benchmarks/bench_lstm_overhead.py [epochs] [repeats]

Both sides: TREC-6 train (5,452 questions) as token ids over the training vocabulary, the same
RNNModule (embedding 50 + LSTM 64, pooling last), Adam lr 1e-3, batch 32 shuffled, dynamic
padding to the batch's longest row, gradient-norm clipping 5, single-threaded torch. Runs are
interleaved (head, loop, head, loop, ...) after a warm-up of both, so load on a shared machine
hits both alike. Per-epoch times are whole-run times / epochs (the head's include building the
net and skorch's setup), measured as wall-clock and as this process's CPU time (less sensitive
to other processes on a shared machine). Prints medians and ratios; target: head / loop <= 1.10.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _head_data import token_ids, tokenize, vocabulary  # noqa: E402

from embedkit.data.datasets import load_dataset  # noqa: E402
from embedkit.heads import RNNClassifier  # noqa: E402


def hand_loop(module, ids: torch.Tensor, lengths: torch.Tensor, y: torch.Tensor, epochs: int,
              batch_size: int = 32, clip: float = 5.0, seed: int = 0):
    optimizer = torch.optim.Adam(module.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(seed)
    module.train()
    for _ in range(epochs):
        order = torch.randperm(len(y), generator=generator)
        for b in range(0, len(y), batch_size):
            idx = order[b: b + batch_size]
            n = lengths[idx]
            x = ids[idx, : int(n.max())]
            optimizer.zero_grad()
            loss = loss_fn(module(x, n), y[idx])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(module.parameters(), clip)
            optimizer.step()


def main(epochs: int = 3, repeats: int = 3) -> None:
    torch.set_num_threads(1)
    df = load_dataset("trec")
    train = df[df.split == "train"]
    docs = tokenize(train.text.tolist())
    X = token_ids(docs, vocabulary(docs))
    classes, y = np.unique(train.label.to_numpy(), return_inverse=True)
    params = dict(cell="lstm", hidden_size=64, embedding_dim=50, pooling="last", dropout=0.0,
                  epochs=epochs, batch_size=32, lr=1e-3, early_stopping=False, gradient_clip=5.0)
    ids, lengths, target = torch.as_tensor(X.ids), torch.as_tensor(X.lengths), torch.as_tensor(y)
    inputs = RNNClassifier()._as_input(X, reset=True)

    def run_head(r, n_epochs):
        RNNClassifier(random_state=r, **{**params, "epochs": n_epochs}).fit(X, y)

    def run_loop(r, n_epochs):
        torch.manual_seed(r)
        module = RNNClassifier(**params)._build_module(inputs, len(classes))
        hand_loop(module, ids, lengths, target, n_epochs, seed=r)

    run_head(99, 1)  # warm-up: imports, allocator, first-call costs
    run_loop(99, 1)
    times = {"head": {"wall": [], "cpu": []}, "loop": {"wall": [], "cpu": []}}
    for r in range(repeats):
        for name, fn in (("head", run_head), ("loop", run_loop)):
            wall, cpu = time.perf_counter(), time.process_time()
            fn(r, epochs)
            times[name]["wall"].append((time.perf_counter() - wall) / epochs)
            times[name]["cpu"].append((time.process_time() - cpu) / epochs)
    print(f"LSTM epoch on TREC train ({len(y)} docs, {epochs} epochs x {repeats} repeats, "
          f"torch threads = {torch.get_num_threads()})")
    for clock in ("wall", "cpu"):
        head, loop = (float(np.median(times[k][clock])) for k in ("head", "loop"))
        print(f"  {clock:4s}: RNNClassifier {head:.3f} s/epoch {np.round(times['head'][clock], 3).tolist()}"
              f" | hand loop {loop:.3f} s/epoch {np.round(times['loop'][clock], 3).tolist()}"
              f" | ratio head/loop = {head / loop:.3f} (target <= 1.10)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
