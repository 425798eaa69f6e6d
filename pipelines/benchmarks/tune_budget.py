"""What `embedkit.tune` picks at a fixed budget, against the better plain baseline, held out.

    python pipelines/benchmarks/tune_budget.py                                  # 5 min, 2 sets
    python pipelines/benchmarks/tune_budget.py --budget 30m --datasets trec vader-tweets
    python pipelines/benchmarks/tune_budget.py --cache /tmp/minilm-cache --output tune-budget

Protocol (that of `accuracy_suite.py`): each dataset's official split where it has one, else a
stratified 80/20 split with seed 0. `embedkit.tune` runs on the training side only, with the
budget given and its defaults (pairs, 3 folds, the in-memory embedding cache); its pick, refit
on the whole training side, predicts the held-out side. The two plain baselines of issue 13
(`embedkit.tuning.baseline_pipelines`: scikit-learn TF-IDF + LR, embedkit's MiniLM + LR) are
fitted on the same training side and scored on the same held-out side. ``--cache DIR`` gives the
*baselines'* MiniLM a disk cache (vectors are unchanged; it only saves re-encoding between
runs); the search itself always starts cold.

Output (``--output``, default ``tune-budget``): ``runs.jsonl`` (one line per dataset; a rerun
skips finished ones), ``results.md`` / ``results.csv`` (the table), and per dataset the tune
leaderboard (``<dataset>/leaderboard.*``). Seconds are wall clock on whatever machine runs it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout without installing it
    sys.path.insert(0, str(ROOT))

DATASETS = ("disaster-tweets", "rotten-tomatoes")


def run_one(name: str, budget: str, cache, output: Path, quick: bool = False) -> dict:
    from sklearn.base import clone
    from sklearn.metrics import accuracy_score

    import embedkit
    from embedkit.report import write_leaderboard
    from embedkit.tuning import TFIDF_BASELINE, baseline_pipelines, parse_budget
    from pipelines.benchmarks.accuracy_suite import split

    train, test, protocol = split(embedkit.load_dataset(name), quick=quick)
    X_train, y_train = train["text"], train["label"].to_numpy()
    X_test, y_test = test["text"], test["label"].to_numpy()
    start = time.perf_counter()
    # with its baselines, as a user runs it: a baseline that out-scores the search is the pick
    search = embedkit.tune(X_train, y_train, budget=budget)
    tune_s = time.perf_counter() - start
    write_leaderboard(search.leaderboard_, output / name,
                      title=f"tune on {name}, budget {budget}")
    pick = search.leaderboard_[search.leaderboard_["pick"]].iloc[0]
    row = {"dataset": name, "protocol": protocol, "n_train": len(train), "n_test": len(test),
           "budget_s": parse_budget(budget), "tune_s": tune_s,
           "search_s": search.search_.search_seconds_ + search.refit_time_, "pick": pick["pipeline"],
           "pick_kind": pick["kind"],
           "pick_round": int(pick["round"]), "pick_docs": int(pick["documents"]),
           "pick_cv": float(pick["accuracy"]),
           "pick_acc": float(accuracy_score(y_test, search.predict(X_test))),
           "candidates": len(search.candidates_),
           "scored_last_round": int((search.leaderboard_["round"]
                                     == search.leaderboard_["round"].max()).sum()),
           "skipped": len(search.search_.skipped_), "pairs": [f"{r} + {h}" for r, h in search.pairs_]}
    print(f"{name}: pick {row['pick']} {row['pick_acc']:.3f} held out ({tune_s:.0f} s)",
          file=sys.stderr, flush=True)
    for base, pipe in baseline_pipelines(cache).items():
        began = time.perf_counter()
        model = clone(pipe).fit(X_train, y_train)
        key = "tfidf" if base == TFIDF_BASELINE else "minilm"
        row[f"{key}_acc"] = float(accuracy_score(y_test, model.predict(X_test)))
        row[f"{key}_s"] = time.perf_counter() - began
        print(f"{name}: {base} {row[f'{key}_acc']:.3f} ({row[f'{key}_s']:.0f} s)",
              file=sys.stderr, flush=True)
    better = max(row["tfidf_acc"], row["minilm_acc"])
    row["vs_better_points"] = (row["pick_acc"] - better) * 100
    return row


def table(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    return pd.DataFrame({
        "dataset": df["dataset"], "train / test": df["n_train"].map("{:,}".format) + " / "
        + df["n_test"].map("{:,}".format),
        "budget": df["budget_s"].map("{:.0f} s".format),
        "search + refit s": df["search_s"].map("{:.0f}".format),
        "tune s (with baselines)": df["tune_s"].map("{:.0f}".format),
        "pick": df["pick"], "pick round (docs)": df["pick_round"].astype(str) + " ("
        + df["pick_docs"].map("{:,}".format) + ")",
        "pick CV": df["pick_cv"].map("{:.3f}".format),
        "pick held out": df["pick_acc"].map("{:.3f}".format),
        "plain TF-IDF + LR": df["tfidf_acc"].map("{:.3f}".format),
        "plain MiniLM + LR": df["minilm_acc"].map("{:.3f}".format),
        "pick vs better baseline (points)": df["vs_better_points"].map("{:+.1f}".format),
        "candidates / skipped": df["candidates"].astype(str) + " / " + df["skipped"].astype(str),
    })


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--budget", default="5m")
    parser.add_argument("--cache", default="memory",
                        help="embedding cache of the baselines' MiniLM: 'memory' or a folder")
    parser.add_argument("--output", default="tune-budget")
    parser.add_argument("--quick", action="store_true", help="the suite's small slices")
    args = parser.parse_args(argv)
    from embedkit.tuning import parse_budget

    seconds = parse_budget(args.budget)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    runs = out / "runs.jsonl"
    done = {}
    if runs.exists():
        for line in runs.read_text().splitlines():
            row = json.loads(line)
            done[(row["dataset"], row["budget_s"], row["n_train"])] = row
    rows = []
    for name in args.datasets:
        previous = [r for (d, b, _), r in done.items() if d == name and b == seconds]
        if previous and not args.quick:
            rows.append(previous[-1])
            continue
        row = run_one(name, args.budget, args.cache, out, quick=args.quick)
        with runs.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        rows.append(row)
    result = table(rows)
    result.to_csv(out / "results.csv", index=False)
    (out / "results.md").write_text(result.to_markdown(index=False) + "\n")
    print(result.to_markdown(index=False))


if __name__ == "__main__":
    main()
