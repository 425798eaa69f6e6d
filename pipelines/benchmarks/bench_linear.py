"""The linear heads on TF-IDF at every size: the ``sgd`` head against ``logreg`` and the plain
baseline's LogisticRegression (issue 60).

    python pipelines/benchmarks/bench_linear.py                    # every set, decide and report
    python pipelines/benchmarks/bench_linear.py --sets trec bbc-news --train 2000   # a slice
    python pipelines/benchmarks/bench_linear.py --limit 900        # seconds a fit may take

Each set is split as the accuracy suite, `tune_budget.py` and the peers split it (official, else
stratified 80/20, seed 0); ``--train`` keeps a stratified slice of the training side. One TF-IDF
(the plain baseline's and FLAML's: word 1-2 grams, min_df=2, sublinear tf) is fitted on the
training side; every head then fits the same matrix, in a child process of one BLAS thread
(`embedkit.machine.plan_threads`) that is stopped after ``--limit`` seconds. Per head: the fit
seconds, the held-out accuracy, log-loss and expected calibration error
(`embedkit.data.targets`), and the head's seconds divided by the ``sgd`` head's in the same
run. Heads:

* ``sgd``: the registry's ``sgd`` (`embedkit.heads.LinearSGDClassifier`, log-loss);
* ``sgd-huber``: the same head with FLAML's loss on wordnet-glosses (modified Huber), the other
  value of the registry's space;
* ``logreg``: the registry's ``logreg`` (`embedkit.heads.LogisticRegressionHead`, C by inner
  3-fold CV; SAGA on this sparse input), ``logreg-lbfgs`` the same head on lbfgs (its solver
  before 4a995ed; the rows of that head measured before were renamed so);
* ``logreg-cv`` / ``logreg-cv-lbfgs``: the registry's ``logreg-cv`` (the same head on five Cs,
  scored by accuracy), SAGA and lbfgs;
* ``plain-lr``: the plain baseline's ``LogisticRegression(max_iter=3000)`` as a user writes it
  (lbfgs); ``plain-lr-saga`` the same model solved by SAGA, as `embedkit tune` fits its baseline;
* ``nbsvm-stacked``: NBSVM as the registry's ``nbsvm`` representation builds it (the matrix times
  each class's log-count ratios, one block per class side by side; one block for two classes)
  under ``logreg-cv``, one multinomial model over every block: `embedkit tune`'s ``nbsvm +
  logreg-cv`` pair on this matrix; ``nblr``: the registry's ``nblr``
  (`embedkit.heads.NBLogisticRegression`), a two-class logistic regression per class on its own
  block (C of ``logreg-cv``'s grid by inner 3-fold CV on log-loss).

The head's defaults were decided on the DECIDE sets alone (named below, before any run); the
REPORT sets, wordnet-glosses among them (the peers' case: FLAML's SGD scored 0.780 there in 27 s
of features and fit, `peer_config.py`), only report. Rows are appended to ``--runs`` as they
finish (a rerun skips the (set, rows, head) already there); the table is written to
``--output`` from every row of ``--runs``.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout
    sys.path.insert(0, str(ROOT))

#: where the defaults were decided: short and long texts, two to six classes
DECIDE = ("rotten-tomatoes", "trec", "nyt-editorials", "bbc-news")
#: where they are only reported: many rows and classes (the case), spam, twenty topics
REPORT = ("wordnet-glosses", "sms-spam", "20newsgroups")
HEADS = ("sgd", "sgd-huber", "logreg", "logreg-lbfgs", "logreg-cv", "logreg-cv-lbfgs", "plain-lr",
         "plain-lr-saga", "nbsvm-stacked", "nblr")
RESULTS = ROOT / "pipelines" / "benchmarks" / "results"

#: how the ``sgd`` head's defaults were decided: development runs of the head's variants on the
#: DECIDE sets only (held-out accuracy and log-loss, the same splits and TF-IDF as below, one run
#: each on a shared two-core machine), before the table below was measured
DECIDED = """## How the defaults were decided (DECIDE sets only)

Accuracy held out on trec / bbc-news / nyt-editorials / rotten-tomatoes (test sides of 500, 445,
976 and 2,551 rows: a point is within the noise), and the sum of the four log-losses:

| variant | trec | bbc-news | nyt-editorials | rotten-tomatoes | log-losses |
|---|---:|---:|---:|---:|---:|
| log-loss, final model on the 90% not held out | 0.868 | 0.984 | 0.624 | 0.764 | 1.561 |
| modified Huber, the same | 0.884 | 0.984 | 0.607 | 0.756 | 1.564 |
| hinge, the same | 0.886 | 0.984 | 0.628 | 0.765 | 1.575 |
| log-loss, averaged SGD | 0.886 | 0.987 | 0.619 | 0.756 | 1.547 |
| modified Huber, averaged SGD | 0.858 | 0.984 | 0.618 | 0.759 | 1.604 |
| hinge, averaged SGD | 0.884 | 0.987 | 0.624 | 0.764 | 1.566 |
| **log-loss, refitted on every row (kept)** | 0.888 | 0.989 | 0.627 | 0.769 | **1.510** |
| modified Huber, refitted on every row | 0.892 | 0.987 | 0.608 | 0.761 | 1.536 |

Kept: one fit more on every row where the choice of alpha saw every training row (better on
all four sets for both losses), and log-loss (the lowest log-losses; accuracy level with the
others). Averaging: mixed (lower log-loss with log-loss, higher with modified Huber), off.

Alpha chosen on 1,000 rows and scaled to the rows fitted by `(1000 / rows) ** gamma` (sums
over the four sets):

| gamma | log-loss: accuracy | log-loss: log-losses | mod. Huber: accuracy | mod. Huber: log-losses |
|---:|---:|---:|---:|---:|
| 0 (alpha as chosen) | 3.241 | 1.581 | 3.220 | 1.609 |
| **0.5 (kept)** | **3.253** | **1.548** | 3.249 | 1.569 |
| 1 (alpha times rows constant) | 3.247 | 1.558 | 3.256 | 1.563 |

Kept: 0.5 (`embedkit.heads.sgd.ALPHA_SCALING`): the best with the default loss, level with 1 for
modified Huber, both ahead of no scaling.
"""


class _Stacked:
    """The registry's ``nbsvm`` features of a TF-IDF matrix: each class's log-count-ratio block
    side by side, as `embedkit.representations.TfidfEmbedder` (``log_count_ratio=True``) builds
    them."""

    def fit(self, X, y):
        from embedkit.representations.tfidf import log_count_ratios

        self.ratios_ = log_count_ratios(X, y)[1]
        return self

    def transform(self, X):
        import scipy.sparse as sp

        return sp.hstack([X.multiply(r[None, :]) for r in self.ratios_], format="csr")

    def fit_transform(self, X, y):
        return self.fit(X, y).transform(X)


def make_head(name: str):
    from sklearn.linear_model import LogisticRegression

    from embedkit.registry import HEADS as REGISTRY

    if name.startswith("plain-lr"):
        return LogisticRegression(max_iter=3000, solver="saga" if name.endswith("saga") else "lbfgs")
    if name.endswith("-lbfgs"):  # the registry's head on the solver it had before SAGA
        return REGISTRY[name.removesuffix("-lbfgs")].factory().set_params(solver="lbfgs")
    if name == "sgd-huber":
        return REGISTRY["sgd"].factory().set_params(loss="modified_huber")
    if name == "nbsvm-stacked":
        from sklearn.pipeline import make_pipeline

        return make_pipeline(_Stacked(), REGISTRY["logreg-cv"].factory())
    return REGISTRY[name].factory()


def _fit_and_score(name, X, y, X_test, y_test, out) -> None:
    """In the child: fit one head under one BLAS thread, put its row on ``out``."""
    import warnings

    import numpy as np

    from embedkit.data.targets import expected_calibration_error, log_loss
    from embedkit.machine import plan_threads

    warnings.filterwarnings("ignore")
    head = make_head(name)
    with plan_threads(1).block():
        began = time.perf_counter()
        head.fit(X, y)
        fit_s = time.perf_counter() - began
        began = time.perf_counter()
        proba = head.predict_proba(X_test)
        predict_s = time.perf_counter() - began
    classes = head.classes_
    out.put({"accuracy": float(np.mean(classes[proba.argmax(axis=1)] == y_test)),
             "log_loss": log_loss(y_test, proba, classes),
             "ece": expected_calibration_error(y_test, proba, classes),
             "fit_s": fit_s, "predict_s": predict_s,
             "alpha": float(getattr(head, "alpha_", float("nan")))})


def run_head(name: str, X, y, X_test, y_test, limit: float) -> dict:
    """One head's row, or ``{"stopped": limit}`` when its fit ran past ``limit`` seconds."""
    import multiprocessing as mp

    context = mp.get_context("fork")
    out = context.Queue()
    child = context.Process(target=_fit_and_score, args=(name, X, y, X_test, y_test, out))
    child.start()
    child.join(limit)
    if child.is_alive():
        child.terminate()
        child.join()
        return {"stopped": limit}
    try:
        return out.get(timeout=10)
    except queue.Empty:
        return {"failed": child.exitcode}


def run_set(name: str, train_rows: int | None, heads, limit: float, done: set,
            command: str) -> list[dict]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    from pipelines.benchmarks.accuracy_suite import _slice
    from pipelines.benchmarks.tune_budget import sides

    train, test, protocol, _ = sides(name)
    if train_rows is not None and train_rows < len(train):
        train = _slice(train, train_rows)
    heads = [h for h in heads if (name, len(train), h) not in done]
    if not heads:
        return []
    began = time.perf_counter()
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
    X = vectorizer.fit_transform(train["text"])
    features_s = time.perf_counter() - began
    X_test = vectorizer.transform(test["text"])
    y, y_test = train["label"].to_numpy(), test["label"].to_numpy()
    rows = []
    for head in heads:
        row = {"dataset": name, "role": "decide" if name in DECIDE else "report",
               "protocol": protocol, "n_train": len(train), "n_test": len(test),
               "classes": int(len(set(y))), "terms": X.shape[1], "features_s": features_s,
               "head": head, "load_1min": os.getloadavg()[0],
               **run_head(head, X, y, X_test, y_test, limit), "command": command}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def table(rows: list[dict]) -> list[str]:
    by_set: dict[tuple, dict] = {}
    for r in rows:
        by_set.setdefault((r["role"], r["dataset"], r["n_train"]), {})[r["head"]] = r
    out = ["| role | dataset | train / test rows | classes | head | accuracy | log-loss | ECE | "
           "fit s | fit s / sgd's |", "|---|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for (role, name, n), heads in sorted(by_set.items(), key=lambda k: (k[0][0] != "decide", k[0][1:])):
        base = heads.get("sgd", {}).get("fit_s")
        for head in HEADS:
            r = heads.get(head)
            if r is None:
                continue
            lead = f"| {role} | {name} | {n:,} / {r['n_test']:,} | {r['classes']} | {head} |"
            if "fit_s" not in r:
                why = f"not done in {r['stopped']:.0f} s" if "stopped" in r else "failed"
                out.append(f"{lead} {why} | | | | |")
                continue
            ratio = f"{r['fit_s'] / base:.1f}" if base else "-"
            out.append(f"{lead} {r['accuracy']:.3f} | {r['log_loss']:.3f} | {r['ece']:.3f} | "
                       f"{r['fit_s']:.1f} | {ratio} |")
    return out


def main(argv=None) -> None:
    from pipelines.benchmarks.bench_threads import machine, versions
    from pipelines.benchmarks.few_labels import read_runs

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=[*DECIDE, *REPORT])
    parser.add_argument("--heads", nargs="+", default=list(HEADS), choices=HEADS)
    parser.add_argument("--train", type=int, default=None, help="a stratified slice of the training side")
    parser.add_argument("--limit", type=float, default=1800.0, help="seconds one fit may take")
    parser.add_argument("--runs", type=Path, default=RESULTS / "bench_linear_runs.jsonl")
    parser.add_argument("--output", type=Path, default=RESULTS / "bench_linear.md")
    args = parser.parse_args(argv)
    runs = read_runs(args.runs)
    done = {(r["dataset"], r["n_train"], r["head"]) for r in runs}
    command = " ".join(["python pipelines/benchmarks/bench_linear.py",
                        *(argv if argv is not None else sys.argv[1:])])
    for name in args.sets:
        for row in run_set(name, args.train, args.heads, args.limit, done, command):
            with args.runs.open("a") as f:
                f.write(json.dumps(row) + "\n")
            runs.append(row)
    commands = []
    for c in dict.fromkeys(r.get("command", "") for r in runs):
        loads = [r["load_1min"] for r in runs if r.get("command") == c and r.get("load_1min")]
        said = f"{min(loads):.1f} to {max(loads):.1f}" if loads else "not recorded"
        commands.append(f"`{c}` (load average over 1 minute as its fits began: {said})")
    lines = [
        "# The linear heads on TF-IDF: `sgd` against `logreg` and plain LogisticRegression",
        "", "Rows written by " + ", then ".join(commands) + "; every row of "
        f"`{args.runs.relative_to(ROOT) if args.runs.is_relative_to(ROOT) else args.runs}` "
        "(delete it to measure every row again).", "",
        f"Machine: {machine()}. {versions()}. Compare seconds within one set: other jobs may "
        "have shared the cores.", "",
        "One TF-IDF (word 1-2 grams, min_df=2, sublinear tf: the plain baseline's and FLAML's) "
        "per set, fitted on the training side; each head fits the same matrix with one BLAS "
        "thread. Held out: the official test side, else a stratified fifth (seed 0). \"fit s / "
        "sgd's\": the head's fit seconds over the `sgd` head's in the same run. `decide`: the "
        "sets the `sgd` head's defaults were chosen on; `report`: sets only reported.", "",
        "`logreg` against `logreg-lbfgs`, and `plain-lr-saga` against `plain-lr`: the same model "
        "(the same loss and penalty) solved by SAGA and by lbfgs. Since 4a995ed the registry's "
        "logistic heads use SAGA on TF-IDF's unit-norm rows and `embedkit tune` fits its TF-IDF "
        "baseline so; the accuracy is the same to a tenth of a point or two on every set, the "
        "fit seconds are what changes.", "",
        "`nbsvm-stacked` against `nblr`: NBSVM beyond two classes, one multinomial model over "
        "every class's ratio-scaled block (classes x classes x terms coefficients: its solver's "
        "memory grows with the square of the classes) against one two-class model per class on "
        "its own block (classes x terms). On two classes both fit one logistic regression to the "
        "same features (C chosen by accuracy for `logreg-cv`, by log-loss for `nblr`). \"failed\": "
        "the fit's process died (on 20newsgroups lbfgs asked for 25 GiB; on wordnet-glosses "
        "the kernel's out-of-memory killer stopped it at 24 GB resident).", "",
        *table(runs), "", DECIDED]
    args.output.write_text("\n".join(lines))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
