"""What `embedkit.Tuner` picks within a budget on a numeric target, against the five-line
regression baselines, held out.

    python pipelines/benchmarks/tune_numbers.py --budget 10m --output OUT
    python pipelines/benchmarks/tune_numbers.py --budget 1m --quick --output OUT   # smoke run

Each set (`DATASETS`: the VADER sentences and tweets with their crowd sentiment score, a number
on -4..+4) is split 80/20 at random (seed 0). `Tuner` runs with the budget given and its defaults
on the 80%; on the 20% the pick, plain TF-IDF + ``Ridge``, plain MiniLM + ``Ridge`` (the
baselines every report carries, fitted on the same 80%) and the mean are scored by RMSE, MAE and
R². ``vs better baseline`` is the pick's RMSE as a share below the better baseline's (positive:
better), and its standard error comes from the per-row difference of squared errors (the rows
are the same for both). Each finished set is kept in ``runs.jsonl`` (a rerun skips it) and the
table written to ``tune_numbers.md`` in the output folder.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout without installing it
    sys.path.insert(0, str(ROOT))

#: the numeric sets (issue 48's score sets)
DATASETS = ("nyt-editorial-scores", "vader-tweet-scores")


def _scores(y: np.ndarray, predicted: np.ndarray) -> dict:
    err = np.asarray(predicted, dtype=float) - y
    return {"rmse": float(np.sqrt(np.mean(err ** 2))), "mae": float(np.mean(np.abs(err))),
            "r2": float(1 - np.mean(err ** 2) / np.var(y))}


def versus(y: np.ndarray, pick: np.ndarray, base: np.ndarray) -> tuple[float, float]:
    """The pick's RMSE as a share below ``base``'s (positive: better) and its standard error,
    from the per-row difference of squared errors (delta method on the square root)."""
    a, b = (np.asarray(pick, float) - y) ** 2, (np.asarray(base, float) - y) ** 2
    mse_a, mse_b = a.mean(), b.mean()
    share = 1 - np.sqrt(mse_a / mse_b)
    # d(1 - sqrt(A/B)) ~ -(dA - (A/B) dB) / (2 sqrt(A B)); per row, then its standard error
    per_row = -(a - (mse_a / mse_b) * b) / (2 * np.sqrt(mse_a * mse_b))
    return float(share), float(per_row.std(ddof=1) / np.sqrt(len(y)))


def run_one(name: str, budget: str, output: Path, quick: bool = False) -> dict:
    from sklearn.base import clone
    from sklearn.model_selection import train_test_split

    import embedkit
    from embedkit.machine import PeakRSS
    from embedkit.tuning import baseline_pipelines, parse_budget

    frame = embedkit.load_dataset(name)
    if quick:
        frame = frame.sample(600, random_state=0)
    train, test = train_test_split(frame, test_size=0.2, random_state=0)
    X_train, y_train = train["text"], train["label"].to_numpy(dtype=float)
    X_test, y_test = test["text"], test["label"].to_numpy(dtype=float)
    start = time.perf_counter()
    with PeakRSS() as memory:
        tuner = embedkit.Tuner(budget=budget, output=output / f"{name}-{budget}", overwrite=True,
                               task="regression").fit(X_train, y_train)
    wall = time.perf_counter() - start
    pick = tuner.predict(X_test)
    row = {"dataset": name, "n_train": len(train), "n_test": len(test),
           "budget_s": parse_budget(budget), "wall_s": wall, "peak_mb": memory.peak / 2**20,
           "pick": tuner.pick_, "refit": bool(tuner.refit_), "tiers": tuner.tiers_reached_,
           **{f"pick_{k}": v for k, v in _scores(y_test, pick).items()},
           **{f"mean_{k}": v for k, v in _scores(y_test, np.full(len(y_test), y_train.mean())).items()}}
    predictions = {}
    for base, pipe in baseline_pipelines("memory", "regression", solver="lbfgs").items():
        key = "tfidf" if "TF-IDF" in base else "minilm"
        predictions[key] = clone(pipe).fit(X_train, y_train).predict(X_test)
        row.update({f"{key}_{k}": v for k, v in _scores(y_test, predictions[key]).items()})
    better = min(predictions, key=lambda k: row[f"{k}_rmse"])
    row["better_baseline"] = better
    row["vs_better"], row["vs_better_se"] = versus(y_test, pick, predictions[better])
    print(f"{name} {budget}: pick {row['pick']} RMSE {row['pick_rmse']:.3f} held out, better "
          f"baseline ({better}) {row[f'{better}_rmse']:.3f}: {100 * row['vs_better']:+.1f}% "
          f"({wall:.0f} s of {row['budget_s']:.0f} s)", file=sys.stderr, flush=True)
    return row


def table(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    return pd.DataFrame({
        "dataset": df["dataset"], "budget": df["budget_s"].map(lambda s: f"{s / 60:g} min"),
        "wall s": df["wall_s"].map("{:.0f}".format), "pick": df["pick"],
        "pick RMSE": df["pick_rmse"].map("{:.3f}".format),
        "plain TF-IDF + Ridge": df["tfidf_rmse"].map("{:.3f}".format),
        "plain MiniLM + Ridge": df["minilm_rmse"].map("{:.3f}".format),
        "mean": df["mean_rmse"].map("{:.3f}".format),
        "RMSE below the better baseline": [f"{100 * v:+.1f}% ± {100 * s:.1f}" for v, s in
                                           zip(df["vs_better"], df["vs_better_se"], strict=True)],
        "pick MAE": df["pick_mae"].map("{:.3f}".format), "pick R²": df["pick_r2"].map("{:.3f}".format),
        "peak memory": df["peak_mb"].map(lambda v: f"{v / 1024:.1f} GB"),
    })


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--budget", default="10m")
    parser.add_argument("--output", type=Path, default=Path("tune-numbers"))
    parser.add_argument("--quick", action="store_true", help="600 rows of each set (smoke run)")
    args = parser.parse_args(argv)
    args.output.mkdir(parents=True, exist_ok=True)
    runs = args.output / "runs.jsonl"
    done = [json.loads(line) for line in runs.read_text().splitlines()] if runs.exists() else []
    from embedkit.tuning import parse_budget

    for name in args.datasets:
        if any(r["dataset"] == name and r["budget_s"] == parse_budget(args.budget) for r in done) \
                and not args.quick:
            continue
        row = run_one(name, args.budget, args.output, args.quick)
        with runs.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        done.append(row)
    result = table(done)
    command = "python pipelines/benchmarks/tune_numbers.py " + " ".join(argv or sys.argv[1:])
    (args.output / "tune_numbers.md").write_text(
        f"# `embedkit tune` on a number, held out\n\nCommand: `{command}`\n\n"
        + result.to_markdown(index=False) + "\n")
    print(result.to_markdown(index=False))
    return result


if __name__ == "__main__":
    main()
