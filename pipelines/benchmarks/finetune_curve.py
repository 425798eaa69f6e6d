"""How fine-tuned MiniLM's held-out accuracy grows with its training rows at one epoch (issue 59).

    python pipelines/benchmarks/finetune_curve.py --sets wordnet-glosses 20newsgroups trec \\
        --rows 1000 3000 9000 27000

`embedkit tune` fits a model first on few rows and grows it by `GROWTH` times its work while its
measured curve promises the most; a model with one point has its error shrink as the work to the
power `CURVE_EXPONENT` (0.1, from the decide sets' growth steps, where fine-tuning started on
thousands of rows of two to six classes). On many classes a first fine-tuning fit on a few dozen
rows a class scored near chance (wordnet-glosses: 0.336 on 1,184 rows of 45 classes) and was
never grown. This measures the curve that decision bets on: the registry's ``finetune-short``
(one epoch, ``max_length=48``, every other setting the registry's), fitted on nested stratified
slices of each set's training side (a smaller slice's rows are among a larger one's, as the
search's growth keeps its rows) and scored on up to ``--test`` held-out rows; per step, the
exponent its error fell by, ``log(error before / error) / log(rows / rows before)``, the
quantity `CURVE_EXPONENT` stands for.

Each set is split as `tune_budget.py` splits it. Rows are appended to ``--runs`` as they finish
(a rerun skips the (set, rows) already there); the table is written to ``--output``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout
    sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "pipelines" / "benchmarks" / "results"


def run_set(name: str, sizes, test_rows: int, done: set, command: str, seed: int = 0):
    import numpy as np

    from embedkit.registry import HEADS
    from embedkit.tuning._selection import stratified_order, stratified_rows
    from pipelines.benchmarks.accuracy_suite import _slice
    from pipelines.benchmarks.tune_budget import sides

    train, test, _, _ = sides(name)
    test = _slice(test, test_rows)
    X, y = train["text"].to_numpy(object), train["label"].to_numpy()
    order = stratified_order(y, seed)
    for m in sorted(sizes):
        if m > len(y) or (name, m) in done:
            continue
        rows = stratified_rows(y, m, seed, order)
        head = HEADS["finetune-short"].factory().set_params(epochs=1, max_length=48, random_state=seed)
        began = time.perf_counter()
        head.fit(X[rows], y[rows])
        fit_s = time.perf_counter() - began
        accuracy = float(np.mean(head.predict(test["text"].to_numpy(object)) == test["label"].to_numpy()))
        row = {"dataset": name, "rows": int(len(rows)), "classes": int(len(set(y))),
               "per_class": len(rows) / len(set(y)), "n_test": len(test), "fit_s": fit_s,
               "accuracy": accuracy, "seed": seed, "load_1min": os.getloadavg()[0], "command": command}
        print(json.dumps(row), flush=True)
        yield row


def table(rows: list[dict]) -> list[str]:
    out = ["| dataset | classes | rows | rows a class | fit s | held-out accuracy | exponent from the "
           "size before |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name in dict.fromkeys(r["dataset"] for r in rows):
        before = None
        for r in sorted((r for r in rows if r["dataset"] == name), key=lambda r: r["rows"]):
            exponent = ""
            if before is not None and r["accuracy"] < 1 and before["accuracy"] < 1:
                fall = math.log((1 - before["accuracy"]) / (1 - r["accuracy"]))
                exponent = f"{fall / math.log(r['rows'] / before['rows']):.2f}"
            out.append(f"| {name} | {r['classes']} | {r['rows']:,} | {r['per_class']:.0f} | "
                       f"{r['fit_s']:.0f} | {r['accuracy']:.3f} | {exponent} |")
            before = r
    return out


def main(argv=None) -> None:
    from pipelines.benchmarks.bench_threads import machine, versions
    from pipelines.benchmarks.few_labels import read_runs

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=["wordnet-glosses", "20newsgroups", "trec"])
    parser.add_argument("--rows", nargs="+", type=int, default=[1000, 3000, 9000, 27000])
    parser.add_argument("--test", type=int, default=2000, help="held-out rows scored, at most")
    parser.add_argument("--runs", type=Path, default=RESULTS / "finetune_curve_runs.jsonl")
    parser.add_argument("--output", type=Path, default=RESULTS / "finetune_curve.md")
    args = parser.parse_args(argv)
    runs = read_runs(args.runs)
    done = {(r["dataset"], r["rows"]) for r in runs}
    command = " ".join(["python pipelines/benchmarks/finetune_curve.py",
                        *(argv if argv is not None else sys.argv[1:])])
    for name in args.sets:
        for row in run_set(name, args.rows, args.test, done, command):
            with args.runs.open("a") as f:
                f.write(json.dumps(row) + "\n")
            runs.append(row)
    lines = ["# Fine-tuned MiniLM's held-out accuracy against its training rows, one epoch", "",
             "Rows written by " + ", then ".join(f"`{c}`" for c in dict.fromkeys(
                 r["command"] for r in runs)) + ".", "",
             f"Machine: {machine()}. {versions()}.", "",
             "The registry's `finetune-short` at one epoch and `max_length=48`, fitted on nested "
             "stratified slices of the training side (seed 0) and scored on at most the held-out "
             "rows given. *exponent*: how fast the error fell from the size before, "
             "`log(error before / error) / log(rows / rows before)`; `embedkit tune` values a "
             "model with one fit by `CURVE_EXPONENT` (0.1) until two fits measure its own.", "",
             *table(runs)]
    args.output.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
