"""Two targets of one table tuned in one run, against each target tuned alone with its share of
the budget, held out (issue 61.3).

    python pipelines/benchmarks/tune_targets.py --budget 2m --seeds 0 1
    python pipelines/benchmarks/tune_targets.py --budget 5m --seeds 0 1
    python pipelines/benchmarks/tune_targets.py --budget 1m --rows 1500 --output OUT   # smoke run

The table: ``movie-ratings-table`` (IMDb titles with their mpaa rating, year, length, budget and
votes), the rows whose genres are known, ``--rows`` of them drawn with seed 0 and split 80/20 at
random (seed 0). Its two targets, each of its own kind: the rating (a number: R² and RMSE) and
the genres (a set of labels: micro-F1). Per seed (the search's ``random_state``, on the same
split): one `Tuner` run on both targets with ``--budget`` (``--label-column`` twice), and two
runs on one target each with half of it, the same feature columns read, each run starting with
the process's embedding cache empty (a run after another would find its texts encoded). The
held-out score of each target's pick from the run of both, minus that of its run alone, with a
paired bootstrap standard error over the held-out rows (400 draws); and, from the run of both,
how long each target's search took to have the texts encoded (its frozen-encoder pass: the
second finds them cached).

Output (``--output``, default ``tune-targets``): ``runs.jsonl`` (a line per seed; a rerun skips
finished seeds of a budget) and ``tune_targets.md``. Seconds are wall clock on whatever machine runs it.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout without installing it
    sys.path.insert(0, str(ROOT))

TARGETS = ("rating", "genres")
DRAWS = 400


def table(rows: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    from sklearn.model_selection import train_test_split

    import embedkit

    films = embedkit.load_dataset("movie-ratings-table").dropna(subset=["genres"])
    films = films.rename(columns={"label": "rating"}).sample(rows, random_state=0)
    train, test = train_test_split(films, test_size=0.2, random_state=0)
    return train.reset_index(drop=True), test.reset_index(drop=True)


def scores(target: str, truth: pd.Series, predicted, classes=None) -> np.ndarray:
    """Per held-out row what the target's metric averages: squared errors (R², RMSE from them)
    or, for label sets, the row's true positives, false positives and false negatives."""
    if target == "rating":
        return (np.asarray(predicted, dtype=float) - truth.to_numpy(dtype=float)) ** 2
    names = list(classes)
    sets = [set(cell.split("|")) & set(names) for cell in truth]
    guessed = [set(p) for p in predicted]
    return np.array([[len(t & g), len(g - t), len(t - g)] for t, g in zip(sets, guessed, strict=True)])


def metric(target: str, parts: np.ndarray, truth: pd.Series) -> float:
    if target == "rating":
        y = truth.to_numpy(dtype=float)
        return float(1 - parts.sum() / ((y - y.mean()) ** 2).sum())
    tp, fp, fn = parts.sum(axis=0)
    return float(2 * tp / max(2 * tp + fp + fn, 1))


def versus(target: str, both: np.ndarray, alone: np.ndarray, truth: pd.Series) -> tuple[float, float]:
    """The run of both minus the run alone, and its paired bootstrap standard error."""
    rng = np.random.default_rng(0)
    draws = []
    for _ in range(DRAWS):
        rows = rng.integers(0, len(truth), len(truth))
        draws.append(metric(target, both[rows], truth.iloc[rows])
                     - metric(target, alone[rows], truth.iloc[rows]))
    return metric(target, both, truth) - metric(target, alone, truth), float(np.std(draws, ddof=1))


def predicted_sets(model, X) -> list:
    """A label-set model's predictions as lists of names."""
    matrix = np.asarray(model.predict(X))
    return [list(np.asarray(model.classes_)[row.astype(bool)]) for row in matrix]


def run_seed(seed: int, budget: str, rows: int, output: Path) -> dict:
    import embedkit
    from embedkit.cache import get_cache
    from embedkit.tuning import parse_budget

    train, test = table(rows)
    features = [c for c in train.columns if c not in TARGETS]
    seconds = parse_budget(budget)
    lines: list[str] = []
    get_cache("memory").clear()  # every run starts with nothing encoded (one process runs all)
    began = time.perf_counter()
    both = embedkit.Tuner(budget=budget, random_state=seed, progress=lines.append,
                          output=output / f"both-seed{seed}", overwrite=True).fit(
        train[features], train[list(TARGETS)])
    row = {"seed": seed, "budget_s": seconds, "n_train": len(train), "n_test": len(test),
           "both_wall_s": time.perf_counter() - began}
    together = both.predict(test[features])
    for target in TARGETS:
        passes = [float(m.group(1)) for line in lines if line.startswith(f"[{target}]")
                  for m in [re.search(r"documents encoded once in (\d+) s", line)] if m]
        row[f"{target}_encode_s"] = passes[0] if passes else None
        get_cache("memory").clear()
        began = time.perf_counter()
        alone = embedkit.Tuner(budget=seconds / len(TARGETS), random_state=seed, progress=False,
                               output=output / f"{target}-seed{seed}", overwrite=True).fit(
            train[features], train[target])
        row[f"{target}_alone_wall_s"] = time.perf_counter() - began
        model = both.targets_[target].best_estimator_
        classes = None if target == "rating" else model.classes_
        mine = scores(target, test[target], together[target], classes)
        theirs = scores(target, test[target], alone.predict(test[features]) if target == "rating"
                        else predicted_sets(alone.best_estimator_, test[features]),
                        None if target == "rating" else alone.best_estimator_.classes_)
        row[f"{target}_both"] = metric(target, mine, test[target])
        row[f"{target}_alone"] = metric(target, theirs, test[target])
        row[f"{target}_diff"], row[f"{target}_se"] = versus(target, mine, theirs, test[target])
        row[f"{target}_pick_both"], row[f"{target}_pick_alone"] = both.pick_[target], alone.pick_
        print(f"seed {seed} {target}: both {row[f'{target}_both']:.3f}, alone "
              f"{row[f'{target}_alone']:.3f}", file=sys.stderr, flush=True)
    return row


def report(runs: list[dict]) -> str:
    import embedkit

    commands = list(dict.fromkeys(r.get("command", "") for r in runs))
    lines = ["# Two targets in one run against each target alone (`embedkit tune`)", "",
             "Rows written by " + ", then ".join(f"`{c}`" for c in commands if c) + ".", "",
             f"Machine: {platform.processor() or platform.machine()}; embedkit "
             f"{getattr(embedkit, '__version__', '?')}, Python {platform.python_version()}. "
             "Seconds are wall clock.", "",
             "`movie-ratings-table` (the rows whose genres are known; the title, mpaa, year, "
             "length, budget and votes read as a table), split 80/20 at random (seed 0). "
             "*both*: one run with the budget on both targets; *alone*: a run on that target with "
             "half of it; each run starts with the embedding cache empty. Rating: R² held out; "
             "genres: micro-F1 held out. *diff*: both minus "
             f"alone, ± its paired bootstrap standard error ({DRAWS} draws of the held-out rows). "
             "*encode s*: the seconds each target's search in the run of both took to have the "
             "texts encoded by MiniLM (empty: that search left the frozen encoder out).", "",
             "| seed | budget | train / test | target | both | alone | diff | within 1 SE | "
             "encode s | wall s (both; alone) |", "|---|---:|---|---|---:|---:|---:|---|---:|---|"]
    for r in runs:
        for target in TARGETS:
            diff, se = r[f"{target}_diff"], r[f"{target}_se"]
            encode = r[f"{target}_encode_s"]
            lines.append(
                f"| {r['seed']} | {r['budget_s']:.0f} s | {r['n_train']:,} / {r['n_test']:,} | "
                f"{target} | {r[f'{target}_both']:.3f} | {r[f'{target}_alone']:.3f} | "
                f"{100 * diff:+.1f} ± {100 * se:.1f} | {'yes' if abs(diff) <= se else 'no'} | "
                f"{'' if encode is None else f'{encode:.0f}'} | "
                f"{r['both_wall_s']:.0f}; {r[f'{target}_alone_wall_s']:.0f} |")
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="2m")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--rows", type=int, default=6000)
    parser.add_argument("--output", type=Path, default=Path("tune-targets"))
    args = parser.parse_args(argv)
    args.output.mkdir(parents=True, exist_ok=True)
    log = args.output / "runs.jsonl"
    runs = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    from embedkit.tuning import parse_budget

    command = "python pipelines/benchmarks/tune_targets.py " + " ".join(argv or sys.argv[1:])
    for seed in args.seeds:
        if any(r["seed"] == seed and r["n_train"] + r["n_test"] == args.rows
               and r["budget_s"] == parse_budget(args.budget) for r in runs):
            continue
        runs.append({**run_seed(seed, args.budget, args.rows, args.output), "command": command})
        with log.open("a") as f:
            f.write(json.dumps(runs[-1]) + "\n")
    (args.output / "tune_targets.md").write_text(report(runs), encoding="utf-8")
    print(args.output / "tune_targets.md")


if __name__ == "__main__":
    main()
