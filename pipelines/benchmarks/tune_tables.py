"""What `embedkit.Tuner` picks within a budget on label sets and on tables, held out, against the
five-line baselines of each kind and, for a table, against the same search on its text alone.

    python pipelines/benchmarks/tune_tables.py --budget 10m --output OUT
    python pipelines/benchmarks/tune_tables.py --budget 1m --quick --output OUT   # smoke run

Each set is split 80/20 at random (seed 0; stratified for classes). `Tuner` runs with the budget
given and its defaults on the 80%; the 20% scores it.

* **Label sets** (``movie-genres``: film titles, 1-5 of 7 genres each): the pick (its threshold
  chosen by the search) against plain TF-IDF and plain MiniLM, each + one ``LogisticRegression``
  per label, predicting at 0.5 as five lines would; micro- and macro-F1, and the pick's micro-F1
  minus the better baseline's with a paired bootstrap standard error over the held-out rows.
* **Tables** (``disaster-tweets-table``: tweet, location, keyword, a class;
  ``movie-ratings-table``: title, genres, mpaa, year, length, budget, votes, the IMDb rating):
  the search on every column (roles read from the values, as ``--column '*'``) and the same
  search on the first text column alone, same rows and budget; the baselines read that text
  column. Classes: accuracy, the two picks paired row by row (exact McNemar, as
  `tune_budget.paired`); numbers: RMSE, the table pick's RMSE as a share below the text pick's
  (`tune_numbers.versus`).

Each finished run is kept in ``runs.jsonl`` (a rerun skips it) and the tables written to
``tune_tables.md`` in the output folder.
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

from pipelines.benchmarks.tune_budget import paired  # noqa: E402
from pipelines.benchmarks.tune_numbers import versus  # noqa: E402

#: the set of each kind: label sets, a table of classes, a table of numbers
DATASETS = ("movie-genres", "disaster-tweets-table", "movie-ratings-table")
LABEL_SETS = ("movie-genres",)


def _split(frame: pd.DataFrame, quick: bool):
    from sklearn.model_selection import train_test_split

    if quick:
        frame = frame.sample(min(800, len(frame)), random_state=0)
    numbers = frame["label"].map(lambda v: isinstance(v, float)).all()
    strata = None if numbers or isinstance(frame["label"].iloc[0], list) else frame["label"]
    train, test = train_test_split(frame, test_size=0.2, random_state=0, stratify=strata)
    return train.reset_index(drop=True), test.reset_index(drop=True)


def _tune(X, y, budget: str, folder: Path) -> tuple:
    import embedkit
    from embedkit.machine import PeakRSS

    start = time.perf_counter()
    with PeakRSS() as memory:
        tuner = embedkit.Tuner(budget=budget, output=folder, overwrite=True).fit(X, y)
    return tuner, time.perf_counter() - start, memory.peak / 2**20


def _f1(truth, predicted) -> dict:
    from sklearn.metrics import f1_score

    return {f"f1_{a}": float(f1_score(truth, predicted, average=a, zero_division=0))
            for a in ("micro", "macro")}


def run_label_sets(name: str, budget: str, output: Path, quick: bool) -> list[dict]:
    from sklearn.base import clone
    from sklearn.metrics import f1_score
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import MultiLabelBinarizer

    import embedkit
    from embedkit.data.targets import tune_threshold
    from embedkit.tuning import baseline_pipelines, parse_budget

    train, test = _split(embedkit.load_dataset(name), quick)
    tuner, wall, peak = _tune(train["text"], train["label"], budget, output / f"{name}-{budget}")
    names = tuner.classes_.tolist()
    binarize = MultiLabelBinarizer(classes=names)
    fit_y = binarize.fit_transform([[g for g in s if g in names] for s in train["label"]])
    truth = binarize.transform([[g for g in s if g in names] for s in test["label"]])
    predicted = {"pick": tuner.predict(test["text"])}
    inner, check = train_test_split(np.arange(len(train)), test_size=0.2, random_state=0)
    for base, pipe in baseline_pipelines("memory", "multilabel", solver="lbfgs").items():
        key = "tfidf" if "TF-IDF" in base else "minilm"
        model = clone(pipe).fit(train["text"], fit_y)
        predicted[key] = model.predict(test["text"])  # five lines: each label above 0.5
        # the same with a threshold chosen on a fifth of the training rows, as the search does
        held = clone(pipe).fit(train["text"].iloc[inner], fit_y[inner])
        threshold = tune_threshold(held.predict_proba(train["text"].iloc[check]), fit_y[check])
        predicted[f"{key}_tuned"] = (model.predict_proba(test["text"]) > threshold).astype(int)
    row = {"dataset": name, "variant": "label sets", "n_train": len(train), "n_test": len(test),
           "budget_s": parse_budget(budget), "wall_s": wall, "peak_mb": peak, "pick": tuner.pick_,
           "threshold": float(tuner.best_estimator_.steps[-1][1].threshold_)}
    for key, p in predicted.items():
        row.update({f"{key}_{k}": v for k, v in _f1(truth, p).items()})
    better = max(("tfidf", "minilm", "tfidf_tuned", "minilm_tuned"),
                 key=lambda k: row[f"{k}_f1_micro"])
    rng = np.random.default_rng(0)
    draws = []
    for _ in range(200):  # paired bootstrap of the held-out rows
        rows = rng.integers(0, len(truth), len(truth))
        draws.append(f1_score(truth[rows], predicted["pick"][rows], average="micro", zero_division=0)
                     - f1_score(truth[rows], predicted[better][rows], average="micro", zero_division=0))
    row.update(better_baseline=better, vs_better=row["pick_f1_micro"] - row[f"{better}_f1_micro"],
               vs_better_se=float(np.std(draws, ddof=1)))
    print(f"{name}: pick micro-F1 {row['pick_f1_micro']:.3f}, better baseline ({better}) "
          f"{row[f'{better}_f1_micro']:.3f} ({wall:.0f} s)", file=sys.stderr, flush=True)
    return [row]


def run_table(name: str, budget: str, output: Path, quick: bool) -> list[dict]:
    from sklearn.base import clone

    import embedkit
    from embedkit.data.columns import infer_columns
    from embedkit.tuning import baseline_pipelines, parse_budget

    train, test = _split(embedkit.load_dataset(name), quick)
    features = [c for c in train.columns if c != "label"]
    text = infer_columns(train[features]).text[0]
    numbers = train["label"].dtype.kind == "f"
    rows, kept = [], {}
    for variant, columns in (("table", features), ("text only", [text])):
        X_train = train[columns] if len(columns) > 1 else train[text]
        X_test = test[columns] if len(columns) > 1 else test[text]
        tuner, wall, peak = _tune(X_train, train["label"], budget,
                                  output / f"{name}-{variant.replace(' ', '-')}-{budget}")
        kept[variant] = predicted = tuner.predict(X_test)
        row = {"dataset": name, "variant": variant, "columns": ", ".join(columns),
               "roles": getattr(tuner.roles_, "describe", lambda: f"text {text}")(),
               "n_train": len(train), "n_test": len(test), "budget_s": parse_budget(budget),
               "wall_s": wall, "peak_mb": peak, "pick": tuner.pick_}
        if numbers:
            row["rmse"] = float(np.sqrt(np.mean((predicted - test["label"]) ** 2)))
        else:
            hits = np.asarray(predicted) == test["label"].to_numpy()
            row.update(accuracy=float(hits.mean()), held_out_right="".join("01"[int(h)] for h in hits))
        rows.append(row)
    task = "regression" if numbers else "classification"
    for base, pipe in baseline_pipelines("memory", task, solver="lbfgs").items():
        p = clone(pipe).fit(train[text], train["label"]).predict(test[text])
        rows[0]["tfidf" if "TF-IDF" in base else "minilm"] = (
            float(np.sqrt(np.mean((p - test["label"]) ** 2))) if numbers
            else float(np.mean(p == test["label"].to_numpy())))
    if numbers:
        share, se = versus(test["label"].to_numpy(), kept["table"], kept["text only"])
        rows[0].update(vs_text=100 * share, vs_text_se=100 * se)
    else:
        both = paired({**rows[0], "budget_s": 0}, {**rows[1], "budget_s": 0})
        rows[0].update(vs_text=both["points"], vs_text_se=both["se_points"], p=both["p"])
    print(f"{name}: table pick {rows[0].get('rmse', rows[0].get('accuracy')):.3f}, text-only pick "
          f"{rows[1].get('rmse', rows[1].get('accuracy')):.3f}", file=sys.stderr, flush=True)
    return rows


def report(done: list[dict], command: str) -> str:
    sets = [r for r in done if r["variant"] == "label sets"]
    tables = {r["dataset"]: r for r in done if r["variant"] == "table"}
    text = {r["dataset"]: r for r in done if r["variant"] == "text only"}
    lines = [f"# `embedkit tune` on label sets and tables, held out\n\nCommand: `{command}`\n"]
    if sets:
        lines.append(pd.DataFrame([{
            "dataset": r["dataset"], "budget": f"{r['budget_s'] / 60:g} min",
            "wall s": f"{r['wall_s']:.0f}", "pick": r["pick"], "threshold": r["threshold"],
            "pick micro-F1": f"{r['pick_f1_micro']:.3f}", "pick macro-F1": f"{r['pick_f1_macro']:.3f}",
            **{f"plain {n} + LR one-vs-rest{t}": f"{r[f'{k}{s}_f1_micro']:.3f} / {r[f'{k}{s}_f1_macro']:.3f}"
               for k, n in (("tfidf", "TF-IDF"), ("minilm", "MiniLM"))
               for s, t in (("", ""), ("_tuned", ", threshold tuned"))},
            "micro-F1 vs the best baseline": f"{100 * r['vs_better']:+.1f} ± {100 * r['vs_better_se']:.1f}"
                                             f" ({r['better_baseline']})",
            "peak memory": f"{r['peak_mb'] / 1024:.1f} GB"} for r in sets]).to_markdown(
                index=False, disable_numparse=True))
        lines.append("\nBaselines: micro-F1 / macro-F1, each label predicted above 0.5 (five "
                     "lines) or above the threshold that scored best on a fifth of the training "
                     "rows (what the search does for every model); ± one standard error of the "
                     "paired difference (bootstrap of the held-out rows).\n")
    shown = []
    for name, r in tables.items():
        if name not in text:
            continue
        t, metric = text[name], "rmse" if "rmse" in r else "accuracy"
        shown.append({
            "dataset": name, "metric": metric, "budget": f"{r['budget_s'] / 60:g} min",
            "columns (read from the values)": r["roles"].split(" (")[0], "table pick": f"{r[metric]:.3f}",
            "text-only pick": f"{t[metric]:.3f}", "plain TF-IDF": f"{r['tfidf']:.3f}",
            "plain MiniLM": f"{r['minilm']:.3f}",
            "table vs text only": (f"{r['vs_text']:+.1f}% ± {r['vs_text_se']:.1f} RMSE below"
                                   if metric == "rmse" else
                                   f"{r['vs_text']:+.1f} ± {r['vs_text_se']:.1f} points, p = {r['p']:.3g}"),
            "wall s (table, text)": f"{r['wall_s']:.0f}, {t['wall_s']:.0f}",
            "picks (table; text)": f"{r['pick']}; {t['pick']}"})
    if shown:
        lines.append(pd.DataFrame(shown).to_markdown(index=False, disable_numparse=True))
        lines.append("\nThe baselines read the text column alone (what five lines on one column "
                     "would); numbers: RMSE (Ridge baselines), classes: accuracy.\n")
    return "\n".join(lines)


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--budget", default="10m")
    parser.add_argument("--output", type=Path, default=Path("tune-tables"))
    parser.add_argument("--quick", action="store_true", help="800 rows of each set (smoke run)")
    args = parser.parse_args(argv)
    args.output.mkdir(parents=True, exist_ok=True)
    runs = args.output / "runs.jsonl"
    done = [json.loads(line) for line in runs.read_text().splitlines()] if runs.exists() else []
    from embedkit.tuning import parse_budget

    for name in args.datasets:
        if not args.quick and any(r["dataset"] == name and r["budget_s"] == parse_budget(args.budget)
                                  for r in done):
            continue
        run = run_label_sets if name in LABEL_SETS else run_table
        new = run(name, args.budget, args.output, args.quick)
        with runs.open("a") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in new)
        done += new
    command = "python pipelines/benchmarks/tune_tables.py " + " ".join(argv or sys.argv[1:])
    text = report(done, command)
    (args.output / "tune_tables.md").write_text(text)
    print(text)
    return text


if __name__ == "__main__":
    main()
