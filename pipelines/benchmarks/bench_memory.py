"""The memory a fine-tuning fit grows the process by, beside the need its head declares before
anything is loaded (issue 60; `embedkit.heads.finetune.sizing.fit_memory`, which the search
reads to size a batch, or to leave a pair out, under a memory limit):

    python pipelines/benchmarks/bench_memory.py [--threads 2] [--output DIR]

Each row runs in a process of its own: torch, transformers and embedkit imported and the
documents read first, then the fit of the row's head on three batches (the search's probe fits
a few steps too) inside `embedkit.machine.PeakRSS`, the measure the search itself takes of every
fit. The documents are bbc-news articles, longer than every ``max_length`` here, so each batch is
the full ``batch_size x max_length`` word pieces. A ratio (declared / measured) at or above 1 is a
prior that errs safe; the search adds its margin (`MARGIN`) on top.

Output: ``bench_memory.md`` in ``--output`` (default ``pipelines/benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: (head, model, max_length, batch_size, gradient_accumulation, fine_tune)
ROWS = (
    ("finetune", "all-minilm-l6-v2", 64, 16, 1, "full"),
    ("finetune", "all-minilm-l6-v2", 128, 16, 1, "full"),
    ("finetune", "all-minilm-l6-v2", 256, 16, 1, "full"),
    ("finetune", "all-minilm-l6-v2", 256, 4, 4, "full"),
    ("finetune", "all-minilm-l6-v2", 256, 16, 1, "last_k"),
    ("finetune", "all-mpnet-base-v2", 128, 16, 1, "full"),
    ("finetune", "all-mpnet-base-v2", 256, 4, 4, "full"),
    ("setfit", "all-minilm-l6-v2", 64, 16, 1, "full"),
    ("setfit", "all-mpnet-base-v2", 64, 16, 1, "full"),
)


def build(kind: str, model: str, length: int, batch: int, every: int, fine_tune: str):
    from embedkit.heads import SetFitClassifier, TransformerClassifier

    if kind == "setfit":
        return SetFitClassifier(model=model, max_length=length, batch_size=batch, max_steps=3)
    return TransformerClassifier(model=model, max_length=length, batch_size=batch, epochs=1,
                                 gradient_accumulation=every, fine_tune=fine_tune,
                                 early_stopping=False, random_state=0)


def one(row: tuple, threads: int) -> dict:
    """Fit the row's head on three batches of bbc-news articles; its growth and declared need."""
    import torch
    import transformers  # noqa: F401  (imported before the fit, as in a search)

    from embedkit import load_dataset
    from embedkit.machine import PeakRSS

    torch.set_num_threads(threads)
    kind, model, length, batch, every, fine_tune = row
    head = build(*row)
    data = load_dataset("bbc-news").groupby("label").head(20)
    n = 3 * batch * every if kind == "finetune" else 2 * batch
    docs = data.text.tolist()[:n] if n <= len(data) else (data.text.tolist() * 10)[:n]
    labels = (data.label.tolist() * 10)[:n]
    with PeakRSS() as mem:
        head.fit(docs, labels)
    return {"head": kind, "model": model, "max_length": length, "batch_size": batch,
            "gradient_accumulation": every, "fine_tune": fine_tune,
            "measured_mb": (mem.peak - mem.start) / 2**20, "declared_mb": head.fit_memory() / 2**20}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", type=Path, default=ROOT / "pipelines" / "benchmarks" / "results")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one(ROWS[args.one], args.threads)))
        return
    results = []
    for i in range(len(ROWS)):
        done = subprocess.run([sys.executable, __file__, "--one", str(i), "--threads", str(args.threads)],
                              capture_output=True, text=True, check=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        r = results[-1]
        print(f"{r['head']} {r['model']} {r['max_length']}x{r['batch_size']} ({r['fine_tune']}): "
              f"measured {r['measured_mb']:.0f} MB, declared {r['declared_mb']:.0f} MB", flush=True)
    lines = [
        "# A fine-tuning fit's memory, measured and declared",
        "",
        f"Command: `python pipelines/benchmarks/bench_memory.py --threads {args.threads}` (two CPU cores, "
        "nothing else running). Each row a process of its own; *measured*: the peak resident memory "
        "of its fit on three batches of bbc-news articles above the process's before it "
        "(`embedkit.machine.PeakRSS`); *declared*: the head's `fit_memory()`, computed from the "
        "encoder's config before anything is loaded, which a search under a memory limit reads "
        "(with its margin) before a pair's first fit.",
        "",
        "| head | model | fine-tuned | max_length x batch (accumulation) | measured MB | declared MB "
        "| declared / measured |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for r in results:
        lines.append(f"| {r['head']} | {r['model']} | {r['fine_tune']} | {r['max_length']} x "
                     f"{r['batch_size']} ({r['gradient_accumulation']}) | {r['measured_mb']:.0f} | "
                     f"{r['declared_mb']:.0f} | {r['declared_mb'] / r['measured_mb']:.2f} |")
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "bench_memory.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
