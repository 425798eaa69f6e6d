"""What `embedkit.Tuner` picks within a budget, against both plain baselines and the accuracy
suite's best row, held out.

    python pipelines/benchmarks/tune_budget.py --budget 10m                  # the seven sets
    python pipelines/benchmarks/tune_budget.py --budget 10m --datasets sms-spam 20newsgroups  # reported only
    python pipelines/benchmarks/tune_budget.py --budget 20m --datasets trec vader-tweets
    python pipelines/benchmarks/tune_budget.py --budget 2m --quick           # small slices, a smoke run
    python pipelines/benchmarks/tune_budget.py --report-only --output tune-budget
    python pipelines/benchmarks/tune_budget.py --budget 3m --datasets trec --data DIR   # no packages
    python pipelines/benchmarks/tune_budget.py --budget 10m --datasets imdb-reviews --sample 20000
    python pipelines/benchmarks/tune_budget.py --report-only --output NEW --against OLD   # paired
    python pipelines/benchmarks/tune_budget.py --budget 10m --seeds 0 1 2   # the spread over seeds
    python pipelines/benchmarks/tune_budget.py --budget 5m --predict-limit 0.002 --output LIMITED
    python pipelines/benchmarks/tune_budget.py --budget 10m --memory 3GB --output BOUNDED

Protocol (that of `accuracy_suite.py`): each dataset's official split where it has one, else a
stratified 80/20 split with seed 0. The timed part is exactly what `embedkit tune` does: the
`Tuner` with the budget given and its defaults, writing its output folder (leaderboard, report,
saved model) into ``OUTPUT/<dataset>-<budget>/``, on the training side only; its wall time is
the whole fit, everything included. Then, untimed, the pick predicts the held-out side, and the
two plain baselines (`embedkit.tuning.baseline_pipelines`: scikit-learn TF-IDF + LR, MiniLM + LR)
are fitted on the same training side and scored on the same held-out side. The suite's best row
per dataset is read from ``pipelines/benchmarks/results/accuracy_suite.csv``.

Output (``--output``, default ``tune-budget``): ``runs.jsonl`` (one line per dataset, budget and
seed; a rerun skips finished ones; each keeps which held-out rows the pick and both baselines got
right) and ``results.md`` / ``results.csv`` (the table, a row per run) beside ``spread.csv``
(`spread`: per set and budget, the mean held-out accuracy of the pick over its seeds and its
standard deviation, which ``results.md`` shows first). ``--seeds`` runs the search with each
``random_state`` on the same fixed split: the spread is the search's own, not the split's.
Seconds are wall clock on whatever machine runs it; the results file records the machine.

Two runs of a set differ by more than one held-out accuracy's standard error shows: ``--against
OLD`` (a ``runs.jsonl``, such as ``pipelines/benchmarks/results/tune_budget_runs.jsonl``, or an
output folder, whose saved models answer for runs from before the rows were kept) pairs each run
with OLD's of the same set and budget (or OLD's only run of that set: 20 minutes against 10),
row by row, and writes ``paired.md``: the difference, its paired standard error and the exact
McNemar test's p-value (`paired`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout without installing it
    sys.path.insert(0, str(ROOT))

#: the issue's sets: the six short-text ones and one long-text one
DATASETS = ("trec", "rotten-tomatoes", "disaster-tweets", "vader-tweets", "nyt-editorials",
            "election-tweets", "bbc-news")
#: the sets the search's rules are decided on (issue 46); every other set is only reported on:
#: a rule that fixes just the set it came from is a special case. Named before the change that
#: rebuilt the search (embedkit/tuning/_settings.py says the same)
DECISION_SETS = ("rotten-tomatoes", "trec", "nyt-editorials", "bbc-news")
#: sets only reported on, beside the other three of `DATASETS`: never used to decide a rule
REPORT_SETS = ("sms-spam", "20newsgroups", "imdb-reviews", "wordnet-glosses")
SHORT = set(DATASETS) - {"bbc-news"}
SUITE = ROOT / "pipelines" / "benchmarks" / "results" / "accuracy_suite.csv"


def suite_best() -> dict[str, tuple[str, float]]:
    """The accuracy suite's best embedkit row per dataset: ``{dataset: (pipeline, accuracy)}``."""
    if not SUITE.exists():
        return {}
    df = pd.read_csv(SUITE)
    df = df[~df["pipeline"].str.startswith("plain ")]
    best = df.loc[df.groupby("dataset")["accuracy"].idxmax()]
    return {r.dataset: (r.pipeline, float(r.accuracy)) for r in best.itertuples()}


def _bits(hits: np.ndarray) -> str:
    """Which held-out rows a model got right, in the split's order ("1": right): what a paired
    comparison of two runs reads."""
    return "".join(map(str, hits.astype(int)))


def sides(name: str, quick: bool = False, data: Path | None = None, sample: int | None = None):
    """``(train, test, protocol, label)`` of one set, split as every run of it is."""
    import embedkit
    from pipelines.benchmarks.accuracy_suite import _slice, split

    frame = pd.read_parquet(data / f"{name}.parquet") if data else embedkit.load_dataset(name)
    label = name
    if sample is not None and sample < len(frame):  # a stratified slice of a large set, seed 0
        frame, label = _slice(frame, sample), f"{name} ({sample:,})"
    return (*split(frame, quick=quick), label)


def run_one(name: str, budget: str, output: Path, quick: bool = False,
            data: Path | None = None, sample: int | None = None, seed: int = 0,
            predict_limit: float | None = None, memory: str | None = None,
            known: dict | None = None) -> dict:
    from sklearn.base import clone

    import embedkit
    from embedkit.machine import PeakRSS
    from embedkit.tuning import MINILM_BASELINE, TFIDF_BASELINE, baseline_pipelines, parse_budget

    train, test, protocol, label = sides(name, quick=quick, data=data, sample=sample)
    X_train, y_train = train["text"], train["label"].to_numpy()
    X_test, y_test = test["text"], test["label"].to_numpy()
    folder = output / f"{name}-{budget}" if sample is None else output / f"{name}-{sample}-{budget}"
    folder = folder if seed == 0 else folder.with_name(f"{folder.name}-seed{seed}")
    folder = folder if predict_limit is None else folder.with_name(f"{folder.name}-limit{predict_limit:g}")
    folder = folder if memory is None else folder.with_name(f"{folder.name}-memory{memory}")
    start = time.perf_counter()
    with PeakRSS() as peak:
        tuner = embedkit.Tuner(budget=budget, output=folder, overwrite=True, random_state=seed,
                               predict_limit=predict_limit, memory=memory).fit(X_train, y_train)
    wall = time.perf_counter() - start
    began = time.perf_counter()
    right = np.asarray(tuner.predict(X_test)) == y_test  # per held-out row, for paired comparisons
    predict_row_s = (time.perf_counter() - began) / max(len(X_test), 1)
    board = tuner.leaderboard_
    pick = board[board["pick"]].iloc[0]
    seconds = parse_budget(budget)
    row = {"dataset": label, "seed": seed, "protocol": protocol, "n_train": len(train), "n_test": len(test),
           "budget_s": seconds, "wall_s": wall, "used_share": wall / seconds,
           "peak_mb": peak.peak / 2**20,
           "pick": tuner.pick_, "pick_kind": pick["kind"], "pick_tier": pick["tier"],
           "pick_valid": float(pick["accuracy"]), "refit": bool(tuner.refit_),
           "seeds": int(tuner.seeds_), "fitted_rows": len(tuner.search_.data.train),
           "pick_acc": float(right.mean()), "held_out_right": _bits(right),
           "predict_limit": predict_limit, "predict_row_s": predict_row_s, "memory": memory,
           "memory_limit_mb": board.attrs["memory_limit_mb"],
           "pick_row_s_valid": float(pick["predict_s_per_1000"]) / 1000,
           "tiers": tuner.tiers_reached_, "scored": int((board["status"] == "scored").sum()),
           "left_out": [f"{p}: {n}" for p, n in zip(board.loc[board["status"] == "left out", "pipeline"],
                                                   board.loc[board["status"] == "left out", "note"],
                                                   strict=True)],
           "failed": int((board["status"] == "failed").sum()), "interrupted": tuner.interrupted_}
    row.update(held_out_calibration(tuner, X_test, y_test))
    print(f"{name} {budget} seed {seed}: pick {row['pick']} {row['pick_acc']:.3f} held out ({wall:.0f} s of "
          f"{seconds:.0f} s)", file=sys.stderr, flush=True)
    for base, pipe in baseline_pipelines("memory", solver="lbfgs").items():
        key = {TFIDF_BASELINE: "tfidf", MINILM_BASELINE: "minilm"}[base]
        if known is not None:  # the same split, the same deterministic fit: read, not refitted
            row[f"{key}_acc"], row[f"{key}_right"] = known[f"{key}_acc"], known[f"{key}_right"]
            continue
        model = clone(pipe).fit(X_train, y_train)
        hits = np.asarray(model.predict(X_test)) == y_test
        row[f"{key}_acc"], row[f"{key}_right"] = float(hits.mean()), _bits(hits)
    better = max(row["tfidf_acc"], row["minilm_acc"])
    row["vs_better_points"] = 100 * (row["pick_acc"] - better)
    best = suite_best().get(name)
    if best is not None:
        row["suite_best"], row["suite_best_acc"] = best
        row["vs_suite_best_points"] = 100 * (row["pick_acc"] - best[1])
    return row


def held_out_calibration(tuner, X_test, y_test) -> dict:
    """The pick's held-out log-loss and calibration error as saved (``pick_log_loss``,
    ``pick_ece``), with its last step's calibration taken off (``raw_*``: the pick as fitted)
    and with its temperature alone (``temperature_only_*``: without the top class's map,
    where the finish kept one), the ``temperature`` the finish applied (1.0: none) and whether
    it mapped the top class (``top_label``); test rows of a class the search never saw are not
    counted. Numbers and label sets: empty. The held-out rows are predicted once, as fitted;
    the calibrated forms are computed from those probabilities (a vote holding an encoder
    takes minutes a pass over tens of thousands of rows)."""
    import copy

    from sklearn.pipeline import Pipeline

    from embedkit import TemperatureScaled
    from embedkit.data.targets import expected_calibration_error, log_loss

    if tuner.calibration_ is None:
        return {}
    model, classes = tuner.best_estimator_, np.asarray(tuner.classes_)
    seen = np.isin(y_test, classes)
    X, y = X_test[seen], y_test[seen]
    if isinstance(model, Pipeline) and isinstance(model.steps[-1][1], TemperatureScaled):
        name, scaled = model.steps[-1]
        raw = np.asarray(Pipeline([*model.steps[:-1], (name, scaled.estimator)]).predict_proba(X),
                         dtype=np.float64)
        unmapped = copy.copy(scaled)
        unmapped.top_ = None
        probas = {"pick": scaled._calibrated(raw), "raw": raw, "temperature_only": unmapped._calibrated(raw)}
    else:
        probas = dict.fromkeys(("pick", "raw", "temperature_only"), model.predict_proba(X))
    out = {"temperature": float(tuner.calibration_["temperature"]) if tuner.calibration_["applied"]
           else 1.0, "top_label": bool(tuner.calibration_.get("top_label", False))}
    for key, proba in probas.items():
        out[f"{key}_log_loss"] = log_loss(y, proba, classes)
        out[f"{key}_ece"] = expected_calibration_error(y, proba, classes)
    return out


def table(rows: list[dict]) -> pd.DataFrame:
    from embedkit._budget import format_seconds

    df = pd.DataFrame(rows)
    out = pd.DataFrame({
        "dataset": df["dataset"],
        "set": df["dataset"].map(_role),
        "budget": df["budget_s"].map(format_seconds),
        "seed": _seeds(df),
        "wall s (share)": [f"{w:.0f} ({u:.0%})" for w, u in zip(df["wall_s"], df["used_share"],
                                                                strict=True)],
        "pick": df["pick"], "tier": df["pick_tier"],
        "final model": [_final(r, n, f / t) for r, n, f, t in zip(
            df["refit"], df.get("seeds", [1] * len(df)), df.get("fitted_rows", [np.nan] * len(df)),
            df["n_train"], strict=True)],
        "pick held out": df["pick_acc"].map("{:.3f}".format),
        "plain TF-IDF + LR": df["tfidf_acc"].map("{:.3f}".format),
        "plain MiniLM + LR": df["minilm_acc"].map("{:.3f}".format),
        "vs better baseline": df["vs_better_points"].map("{:+.1f}".format),
    })
    if "suite_best_acc" in df:
        out["suite best"] = [f"{p} {a:.3f}" if isinstance(p, str) else "" for p, a in
                             zip(df["suite_best"], df["suite_best_acc"], strict=True)]
        out["vs suite best"] = df["vs_suite_best_points"].map(
            lambda v: "" if pd.isna(v) else f"{v:+.1f}")
    if "predict_limit" in df and df["predict_limit"].notna().any():  # the pick's cost, held out
        out["predict limit ms/row"] = df["predict_limit"].map(
            lambda v: "" if pd.isna(v) else f"{1000 * v:.2f}")
        out["pick held out ms/row (validation)"] = [
            f"{1000 * h:.2f} ({1000 * v:.2f})" for h, v in zip(
                df["predict_row_s"], df["pick_row_s_valid"], strict=True)]
    if "pick_ece" in df:  # the pick's probabilities held out, as saved (as fitted)
        out["temperature"] = df["temperature"].map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
        for key, name in (("log_loss", "log-loss"), ("ece", "ECE")):
            out[f"held-out {name} (as fitted)"] = [
                "" if pd.isna(a) else f"{a:.3f} ({b:.3f})"
                for a, b in zip(df[f"pick_{key}"], df[f"raw_{key}"], strict=True)]
    out["tiers reached"] = df["tiers"].map(lambda t: ", ".join(t))
    if "peak_mb" in df:
        out["peak memory"] = df["peak_mb"].map(lambda v: "" if pd.isna(v) else f"{v / 1024:.1f} GB")
    if "memory" in df and df["memory"].notna().any():  # the limit given, beside the peak
        out["memory limit"] = df["memory"].fillna("")
    out["left out"] = df["left_out"].map(len)
    return out


def _role(dataset: str) -> str:
    return "decides" if dataset.split(" ")[0] in DECISION_SETS else "reported"


def _seeds(df: pd.DataFrame) -> pd.Series:
    """Each run's seed (0 for a run from before seeds were kept)."""
    return (df["seed"] if "seed" in df else pd.Series(0, index=df.index)).fillna(0).astype(int)


def spread(rows: list[dict]) -> pd.DataFrame:
    """Per set and budget, over the runs of its seeds (the split fixed): how many runs, the mean
    held-out accuracy of the pick and its standard deviation over the seeds (``ddof=1``; empty for
    one run), the lowest and the highest, the better plain baseline (the same on every seed) and
    the mean points over it, and the most of the budget a run used."""
    from embedkit._budget import format_seconds

    df = pd.DataFrame(rows).assign(seed=lambda d: _seeds(d))
    df["better"] = df[["tfidf_acc", "minilm_acc"]].max(axis=1)
    out = []
    for (dataset, budget), runs in df.groupby(["dataset", "budget_s"], sort=False):
        acc = runs["pick_acc"]
        out.append({"dataset": dataset, "set": _role(dataset), "budget": format_seconds(budget),
                    "seeds": ", ".join(map(str, sorted(runs["seed"]))), "runs": len(runs),
                    "pick held out (mean)": acc.mean(),
                    "standard deviation": acc.std(ddof=1) if len(runs) > 1 else np.nan,
                    "lowest": acc.min(), "highest": acc.max(),
                    "better baseline": runs["better"].mean(),
                    "vs better baseline (mean points)": 100 * (acc - runs["better"]).mean(),
                    "most budget used": runs["used_share"].max(),
                    **({"held-out ECE (mean, as fitted)": f"{runs['pick_ece'].mean():.3f} "
                        f"({runs['raw_ece'].mean():.3f})",
                        "held-out log-loss (mean, as fitted)": f"{runs['pick_log_loss'].mean():.3f} "
                        f"({runs['raw_log_loss'].mean():.3f})"}
                       if "pick_ece" in runs and runs["pick_ece"].notna().all() else {})})
    return pd.DataFrame(out)


def spread_table(df: pd.DataFrame) -> pd.DataFrame:
    """`spread` as the results page prints it."""
    shown = df.copy()
    for column in ("pick held out (mean)", "lowest", "highest", "better baseline"):
        shown[column] = shown[column].map("{:.3f}".format)
    shown["standard deviation"] = df["standard deviation"].map(
        lambda v: "" if pd.isna(v) else f"{100 * v:.1f} points")
    shown["vs better baseline (mean points)"] = df["vs better baseline (mean points)"].map("{:+.1f}".format)
    shown["most budget used"] = df["most budget used"].map("{:.0%}".format)
    return shown


def _final(refit: bool, seeds, share: float) -> str:
    """How the pick was finished: refit on all the training side (as the mean of N seeds of its
    fine-tuned model), or kept as fitted on the search's training rows (that share of them)."""
    if not refit:
        return "as fitted" + ("" if pd.isna(share) else f" ({share:.0%})")
    seeds = 1 if pd.isna(seeds) else int(seeds)
    return "refit" + (f", {seeds} seeds" if seeds > 1 else "")


def machine() -> str:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    text = f"{platform.processor() or platform.machine()}, {cores} cores, {platform.system()}"
    try:
        import torch

        if torch.cuda.is_available():
            text += f", {torch.cuda.get_device_name(0)}"
    except ImportError:
        pass
    return text


# -- paired comparison of two runs ---------------------------------------------------------------
def _hits(bits: str) -> np.ndarray:
    return np.frombuffer(bits.encode(), dtype=np.uint8) == ord("1")


def paired(new: dict, old: dict) -> dict:
    """Two runs' picks compared row by row on the same held-out side.

    Each held-out accuracy alone has a standard error of 0.4-1.1 points on these sets, but two
    picks mostly get the same rows right: what tells them apart is the rows only one of them got
    right. The difference's standard error is that of the per-row difference, and the exact
    McNemar test (a binomial test on those discordant rows) says how often a difference this
    large arises between two equally good models."""
    from scipy.stats import binomtest

    a, b = _hits(new["held_out_right"]), _hits(old["held_out_right"])
    if len(a) != len(b):
        raise ValueError(f"{new['dataset']}: the runs have {len(a):,} and {len(b):,} held-out rows;"
                         " a paired comparison needs the same split")
    gained, lost, n = int((a & ~b).sum()), int((~a & b).sum()), len(a)
    diff = (gained - lost) / n
    se = np.sqrt(max((gained + lost) / n - diff ** 2, 0.0) / n)
    p = binomtest(gained, gained + lost).pvalue if gained + lost else 1.0
    return {"dataset": new["dataset"], "budget": new["budget_s"], "other_budget": old["budget_s"],
            "new": a.mean(), "old": b.mean(),
            "points": 100 * diff, "only_new": gained, "only_old": lost, "se_points": 100 * se,
            "p": p}


def _with_hits(run: dict, folder: Path, data: Path | None = None, quick: bool = False) -> dict:
    """``run`` with its pick's held-out hits: kept by the run, or (a run from before they were
    kept) its saved model's predictions on the same held-out side, checked against the accuracy
    the run recorded (untimed)."""
    if "held_out_right" in run:
        return run
    from embedkit.storage.persist import load
    from embedkit.tuning import parse_budget

    name, _, sample = run["dataset"].partition(" (")
    sample = int(sample.rstrip(")").replace(",", "")) if sample else None
    prefix = name if sample is None else f"{name}-{sample}"  # run_one's folder: PREFIX-BUDGET
    found = [d for d in folder.glob(f"{prefix}-*") if (d / "model").is_dir()
             and "-seed" not in d.name and d.name.rsplit("-", 1)[0] == prefix
             and parse_budget(d.name.rsplit("-", 1)[1]) == run["budget_s"]]
    if not found:
        raise FileNotFoundError(f"{run['dataset']}: neither held-out hits in the run nor its saved "
                                f"model under {folder}")
    _, test, _, _ = sides(name, quick=quick, data=data, sample=sample)
    hits = np.asarray(load(found[0] / "model").predict(test["text"])) == test["label"].to_numpy()
    if len(hits) != run["n_test"] or abs(hits.mean() - run["pick_acc"]) > 1e-9:
        raise ValueError(f"{found[0]}: the saved model scores {hits.mean():.4f} on {len(hits):,} "
                         f"held-out rows, the run recorded {run['pick_acc']:.4f} on "
                         f"{run['n_test']:,}: not that run's pick")
    return {**run, "held_out_right": _bits(hits)}


def compare_runs(rows: list[dict], against: Path, data: Path | None = None,
                 quick: bool = False) -> pd.DataFrame:
    """Each of ``rows`` paired with the run of the same set and budget in ``against`` (a
    ``runs.jsonl``, or an output folder holding one and the runs' saved models); where it has
    that set at one other budget only, with that run (20 minutes against 10)."""
    folder = against if against.is_dir() else against.parent
    runs = against / "runs.jsonl" if against.is_dir() else against
    old = [json.loads(line) for line in runs.read_text().splitlines()]
    out = []
    for new in rows:
        same = [r for r in old if r["dataset"] == new["dataset"]]
        budget = [r for r in same if r["budget_s"] == new["budget_s"]]
        match = ([r for r in budget if r.get("seed", 0) == new.get("seed", 0)] or budget[:1]
                 or same[:len(same) == 1])
        out += [paired(new, _with_hits(match[0], folder, data, quick))] if match else []
    return pd.DataFrame(out)


def paired_table(df: pd.DataFrame) -> pd.DataFrame:
    from embedkit._budget import format_seconds

    verdict = np.where(df["p"] >= 0.05, "no difference shown",
                       np.where(df["points"] > 0, "better", "worse"))
    return pd.DataFrame({
        "dataset": df["dataset"], "budget": df["budget"].map(format_seconds),
        "other run's budget": df["other_budget"].map(format_seconds),
        "this run": df["new"].map("{:.3f}".format), "other run": df["old"].map("{:.3f}".format),
        "difference (points)": df["points"].map("{:+.1f}".format),
        "rows only this run got right": df["only_new"], "rows only the other got right": df["only_old"],
        "standard error (points)": df["se_points"].map("{:.1f}".format),
        "McNemar p": df["p"].map("{:.2f}".format), "verdict (p < 0.05)": verdict})


def write(rows: list[dict], out: Path, command: str) -> pd.DataFrame:
    result, over = table(rows), spread(rows)
    result.to_csv(out / "results.csv", index=False)
    over.to_csv(out / "spread.csv", index=False)
    (out / "results.md").write_text(
        f"# `embedkit tune` within a budget, held out\n\nCommand: `{command}`\n\nMachine: "
        f"{machine()}\n\n## Over seeds: the mean and the spread\n\n"
        + spread_table(over).to_markdown(index=False) + "\n\n## Each run\n\n"
        + result.to_markdown(index=False) + "\n")
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--budget", default="10m")
    parser.add_argument("--output", default="tune-budget")
    parser.add_argument("--quick", action="store_true", help="the suite's small slices")
    parser.add_argument("--data", type=Path, default=None,
                        help="read DATA/<dataset>.parquet (text, label[, split]) instead of the "
                             "packaged datasets: for a machine without them (a lent GPU)")
    parser.add_argument("--sample", type=int, default=None,
                        help="a stratified slice of this many documents of each set (seed 0), "
                             "before its 80/20 split")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0],
                        help="the search's random_state, one run each (the split stays fixed): "
                             "the spread of the held-out score over seeds")
    parser.add_argument("--predict-limit", type=float, default=None,
                        help="Tuner(predict_limit=): seconds a row the pick may take to predict; "
                             "the table then shows the pick's held-out seconds a row against it")
    parser.add_argument("--memory", default=None,
                        help="Tuner(memory=): what the search may hold, e.g. 3GB; the table's "
                             "peak memory is the whole fit's, measured beside it")
    parser.add_argument("--report-only", action="store_true",
                        help="rebuild the table from runs.jsonl without running anything")
    parser.add_argument("--against", type=Path, default=None,
                        help="compare each run, row by row on the held-out side, with the run of "
                             "the same set and budget (or the set's only run) in this runs.jsonl "
                             "or output folder (paired.md)")
    parser.add_argument("--baselines-from", type=Path, default=None,
                        help="a runs.jsonl whose run of the same set (the split is fixed) gives "
                             "both plain baselines' held-out rows instead of fitting them again "
                             "(deterministic fits; minutes on the largest sets)")
    args = parser.parse_args(argv)
    from embedkit.tuning import parse_budget

    seconds = parse_budget(args.budget)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    runs = out / "runs.jsonl"
    done = [json.loads(line) for line in runs.read_text().splitlines()] if runs.exists() else []
    command = "python pipelines/benchmarks/tune_budget.py " + " ".join(argv or sys.argv[1:])
    todo = [] if args.report_only else [(n, s) for s in args.seeds for n in args.datasets]
    for name, seed in todo:
        label = name if args.sample is None else f"{name} ({args.sample:,})"
        if any(r["dataset"] == label and r["budget_s"] == seconds and r.get("seed", 0) == seed
               and r.get("predict_limit") == args.predict_limit and r.get("memory") == args.memory
               for r in done) and not args.quick:
            continue
        known = None if args.baselines_from is None else next(
            (r for r in map(json.loads, args.baselines_from.read_text().splitlines())
             if r["dataset"] == label and "tfidf_right" in r and "minilm_right" in r), None)
        row = run_one(name, args.budget, out, quick=args.quick, data=args.data, sample=args.sample,
                      seed=seed, predict_limit=args.predict_limit, memory=args.memory, known=known)
        with runs.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        done.append(row)
    print(write(done, out, command).to_markdown(index=False))
    print(spread_table(spread(done)).to_markdown(index=False))
    if args.against is not None:
        pairs = paired_table(compare_runs(done, args.against, args.data, args.quick))
        (out / "paired.md").write_text(
            f"# Paired with {args.against}, held out\n\nCommand: `{command}`\n\n"
            + pairs.to_markdown(index=False, disable_numparse=True) + "\n")
        print(pairs.to_markdown(index=False, disable_numparse=True))


if __name__ == "__main__":
    main()
