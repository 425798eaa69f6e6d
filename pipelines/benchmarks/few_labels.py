"""Few labels: SetFit (`SetFitClassifier`) against frozen MiniLM + logistic regression and full
fine-tuning (`TransformerClassifier`), with 8, 16, 32 and 64 labelled documents per class.

    PYTHONPATH=. python pipelines/benchmarks/few_labels.py              # the reported run
    PYTHONPATH=. python pipelines/benchmarks/few_labels.py --datasets trec --sizes 8 16 \\
        --seeds 3 --test-size 500 --workers 2
    PYTHONPATH=. python pipelines/benchmarks/few_labels.py --report-only  # tables + plot again
    PYTHONPATH=. python pipelines/benchmarks/few_labels.py --sizes 8 64 --seeds 3 \\
        --large-seeds 1 --methods setfit-mpnet setfit-library --library-budget 2h \\
        --workers 1 --threads 2                      # embedkit's SetFit against SetFit itself
    PYTHONPATH=. python pipelines/benchmarks/few_labels.py --test-size 400 --methods setfit
                                 # the MiniLM SetFit runs again, after its settings changed
    PYTHONPATH=. python pipelines/benchmarks/few_labels.py --test-size 400 --methods vote \
        --sizes 16 32 --workers 1 --threads 2       # the two standing few-label models' vote

Protocol
--------
* Datasets: accuracy-suite sets (`embedkit.load_dataset`), split as the suite splits them
  (`accuracy_suite.split`: the official split, else stratified 80/20 with seed 0); the test side
  is cut to a fixed stratified sample of ``--test-size`` documents (the suite's ``_slice``,
  seed 0) when it is larger, so every method and every run is scored on the same documents.
* Training sets: for each size ``n`` and seed ``s``, ``n`` documents per class drawn from the
  training side (``groupby(label).sample(n, random_state=s)``); every method sees the same ones.
  ``--seeds`` seeds for sizes up to 16, ``--large-seeds`` above (the CPU budget).
* Methods, on the packaged all-MiniLM-L6-v2 but for the one named on mpnet:
  - ``setfit``: the registry's ``setfit`` head (SetFit's own pairs: each distinct pair of one
    class and of two classes once, the smaller side's repeated to the larger's count, at most
    400 steps; 64 word pieces, batch 16, lr 2e-5, one epoch, logistic regression C=1);
  - ``TF-IDF + LR``: the other five-line baseline, scikit-learn's ``TfidfVectorizer`` +
    ``LogisticRegression(max_iter=1000)`` on the same labelled documents;
  - ``frozen + LR``: the accuracy suite's plain baseline, sentence-transformers ``encode`` +
    ``LogisticRegression(max_iter=3000)``;
  - ``frozen + logreg``: the same vectors + the registry's ``logreg`` head (C and scaling chosen
    by inner 3-fold cross-validation);
  - ``frozen mpnet + LR``: the pair `embedkit tune` fits on the base-size encoder, the
    registry's ``mpnet`` (all-mpnet-base-v2, frozen) + ``logreg-cv`` (C by inner 3-fold
    cross-validation);
  - ``vote``: ``setfit`` and ``frozen mpnet + LR`` fitted on the draw, their probabilities
    averaged (the two models `embedkit tune` lets stand where labels are few);
  - ``finetune``: the registry's ``finetune`` head (`TransformerClassifier`, full fine-tuning,
    2 epochs, 128 word pieces).
* Against SetFit itself (issue 47; ``--methods setfit-mpnet setfit-library``), on the same draws
  and the same body, all-mpnet-base-v2 (SetFit's published setting):
  - ``setfit-mpnet``: the registry's ``setfit`` head with ``model="all-mpnet-base-v2"``, its other
    settings as above: what a user of embedkit gets for few labels;
  - ``setfit-library``: SetFit 1.2's ``Trainer`` with its default training arguments and the seed,
    run in the peers' own environment (``.venv-peers``, made by ``./run.sh peers``, or the
    interpreter ``--python`` names; ``pipelines/peers/run_peers.py``'s ``setfit``; each record
    keeps the versions it ran with, and the report says them), with as many torch threads as the workers
    of this run; it has no budget of its own, so its pair training stops at
    ``--library-budget`` (default 30 minutes; the result says whether it did). Its fit seconds
    leave out importing SetFit, as embedkit's leave out importing embedkit.
  A draw either side failed on is left out of the pairing and said in the log.
* Scores: accuracy and macro-F1 on the test sample; fit seconds (wall clock, on a machine shared
  with other jobs: compare them only within a run).

Output (``--output``, default ``pipelines/benchmarks/results``): ``few_labels_runs.jsonl`` (one
line per finished run, with the head's settings and, for SetFit, its pairs; a rerun skips the
runs whose settings are today's and redoes the others: `current`), ``few_labels.csv`` (the
runs), ``few_labels.md`` (mean and standard deviation over seeds per dataset, size and method,
and where SetFit beats every peer; where SetFit itself ran, embedkit's SetFit minus SetFit's,
paired draw by draw, and embedkit's fit time over SetFit's, judged against issue 62's bar of
`WITHIN` = 1.25x) and ``few_labels.png`` (the learning curves).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout
    sys.path.insert(0, str(ROOT))

from pipelines.benchmarks import accuracy_suite as suite  # noqa: E402  (after the path)

DATASETS = ("sms-spam", "vader-tweets", "rotten-tomatoes", "disaster-tweets")
SIZES = (8, 16, 32, 64)
SETFIT, FROZEN, FROZEN_CV, FINETUNE = "setfit", "frozen + LR", "frozen + logreg", "finetune"
#: the other five-line baseline, scikit-learn's TF-IDF + LogisticRegression on the same draws
TFIDF = "TF-IDF + LR"
#: the base-size encoder's frozen pair as `embedkit tune` fits it: the registry's ``mpnet`` +
#: ``logreg-cv``
FROZEN_MPNET = "frozen mpnet + LR"
#: the two models `embedkit tune` lets stand where labels are few, their probabilities averaged:
#: SetFit (MiniLM) and frozen mpnet + LR, fitted on the same draw
VOTE = "vote"
METHODS = (SETFIT, TFIDF, FROZEN, FROZEN_CV, FROZEN_MPNET, VOTE, FINETUNE)
#: the methods the job of a dataset's baselines records (one job: the test sample encoded once)
BASELINES = (TFIDF, FROZEN, FROZEN_CV, FROZEN_MPNET)
#: embedkit's SetFit against SetFit 1.2 itself, both on this body
BODY = "all-mpnet-base-v2"
OURS, LIBRARY = "setfit-mpnet", "setfit-library"
#: the trained methods ``--methods`` chooses from (the baselines always run)
TRAINED = (SETFIT, VOTE, FINETUNE, OURS, LIBRARY)
RUNS = "few_labels_runs.jsonl"
#: the run of the section that pairs embedkit's SetFit with SetFit's own (the docstring's)
LIBRARY_SIZES = (8, 64)
#: issue 62's bar: embedkit's SetFit fits in at most this many times SetFit's own fit time
WITHIN = 1.25
#: (SetFit's own training takes about an hour at 64 per class on two cores: its budget is 2 hours)
LIBRARY_COMMAND = ("PYTHONPATH=. python pipelines/benchmarks/few_labels.py --sizes "
                   + " ".join(map(str, LIBRARY_SIZES)) + " --seeds 3 --large-seeds 1 "
                   "--methods setfit-mpnet setfit-library --library-budget 2h --workers 1 "
                   "--threads 2")


def data(name: str, test_size: int):
    """(train side, fixed test sample) of dataset ``name``, as the accuracy suite splits it."""
    from embedkit.data.datasets import load_dataset

    train, test, _ = suite.split(load_dataset(name))
    return train, suite._slice(test, test_size).reset_index(drop=True)


def labelled(train: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """``n`` training documents per class, drawn with ``seed``."""
    return train.groupby("label").sample(n, random_state=seed).reset_index(drop=True)


def _scores(y_true, pred) -> dict:
    from sklearn.metrics import accuracy_score, f1_score

    return {"accuracy": float(accuracy_score(y_true, pred)),
            "f1_macro": float(f1_score(y_true, pred, average="macro"))}


def _threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)


def run_frozen(name: str, runs: list[tuple[int, int, tuple]], test_size: int) -> list[dict]:
    """The baselines each (size, seed, methods) of ``name`` lacks: scikit-learn's TF-IDF + LR
    and the frozen ones (the test sample encoded once by each encoder that is to run); a
    baseline recorded already is not run again (the frozen ones' vectors vary in their last
    digits with the encoder's threads, which may change the inner CV's pick)."""
    from sklearn.base import clone
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from embedkit.heads import LogisticRegressionHead as logreg_head
    from embedkit.registry import HEADS, REPRESENTATIONS

    train, test = data(name, test_size)
    # method -> (the encoder's name, the head)
    frozen = {FROZEN: ("minilm", LogisticRegression(max_iter=3000)), FROZEN_CV: ("minilm", logreg_head()),
              FROZEN_MPNET: ("mpnet", HEADS["logreg-cv"].factory())}
    wanted = {frozen[m][0] for _, _, methods in runs for m in methods if m in frozen}
    make = {"minilm": suite.SentenceTransformerEncoder, "mpnet": REPRESENTATIONS["mpnet"].factory}
    encoders = {e: make[e]().fit(test["text"].tolist()) for e in wanted}  # frozen: fit loads
    test_vectors = {e: enc.transform(test["text"].tolist()) for e, enc in encoders.items()}
    out = []
    for n, seed, methods in runs:
        part = labelled(train, n, seed)
        draw = {"dataset": name, "n_per_class": n, "seed": seed, "n_train": len(part),
                "n_test": len(test)}
        if TFIDF in methods:
            start = time.perf_counter()
            tfidf = make_pipeline(TfidfVectorizer(), LogisticRegression(max_iter=1000))
            tfidf.fit(part["text"].tolist(), part["label"])
            out.append({**draw, "method": TFIDF, **_scores(test["label"], tfidf.predict(
                test["text"].tolist())), "fit_seconds": time.perf_counter() - start})
        vectors, encode_s = {}, {}
        for method in (m for m in frozen if m in methods):
            encoder, head = frozen[method]
            if encoder not in vectors:
                start = time.perf_counter()
                vectors[encoder] = encoders[encoder].transform(part["text"].tolist())
                encode_s[encoder] = time.perf_counter() - start
            start = time.perf_counter()
            model = clone(head).fit(vectors[encoder], part["label"])
            out.append({**draw, "method": method, **_scores(test["label"], model.predict(
                test_vectors[encoder])), "fit_seconds": encode_s[encoder] + time.perf_counter() - start})
    return out


def tuned_head(method: str, seed: int = 0):
    """The registry's ``setfit`` or ``finetune`` head (``setfit-mpnet``: ``setfit`` on `BODY`)
    with ``seed``, unfitted."""
    from embedkit import registry

    body = {"model": BODY} if method == OURS else {}
    return registry.HEADS[method if method in (SETFIT, FINETUNE) else SETFIT].factory().set_params(
        random_state=seed, **body)


def settings(method: str) -> dict:
    """What a run of ``method`` is, beyond its draw: the head's parameters (not the seed, the
    device or the verbosity); ``{}`` for the frozen baselines and SetFit itself (pinned by the
    peers' environment). A record keeps the settings it ran with (`current`)."""
    if method not in (SETFIT, FINETUNE, OURS, VOTE):
        return {}
    return {k: v for k, v in sorted(tuned_head(method).get_params(deep=False).items())
            if k not in ("random_state", "device", "verbose")
            and (v is None or isinstance(v, (str, int, float, bool)))}


#: what the tuned runs written before records kept their settings ran with, where it differs
#: from today's: SetFit's 20 pair rounds, before issue 62 made SetFit's own pairs the default
UNRECORDED = {SETFIT: {"num_iterations": 20}, OURS: {"num_iterations": 20}}


def current(records: list[dict]) -> list[dict]:
    """The records of runs with today's `settings`, the latest of each (dataset, size, seed,
    method): a run with other settings (an earlier default) is neither reported nor counted as
    done, so the next run redoes it. A parameter added since a record was written ran as its
    default does (a new parameter's default keeps what ran before), so it does not count."""
    now = {m: settings(m) for m in {r["method"] for r in records}}
    latest = {}
    for r in records:
        ran = {**now[r["method"]], **r["settings"]} if "settings" in r else {
            **now[r["method"]], **UNRECORDED.get(r["method"], {})}
        if ran == now[r["method"]]:
            latest[(r["dataset"], r["n_per_class"], r["seed"], r["method"])] = r
    return list(latest.values())


def run_tuned(name: str, n: int, seed: int, method: str, test_size: int) -> list[dict]:
    """`tuned_head` of ``method`` fitted on one labelled draw; SetFit's record says its pairs.
    `VOTE`: SetFit's and frozen mpnet + LR's probabilities on the test sample, averaged."""
    train, test = data(name, test_size)
    part = labelled(train, n, seed)
    model = tuned_head(method, seed)
    start = time.perf_counter()
    model.fit(part["text"].tolist(), part["label"].to_numpy())
    if method == VOTE:
        from embedkit.registry import HEADS, REPRESENTATIONS, pair_pipeline

        mpnet = pair_pipeline(REPRESENTATIONS["mpnet"].factory(), HEADS["logreg-cv"].factory())
        mpnet.fit(part["text"].tolist(), part["label"].to_numpy())
        assert list(mpnet.classes_) == list(model.classes_)
    fit_s = time.perf_counter() - start
    if method == VOTE:
        proba = (model.predict_proba(test["text"].tolist())
                 + mpnet.predict_proba(test["text"].tolist())) / 2
        pred = model.classes_[proba.argmax(axis=1)]
    else:
        pred = model.predict(test["text"].tolist())
    pairs = {"n_pairs": int(model.n_pairs_)} if hasattr(model, "n_pairs_") else {}
    return [{"dataset": name, "n_per_class": n, "seed": seed, "method": method,
             **_scores(test["label"], pred), "fit_seconds": fit_s, "n_train": len(part),
             "n_test": len(test), "settings": settings(method), **pairs}]


def run_library(name: str, n: int, seed: int, test_size: int, budget_s: float, out: Path,
                python: Path | None = None) -> list[dict]:
    """SetFit 1.2 itself on `BODY`, fitted on the draw `run_tuned` fits on, in the peers'
    environment (``python``, default ``.venv-peers``), with this worker's torch threads.

    Raises
    ------
    RuntimeError
        The run failed: the message names the draw and the log.
    """
    import torch

    from pipelines.benchmarks import peers

    train, test = data(name, test_size)
    split = out / "library" / "splits" / f"{name}-{n}-seed{seed}"
    split.mkdir(parents=True, exist_ok=True)
    for side, frame in (("train", labelled(train, n, seed)), ("test", test)):
        frame[["text", "label"]].to_parquet(split / f"{side}.parquet", index=False)
    row = peers.run_peer(peers.peers_python(python), "setfit", split,
                         {"dataset": name, "protocol": f"{n} per class, seed {seed}"}, budget_s,
                         seed, out / "library", threads=torch.get_num_threads())  # the pool's
    if "error" in row:
        raise RuntimeError(f"SetFit on {name}, {n} per class, seed {seed}: {row['error']} "
                           f"(log: {row['log']})")
    return [{"dataset": name, "n_per_class": n, "seed": seed, "method": LIBRARY,
             "accuracy": row["accuracy"], "f1_macro": row["f1_macro"],
             "fit_seconds": row["wall_s"] - row.get("import_s", 0.0), "n_train": row["n_train"],
             "n_test": row["n_test"],
             "stopped_by_budget": bool(row.get("details", {}).get("stopped_by_budget", False)),
             "peak_mb": row["peak_mb"], "versions": row.get("versions", {})}]


def read_runs(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def jobs(datasets, sizes, seeds: int, large_seeds: int, done: set,
         methods=(SETFIT, FINETUNE)) -> list[tuple]:
    """Every run not yet in ``done``: the baselines first (one job per dataset), then the
    trained ``methods``: seed by seed for the sizes up to 16 (8 and 16 per class with seed 0, then
    with seed 1, ...), then the larger sizes, so an interrupted run has the rows that matter most."""
    small = [n for n in sizes if n <= 16]
    draws = [(n, s) for s in range(seeds) for n in small]
    draws += [(n, s) for n in sizes if n > 16 for s in range(large_seeds)]
    out = []
    for name in datasets:
        todo = [(n, s, missing) for n, s in draws
                if (missing := tuple(m for m in BASELINES if (name, n, s, m) not in done))]
        if todo:
            out.append((0, "frozen", name, todo))
    for n, s in draws:
        for name in datasets:
            for method in methods:
                if (name, n, s, method) not in done:
                    out.append((n, method, name, (n, s)))
    return out


def run(datasets, sizes, seeds: int, large_seeds: int, test_size: int, workers: int,
        threads: int, out: Path, methods=(SETFIT, FINETUNE), library_budget: float = 1800.0,
        python: Path | None = None) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    path = out / RUNS
    ran = read_runs(path)
    done = {(r["dataset"], r["n_per_class"], r["seed"], r["method"]) for r in current(ran)}
    todo = jobs(datasets, sizes, seeds, large_seeds, done, methods)
    print(f"{len(todo)} jobs to run ({len(done)} runs with today's settings in {path}, of "
          f"{len(ran)} records)", flush=True)
    import multiprocessing

    # spawned, not forked: a forked worker hangs in the Trainer (torch's thread pools do not
    # survive fork)
    with ProcessPoolExecutor(max_workers=workers, initializer=_threads, initargs=(threads,),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {}
        for _, kind, name, arg in todo:
            if kind == "frozen":
                futures[pool.submit(run_frozen, name, arg, test_size)] = (kind, name, arg)
            elif kind == LIBRARY:
                futures[pool.submit(run_library, name, arg[0], arg[1], test_size, library_budget,
                                    out, python)] = (kind, name, arg)
            else:
                futures[pool.submit(run_tuned, name, arg[0], arg[1], kind, test_size)] = \
                    (kind, name, arg)
        for future in as_completed(futures):
            try:
                records = future.result()
            except Exception as err:  # one failed run does not end the others; a rerun retries it
                kind, name, arg = futures[future]
                print(f"{name:16s} {kind} {arg}: failed: {err}", flush=True)
                continue
            with path.open("a") as fh:
                for record in records:
                    fh.write(json.dumps(record) + "\n")
            for r in records:
                print(f"{r['dataset']:16s} n={r['n_per_class']:<3d} seed={r['seed']} "
                      f"{r['method']:16s} acc={r['accuracy']:.3f} f1={r['f1_macro']:.3f} "
                      f"fit={r['fit_seconds']:.0f}s", flush=True)
    return current(read_runs(path))


# --- report ---------------------------------------------------------------------------------

def paired(runs: pd.DataFrame) -> pd.DataFrame:
    """Where SetFit ran, only the draws (seeds) it ran on, for every method: the methods are
    compared on the same labelled documents; elsewhere every run."""
    ran = runs[runs.method == SETFIT][["dataset", "n_per_class", "seed"]].drop_duplicates()
    has = runs.set_index(["dataset", "n_per_class"]).index.isin(
        ran.set_index(["dataset", "n_per_class"]).index)
    return pd.concat([runs[has].merge(ran, on=["dataset", "n_per_class", "seed"]), runs[~has]])


def summary(runs: pd.DataFrame, metric: str = "accuracy") -> pd.DataFrame:
    """Mean and standard deviation over seeds per (dataset, size, method), one row per
    (dataset, size), plus SetFit's margin over the better peer and the number of seeds.

    ``runs`` as `paired` gives them."""
    g = runs.groupby(["dataset", "n_per_class", "method"])[metric]
    mean, std = g.mean().unstack("method"), g.std(ddof=0).unstack("method")
    seeds = runs.groupby(["dataset", "n_per_class"]).seed.nunique()
    table = pd.DataFrame(index=mean.index)
    for method in METHODS:
        if method in mean:
            table[method] = mean[method]
            table[f"{method} sd"] = std[method]
    peers = [m for m in (TFIDF, FROZEN, FROZEN_CV, FROZEN_MPNET, FINETUNE) if m in mean]
    if SETFIT in mean and peers:
        table["setfit - best peer"] = mean[SETFIT] - mean[peers].max(axis=1)
    table["seeds"] = seeds
    return table


def _markdown(table: pd.DataFrame) -> str:
    rows = []
    methods = [m for m in METHODS if m in table]
    head = ["dataset", "n/class", *methods, "setfit - best peer", "seeds"]
    rows.append("| " + " | ".join(head) + " |")
    rows.append("|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|")
    for (name, n), row in table.iterrows():
        cells = [name, str(n)]
        for m in methods:
            sd = row[f"{m} sd"]
            cells.append("–" if pd.isna(row[m]) else
                         f"{100 * row[m]:.1f}" + (f" ± {100 * sd:.1f}" if row["seeds"] > 1 else ""))
        margin = row.get("setfit - best peer", np.nan)
        cells.append("" if pd.isna(margin) else f"{100 * margin:+.1f}")
        cells.append(f"{int(row['seeds'])}" if pd.notna(row["seeds"]) else "")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def wins(table: pd.DataFrame, sizes=(8, 16)) -> str:
    """Per size: on how many datasets SetFit's mean beats every peer's mean."""
    lines = []
    for n in sizes:
        part = table.xs(n, level="n_per_class") if n in table.index.get_level_values(1) else None
        if part is None or "setfit - best peer" not in part:
            continue
        won = part.index[part["setfit - best peer"] > 0].tolist()
        lines.append(f"* {n} per class: SetFit beats every peer on {len(won)} of {len(part)} "
                     f"datasets ({', '.join(won) or 'none'}).")
    return "\n".join(lines)


def against_library(runs: pd.DataFrame) -> pd.DataFrame:
    """embedkit's SetFit (``setfit-mpnet``) against SetFit itself (``setfit-library``) per
    (dataset, size), on the draws both finished: each one's mean accuracy and macro-F1, embedkit's
    minus SetFit's paired draw by draw (mean and its standard error over the draws; none from one
    draw), mean fit seconds and their ratio (embedkit's over SetFit's), the draws, and how many
    of SetFit's runs the budget stopped."""
    both = runs[runs.method.isin((OURS, LIBRARY))]
    if both.method.nunique() < 2:  # nothing to pair yet
        return pd.DataFrame()
    wide = both.pivot_table(index=["dataset", "n_per_class", "seed"], columns="method",
                            values=["accuracy", "f1_macro", "fit_seconds"]).dropna()
    stopped = {(r.dataset, r.n_per_class, r.seed) for r in both[both.method == LIBRARY].itertuples()
               if getattr(r, "stopped_by_budget", False) in (True,)}  # NaN where absent
    rows = {}
    for key, part in wide.groupby(level=["dataset", "n_per_class"]):
        row = {}
        for metric in ("accuracy", "f1_macro"):
            diff = part[(metric, OURS)] - part[(metric, LIBRARY)]
            row[f"{metric} ours"] = part[(metric, OURS)].mean()
            row[f"{metric} library"] = part[(metric, LIBRARY)].mean()
            row[f"{metric} diff"] = diff.mean()
            row[f"{metric} se"] = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else np.nan
        row["fit s ours"] = part[("fit_seconds", OURS)].mean()
        row["fit s library"] = part[("fit_seconds", LIBRARY)].mean()
        row["fit ratio"] = row["fit s ours"] / row["fit s library"]
        row["draws"] = len(part)
        row["stopped"] = sum(key in stopped for key in part.index)
        rows[key] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.names = ["dataset", "n_per_class"]
    return table


def _library_markdown(table: pd.DataFrame) -> str:
    head = ["dataset", "n/class", "embedkit acc.", "SetFit acc.", "embedkit − SetFit (points)",
            "embedkit macro-F1", "SetFit macro-F1", "embedkit − SetFit (points)",
            "fit s embedkit", "fit s SetFit", "fit time embedkit / SetFit", "draws",
            "SetFit stopped by budget"]
    rows = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * 11) + "|"]
    for (name, n), row in table.iterrows():
        cells = [name, str(n)]
        for metric in ("accuracy", "f1_macro"):
            se = row[f"{metric} se"]
            cells += [f"{100 * row[f'{metric} ours']:.1f}", f"{100 * row[f'{metric} library']:.1f}",
                      f"{100 * row[f'{metric} diff']:+.1f}" + ("" if pd.isna(se) else f" ± {100 * se:.1f}")]
        cells += [f"{row['fit s ours']:.0f}", f"{row['fit s library']:.0f}",
                  f"{row['fit ratio']:.2f}x", str(int(row["draws"])), str(int(row["stopped"]))]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def library_verdict(table: pd.DataFrame) -> str:
    """Per size: of the cells of several draws, those where embedkit's SetFit is behind
    SetFit's by more than one standard error of the paired difference, by accuracy; the cells of
    one draw, which have no standard error, apart, each with its difference (counting them as not
    behind would call a single draw's gap noise unmeasured); and the cells where its mean fit
    time is more than `WITHIN` times SetFit's."""
    lines = []
    for n in sorted(set(table.index.get_level_values("n_per_class"))):
        part = table.xs(n, level="n_per_class")
        several = part[part["accuracy se"].notna()]
        behind = several.index[several["accuracy diff"] < -several["accuracy se"]].tolist()
        single = part[part["accuracy se"].isna()]
        slower = part.index[part["fit ratio"] > WITHIN].tolist()
        text = (f"* {n} per class: embedkit's SetFit behind SetFit's by more than one standard error "
                f"on {len(behind)} of {len(several)} datasets of several draws "
                f"({', '.join(behind) or 'none'})")
        text += ("; one draw only, no standard error: " + ", ".join(
            f"{name} {100 * diff:+.1f} points" for name, diff in single["accuracy diff"].items())
            if len(single) else "")
        lines.append(text + f"; fit time within {WITHIN:g}x of SetFit's on "
                     f"{len(part) - len(slower)} of {len(part)} (over it: "
                     f"{', '.join(slower) or 'none'}).")
    return "\n".join(lines)


def chart(runs: pd.DataFrame, path: Path, metric: str = "accuracy") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(runs["dataset"]))
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        part = runs[runs.dataset == name]
        for method in METHODS:
            rows = part[part.method == method]
            if rows.empty:
                continue
            g = rows.groupby("n_per_class")[metric]
            ax.errorbar(g.mean().index, 100 * g.mean(), yerr=100 * g.std(ddof=0).fillna(0),
                        marker="o", capsize=3, label=method)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(part.n_per_class.unique()))
        ax.set_xticklabels(sorted(part.n_per_class.unique()))
        ax.set_title(name)
        ax.set_xlabel("labelled documents per class")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"test {metric} (%)")
    axes[0][-1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _settings_text(method: str) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings(method).items())


def _library_versions(runs: pd.DataFrame) -> str:
    """The packages SetFit's runs ran with, as their records say (each distinct set once)."""
    column = runs.loc[runs.method == LIBRARY, "versions"] if "versions" in runs else pd.Series([])
    found = [v for v in column if isinstance(v, dict) and v]
    sets = sorted({", ".join(f"{k} {v}" for k, v in sorted(one.items())) for one in found})
    text = "; ".join(sets) if sets else "not recorded"
    if 0 < len(found) < len(column):
        text += f" ({len(column) - len(found)} earlier runs recorded none)"
    return f"SetFit's side ran with: {text}."


def report(out: Path) -> pd.DataFrame:
    records = read_runs(out / RUNS)
    runs = pd.DataFrame(current(records))
    if runs.empty:
        raise SystemExit(f"no runs in {out / RUNS}")
    ran = runs = runs.sort_values(["dataset", "n_per_class", "seed", "method"])
    runs.drop(columns=["settings", "versions"], errors="ignore").to_csv(out / "few_labels.csv",
                                                                       index=False)
    library = against_library(runs)
    runs = runs[runs.method.isin(METHODS)]
    acc, f1 = summary(paired(runs)), summary(paired(runs), "f1_macro")
    n_test = runs.groupby("dataset").n_test.first()
    text = ["# Few labels: SetFit vs TF-IDF + LR, frozen MiniLM or mpnet + LR and full fine-tuning", "",
            ("Written by `pipelines/benchmarks/few_labels.py` (protocol in its docstring). Where "
             "SetFit ran, every method is scored on the same draws (seeds) of labelled documents; "
             "rows without SetFit are the baselines alone."), ""]
    if len(records) > len(ran):
        text += [f"{len(records) - len(ran)} of the {len(records)} records in `{RUNS}` are runs "
                 "redone since (or of earlier settings, to redo): left out.", ""]
    text += ["Test documents per dataset: " + ", ".join(f"{k} {v}" for k, v in n_test.items())
             + ". Mean over seeds (± standard deviation), in %.", "",
             "## Accuracy", "", _markdown(acc), "", wins(acc), "",
             "## Macro-F1", "", _markdown(f1), "", wins(f1), "",
             "![learning curves](few_labels.png)", ""]
    pairing = ran[ran.method.isin((OURS, LIBRARY))]
    if not pairing.empty:
        tested = pairing.groupby("dataset").n_test.unique()
        text += [f"## embedkit's SetFit against SetFit itself, both on {BODY}", "",
                 f"Command: `{LIBRARY_COMMAND}`.", "",
                 ("`setfit-mpnet` (the registry's `setfit` head on this body) and SetFit 1.2's "
                  "`Trainer` with its default arguments, on the same draws and the same test documents ("
                  + ", ".join(f"{k} {'/'.join(map(str, v))}" for k, v in tested.items())
                  + " test documents, its `--test-size`); differences are paired draw by draw "
                  "(± their standard error over the draws). Fit seconds leave out the imports."),
                 "",
                 f"embedkit's `setfit` head: {_settings_text(OURS)}. {_library_versions(ran)}",
                 ""]
        if not library.empty:
            text += [_library_markdown(library), "", library_verdict(library), ""]
        both = set(library.index)  # the cells where both ran a draw
        missing = [f"{name} at {', '.join(map(str, lack))}" for name in sorted(set(pairing.dataset))
                   if (lack := [n for n in LIBRARY_SIZES if (name, n) not in both])]
        if missing:
            text += [f"Not measured yet: {'; '.join(missing)} per class (the command above adds "
                     "them; it resumes, skipping the cells its runs file holds).", ""]
    (out / "few_labels.md").write_text("\n".join(text))
    chart(paired(runs), out / "few_labels.png")
    print("\n".join(text))
    return runs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--seeds", type=int, default=3, help="seeds per size up to 16")
    parser.add_argument("--large-seeds", type=int, default=1, help="seeds per size above 16")
    parser.add_argument("--test-size", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    parser.add_argument("--methods", nargs="+", choices=TRAINED, default=[SETFIT, FINETUNE],
                        help="the trained methods to run (default: setfit finetune); "
                             "setfit-mpnet setfit-library: embedkit's SetFit against SetFit itself")
    parser.add_argument("--library-budget", default="30m",
                        help="where SetFit's own pair training stops (it has no budget of its own)")
    parser.add_argument("--python", type=Path, default=None,
                        help="the peers' interpreter for setfit-library (default: .venv-peers)")
    parser.add_argument("--output", default=str(ROOT / "pipelines" / "benchmarks" / "results"))
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    out = Path(args.output)
    if not args.report_only:
        from embedkit._budget import parse_budget

        run(args.datasets, args.sizes, args.seeds, args.large_seeds, args.test_size, args.workers,
            args.threads, out, tuple(args.methods), parse_budget(args.library_budget), args.python)
    report(out)


if __name__ == "__main__":
    main()
