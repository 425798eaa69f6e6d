"""What the base-size encoder costs beside MiniLM on this machine: encoding speed of the
registry's frozen ``mpnet`` against ``minilm`` on the same texts, and seconds per fine-tuning
step of the ``finetune-mpnet`` recipe against ``finetune-short``'s:

    python pipelines/benchmarks/bench_mpnet.py [--texts 400] [--rounds 2] [--steps 3] [--threads 2]

Encoding: ``--texts`` short texts drawn (seed 0) from each of trec, rotten-tomatoes and
disaster-tweets, encoded by the registry's ``minilm`` and ``mpnet`` steps (the suite's settings,
cache off, their default backend: ONNX Runtime where installed), each fitted once first (model
load; a first ONNX export is not timed); the best of ``--rounds`` passes, the two encoders'
passes interleaved. Fine-tuning: one
optimizer step of each recipe's own parts (`TransformerClassifier`'s encoder freezing, module
and fused AdamW) on batches of ``--batch`` real short texts truncated to ``--max-length`` word
pieces and padded to their batch's longest, as the head trains, and on batches padded to the
full ``--max-length`` (an upper bound); the mean of ``--steps`` steps after one warm-up step,
the two recipes' steps alternating on the same batches.
Each time is given as wall-clock seconds and as the CPU seconds of the process (every thread):
on a machine other jobs share, the CPU seconds stay comparable across runs (about what the work
takes alone on one core), the wall-clock ones do not. Ratios against MiniLM are measured in the
same run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout without installing it
    sys.path.insert(0, str(ROOT))

SETS = ("trec", "rotten-tomatoes", "disaster-tweets")
PAIRS = {"MiniLM": ("minilm", "finetune-short"), "mpnet": ("mpnet", "finetune-mpnet")}


def texts(n: int) -> list[str]:
    from embedkit import load_dataset

    rng = np.random.default_rng(0)
    out = []
    for name in SETS:
        column = load_dataset(name)["text"].to_numpy(dtype=object)
        out += list(rng.choice(column, min(n, len(column)), replace=False))
    return out


def encoding(docs: list[str], rounds: int) -> dict[str, float]:
    """Documents per second of each frozen encoder: the best of ``rounds`` passes, the two
    encoders' passes interleaved so a change in the machine's load hits both."""
    from embedkit.registry import REPRESENTATIONS

    steps = {label: REPRESENTATIONS[rep].factory().set_params(cache=None).fit(docs[:8])
             for label, (rep, _) in PAIRS.items()}
    best = {label: (float("inf"), float("inf")) for label in steps}
    for _ in range(rounds):
        for label, step in steps.items():
            seconds = _timed(lambda step=step: step.transform(docs))
            best[label] = min(best[label], seconds)
    for label, step in steps.items():
        wall, cpu = best[label]
        print(f"  {label:<7} {PAIRS[label][0]:<7} backend={step.backend_:<5} {wall:7.1f} s "
              f"({cpu:7.1f} CPU s)  {len(docs) / wall:7.1f} docs/s ({len(docs) / cpu:7.1f} per "
              "CPU s)", flush=True)
    return {label: (len(docs) / wall, len(docs) / cpu) for label, (wall, cpu) in best.items()}


def _timed(run) -> tuple[float, float]:
    """(wall-clock seconds, CPU seconds of this process, every thread) of ``run()``. On a
    machine that other jobs share, the CPU seconds are what stays comparable: about the wall
    time the work would take alone on one core."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def trainer(head: str, seed: int = 0):
    """``step(texts)``: one training step (forward, backward, fused AdamW) of the registry
    head's recipe: its encoder freezing, `FineTuneModule` and optimizer, as the head trains."""
    import torch

    from embedkit.heads.finetune._module import FineTuneModule, freeze_encoder
    from embedkit.registry import HEADS
    from embedkit.storage.resources import load_transformer

    est = HEADS[head].factory()
    torch.manual_seed(seed)
    tokenizer, encoder, _ = load_transformer(est.model)
    frozen = freeze_encoder(encoder, est.fine_tune, est.k, "bench", est.model)
    module = FineTuneModule(encoder, 2, est.head, est.pooling, est.dropout, frozen).train()
    optimizer = torch.optim.AdamW([p for p in module.parameters() if p.requires_grad],
                                  lr=est.lr, fused=True)

    def step(chunk: list[str], max_length: int, padded: bool) -> float:
        enc = tokenizer(chunk, truncation=True, max_length=max_length, return_tensors="pt",
                        padding="max_length" if padded else True)
        labels = torch.tensor([j % 2 for j in range(len(chunk))])

        def run():
            logits = module(enc["input_ids"], enc["attention_mask"])
            torch.nn.functional.cross_entropy(logits, labels).backward()
            optimizer.step()
            optimizer.zero_grad()

        return _timed(run)

    return step


def step_seconds(docs: list[str], batch: int, max_length: int, steps: int,
                 padded: bool) -> dict[str, tuple[float, float]]:
    """Mean (wall, CPU) seconds of a training step of each recipe over ``steps`` batches (after
    one warm-up step each), the recipes' steps alternating on the same batches."""
    steppers = {label: trainer(head) for label, (_, head) in PAIRS.items()}
    times: dict[str, list] = {label: [] for label in steppers}
    for i in range(steps + 1):
        chunk = docs[i * batch:(i + 1) * batch]
        for label, step in steppers.items():
            seconds = step(chunk, max_length, padded)
            if i:
                times[label].append(seconds)
    return {label: tuple(np.mean(t, axis=0).tolist()) for label, t in times.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=400, help="texts drawn from each set")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per recipe")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-encoding", action="store_true")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    docs = texts(args.texts)
    rng = np.random.default_rng(1)
    shuffled = list(rng.permutation(np.asarray(docs, dtype=object)))
    print(f"{len(docs)} texts from {', '.join(SETS)}; torch threads {torch.get_num_threads()}")
    lines = []
    if not args.skip_encoding:
        print("frozen encoding (registry steps, cache off):")
        speed = encoding(docs, args.rounds)
        (mini, mini_cpu), (base, base_cpu) = speed["MiniLM"], speed["mpnet"]
        lines.append(f"encoding: MiniLM {mini:.1f} docs/s, mpnet {base:.1f} docs/s: mpnet takes "
                     f"{mini / base:.1f}x MiniLM's time ({mini_cpu / base_cpu:.1f}x its CPU time)")
    for padded in (False, True):
        shape = f"padded to {args.max_length}" if padded else "padded to the batch's longest"
        print(f"fine-tuning step, batch {args.batch}, max_length {args.max_length}, {shape}:")
        seconds = step_seconds(shuffled, args.batch, args.max_length, args.steps, padded)
        for label, (_, head) in PAIRS.items():
            wall, cpu = seconds[label]
            print(f"  {label:<7} {head:<15} {wall:6.2f} s/step ({cpu:6.2f} CPU s)", flush=True)
        (mini, mini_cpu), (base, base_cpu) = seconds["MiniLM"], seconds["mpnet"]
        lines.append(f"fine-tuning step ({shape}): MiniLM {mini:.2f} s, mpnet {base:.2f} s: "
                     f"{base / mini:.1f}x (CPU {mini_cpu:.2f} s, {base_cpu:.2f} s: "
                     f"{base_cpu / mini_cpu:.1f}x)")
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
