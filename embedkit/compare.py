"""`embedkit compare`: score representation x head pipelines on one dataset and write a report.

Cross-validates (stratified k-fold) on datasets without an official split, and trains on
``train`` / scores on ``test`` where the dataset defines one (TREC). Every report carries the
baselines a user would write in five lines (`embedkit.experiments.BASELINES`: the majority class,
plain TF-IDF + LogisticRegression, plain MiniLM + LogisticRegression), scored on the same splits.

The run uses the whole machine: each (representation, fold) is one job, and ``n_jobs`` of them
(all cores by default) run at once in worker processes under the thread policy
(`embedkit.machine.plan_threads`): each worker gets ``cores // n_jobs`` torch and tokenizer
threads and one BLAS thread, so the cores are not oversubscribed. A representation whose vectors
do not depend on the training fold (a pretrained Transformer) is encoded once, in this process,
into a run-scoped disk cache that every worker reads; nothing is encoded twice. Scores equal
those of ``n_jobs=1``: the same jobs run on the same data, and gensim trains with ``workers=1``
(the registry's setting; more gensim workers reorder updates and change vectors run to run).

Scores of each finished fold are kept in ``<output>/folds.jsonl`` and of each finished pipeline
in ``runs.jsonl``, so an interrupted run resumes where it stopped, losing at most the folds in
progress.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from . import experiments
from ._compare_data import as_regression, multilabel_target, table_roles
from ._suggest import did_you_mean
from .base import needs_classes, output_form, takes_cache
from .data.columns import take
from .data.datasets import is_multilabel
from .data.targets import (
    DEFAULT_METRICS,
    MULTILABEL_METRICS,
    REGRESSION_METRICS,
    infer_task,
    numeric_target,
    scorers,
    split_label_sets,
)
from .machine import (
    PeakRSS,
    ThreadPlan,
    Threads,
    available_cores,
    collecting_new_objects,
    largest_process_mb,
    plan_threads,
)
from .representations.table import on_table, text_only


def _score_fold(representation, heads: dict, X_train, y_train, X_test, y_test,
                scoring: dict | None = None, plan: ThreadPlan | None = None) -> dict:
    """Fit ``representation`` once on one fold, then every head on its features.

    Scores equal those of ``Pipeline([representation, head])`` fitted on the fold; sharing the
    representation's fit between heads is what makes a multi-head comparison affordable.
    Returns ``{head name: scores and timings}``; ``fit_seconds`` is the pipeline's (the
    representation's ``fit_transform`` plus the head's ``fit``), ``transform_seconds`` the
    representation on the test documents, ``predict_seconds`` the head's predictions on those
    features and their scoring, ``peak_mb`` the growth of peak resident memory over the fold's
    start. The fold runs under ``plan``'s threads (`embedkit.machine.ThreadPlan`; None: leave
    them).
    """
    from sklearn.base import clone
    from sklearn.metrics import check_scoring

    scoring = scoring or scorers()[0]
    with plan.block() if plan is not None else Threads(None), collecting_new_objects():
        with PeakRSS() as rep_mem:
            start = time.perf_counter()
            if isinstance(representation, str) and representation == "passthrough":
                train_features, fit_s = X_train, 0.0
                test_features, transform_s = X_test, 0.0
            else:
                rep = clone(representation)
                train_features = rep.fit_transform(X_train, y_train)
                fit_s = time.perf_counter() - start
                start = time.perf_counter()
                test_features = rep.transform(X_test)
                transform_s = time.perf_counter() - start
        out = {}
        for name, head in heads.items():
            with PeakRSS() as head_mem:
                model = clone(head)
                start = time.perf_counter()
                model.fit(train_features, y_train)
                head_fit_s = time.perf_counter() - start
                start = time.perf_counter()
                scores = check_scoring(model, scoring=scoring)(model, test_features, y_test)
                predict_s = time.perf_counter() - start
            peak = max(rep_mem.peak, head_mem.peak) - rep_mem.start
            out[name] = {**{m: float(v) for m, v in scores.items()},
                         "fit_seconds": fit_s + head_fit_s, "transform_seconds": transform_s,
                         "predict_seconds": predict_s, "peak_mb": peak / 2**20}
    return out


def _job(task: int, representation, heads, X_train, y_train, X_test, y_test, scoring, plan):
    return task, _score_fold(representation, heads, X_train, y_train, X_test, y_test, scoring,
                             plan)


def _splits(df: pd.DataFrame, folds: int, seed: int, holdout: float | None = None,
            task: str = "classification"):
    if task != "classification" and not ("split" in df and set(df["split"]) >= {"train", "test"}):
        from sklearn.model_selection import KFold, train_test_split

        if holdout is not None:  # numbers and label sets are not stratified: plain shuffled splits
            train, test = train_test_split(np.arange(len(df)), test_size=holdout,
                                           random_state=seed)
            return [(np.sort(train), np.sort(test))], f"{holdout:.0%} holdout"
        cv = KFold(n_splits=folds, shuffle=True, random_state=seed)
        return list(cv.split(np.zeros(len(df)))), f"{folds}-fold CV"
    if "split" in df and set(df["split"]) >= {"train", "test"}:
        train = np.flatnonzero(df["split"].to_numpy() == "train")
        test = np.flatnonzero(df["split"].to_numpy() == "test")
        return [(train, test)], "official test split"
    if holdout is not None:
        from sklearn.model_selection import train_test_split

        if not 0 < holdout < 1:
            raise ValueError(f"holdout={holdout!r}; use a fraction between 0 and 1, e.g. 0.2.")
        train, test = train_test_split(np.arange(len(df)), test_size=holdout, random_state=seed,
                                       stratify=df["label"])
        return [(np.sort(train), np.sort(test))], f"stratified {holdout:.0%} holdout"
    from sklearn.model_selection import StratifiedKFold

    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return list(cv.split(np.zeros(len(df)), df["label"])), f"{folds}-fold stratified CV"


def _signature(step) -> str:
    """Short digest of a step's parameters: part of a result's key, so a changed setting
    (``-p``, a new default) is never served a result recorded for another."""
    from .cache import fingerprint

    if isinstance(step, str):
        return step
    return fingerprint(step, fitted=False)[:10]


def _fold_independent(rep, X, store) -> bool:
    """True when ``rep``'s vectors do not depend on the documents it is fitted on (pretrained
    encoders): two fits on different documents give the same cache fingerprint. Only a class
    whose cache identity is its weights (it overrides ``_cache_identity``) can qualify; the
    others' identity is their fitted state, which follows the documents. Cheap: each fit sees
    16 documents."""
    from sklearn.base import clone

    from .base import Representation
    from .cache import fingerprint

    if not isinstance(rep, Representation) or "cache" not in rep.get_params(deep=False):
        return False
    if type(rep)._cache_identity is Representation._cache_identity:
        return False
    if output_form(rep) not in ("pooled", "sequence") or len(X) < 32:
        return False
    a = clone(rep).set_params(cache=store).fit(X[:16])
    b = clone(rep).set_params(cache=store).fit(X[16:32])
    return fingerprint(a) == fingerprint(b)


def _encode_once(rep, X, store, chunk: int = 1024) -> float:
    """Encode every document of ``X`` into ``store`` (in chunks, bounding memory); seconds."""
    from sklearn.base import clone

    start = time.perf_counter()
    fitted = clone(rep).set_params(cache=store).fit(X[:16])
    for begin in range(0, len(X), chunk):
        fitted.transform(X[begin:begin + chunk])
    return time.perf_counter() - start


def run_compare(dataset: str | pd.DataFrame = "bbc-news", representations=None, heads=None,
                folds: int = 5, output: str | Path = "embedkit-results", seed: int = 0,
                quick: bool = False, progress: bool = True, dataset_name: str | None = None,
                n_jobs: int | None = None, experiment: str | None = None,
                holdout: float | None = None, params=(), metrics=None,
                pos_label=None, baselines: bool = True, task: str | None = None,
                text_columns=None, categorical=None, numeric=None):
    """Score every compatible (representation, head) pair and the baselines; write the report.

    Each representation is fitted once per fold and its features feed every head paired with
    it (the scores are those of the corresponding `Pipeline`).

    Parameters
    ----------
    dataset : str or DataFrame, default="bbc-news"
        A built-in dataset name or a DataFrame with ``text`` and ``label`` (and ``split``).
    representations, heads : list of str, optional
        Names or aliases from `embedkit.registry.REPRESENTATIONS` / `HEADS`; defaults when None.
    folds : int, default=5
    output : path, default="embedkit-results"
        Folder for results.csv, results.md, results.png, results_time.png and report.html.
    seed : int, default=0
    quick : bool, default=False
        A stratified sample of 300 documents, 3 folds and the quick selection: a smoke run.
    progress : bool, default=True
        A progress bar, on a terminal only (never in a log file).
    n_jobs : int, optional
        Jobs (one per representation and fold) run at once; None means every core this process
        may use (`available_cores`), 1 runs them one after another in this process. Inside
        ``embedkit.distributed.dask_backend`` pass -1: they run on the Dask cluster.
    experiment : str or Path, optional
        A built-in experiment (``course_comparison``, ``representations_only``) or an
        experiment file (`embedkit.experiments.load_experiment`) instead of a representation x
        head selection.
    holdout : float, optional
        Score on one stratified held-out fraction (e.g. 0.2) instead of k-fold CV, for slow
        experiments; ignored where the dataset has an official test split.
    params : list of str, optional
        Step parameters ``"[step.]name=value"``, e.g. ``["head.epochs=3",
        "features.pooling=sif"]`` (`embedkit.experiments.Experiment.with_params`); checked before
        any work.
    metrics : list of str, optional
        scikit-learn scorer names; the first ranks the rows and is charted (`scorers`). By
        default `DEFAULT_METRICS` (accuracy, macro-F1); on a
        multi-label dataset (``label`` holds a list of labels per row) the default is
        `MULTILABEL_METRICS`: micro-, macro- and samples-F1.
    pos_label : optional
        The positive class of ``f1`` / ``precision`` / ``recall`` / ... on a two-class dataset;
        the minority class by default.
    baselines : bool, default=True
        Add the rows of `embedkit.experiments.BASELINES` (majority class, plain TF-IDF + LR,
        plain MiniLM + LR), marked ``kind="baseline"``; on a numeric target the mean, plain
        TF-IDF + Ridge and plain MiniLM + Ridge.
    text_columns : list of str, optional
        For a table (a DataFrame with feature columns beside ``label`` and ``split``, such as
        `embedkit.data.reading.load_table` reads): the columns that hold text; the others' kinds are read
        from the values (`embedkit.data.columns.infer_columns`). Every representation then reads the
        whole table (`embedkit.TableEmbedder`: each text column through it, the categorical ones
        one-hot, the numeric ones scaled; a representation of sequences or a head that reads raw
        text gets the columns joined into one text), and the baselines read the first text
        column only, as five lines would.
    categorical, numeric : list of str, optional
        For a table: the columns of these roles, where their values would read otherwise (a zip
        code as a category).
    task : {"classification", "regression", "multilabel"}, optional
        What ``label`` holds; read from its values by default (`embedkit.data.targets.infer_task`). On
        a number every head runs as its regressor (`embedkit.registry.for_task`; a head without one
        is left out with a note), the folds are plain shuffled k-fold and the default metrics
        are `embedkit.data.targets.REGRESSION_METRICS` (RMSE, MAE, R²).

    Returns
    -------
    pandas.DataFrame, one row per pipeline, best first by the first metric.
    """
    import shutil

    from .cache import DiskCache
    from .report import write_report

    wall = time.perf_counter()
    default_metrics = metrics is None
    metrics = list(metrics or DEFAULT_METRICS)
    scorers(metrics)  # names checked before any work
    rows_wanted, reps, hds = _rows_wanted(representations, heads, quick, experiment, params,
                                          baselines)
    df, dataset_name = _dataset(dataset, dataset_name)
    if quick:
        from .data.datasets import stratified_sample

        df = stratified_sample(df, 300, seed).reset_index(drop=True)
        folds = min(folds, 3)
    task = infer_task(df["label"], task)
    if task == "multilabel" and not is_multilabel(df["label"]):
        df = df.assign(label=split_label_sets(df["label"]))
    y = df["label"].to_numpy()
    built_reps = {name: reps[name].factory() for name in dict.fromkeys(r for _, r, _ in rows_wanted)}
    by_classes = {name for name, step in built_reps.items() if needs_classes(step)}
    table = table_roles(df, text_columns, categorical, numeric)
    if table is None:
        X = df["text"].to_numpy(dtype=object)
    else:  # every representation reads the table; the baselines its first text column, as five lines do
        X = df[list(table.columns)]
        base = {r for kind, r, _ in rows_wanted if kind == "baseline"}
        built_reps = {name: text_only(step, table.text[0]) if name in base else on_table(step, table)
                      for name, step in built_reps.items()}
    built_heads = {name: hds[name].factory() for name in dict.fromkeys(h for _, _, h in rows_wanted)}
    notes = []
    if task == "regression":
        y = numeric_target(df["label"])
        rows_wanted, built_heads, notes = as_regression(rows_wanted, built_heads, by_classes)
        metrics = list(REGRESSION_METRICS) if default_metrics else metrics
    multilabel = multilabel_target(df, built_heads)
    if multilabel is not None:
        y, built_heads = multilabel
        metrics = list(MULTILABEL_METRICS) if default_metrics else metrics
    scoring, positive = scorers(metrics, y, pos_label, task)
    splits, protocol = _splits(df, folds, seed, holdout, task)
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    scored = "|".join(metrics) + (f"|pos={positive}" if positive is not None else "")

    def key(rep, head):
        return (f"{dataset_name}|{len(df)}|{rep}|{head}|{protocol}|{seed}|"
                f"{_signature(built_reps[rep])}|{_signature(built_heads[head])}")

    # finished pipelines, and per-fold scores so an interruption loses at most the folds running
    runs_path, folds_path = out / "runs.jsonl", out / "folds.jsonl"
    done = {row["key"]: row for row in _jsonl(runs_path) if row.get("scored") == scored}
    fold_done = {(row["key"], row["fold"]): row["scores"] for row in _jsonl(folds_path)
                 if all(m in row["scores"] for m in metrics)}
    by_rep: dict[str, list[str]] = {}
    for _, rep, head in rows_wanted:
        if key(rep, head) not in done:
            by_rep.setdefault(rep, []).append(head)
    store = DiskCache(out / "embedding-cache")
    tasks, shared = _tasks(by_rep, built_reps, splits, X, store,
                           lambda rep, h, i: (key(rep, h), i) in fold_done)
    jobs, plan = _jobs(n_jobs, len(tasks))

    def record(task_index: int, scores: dict):
        rep, i, _, _ = tasks[task_index]
        n_train, n_test = len(splits[i][0]), len(splits[i][1])
        with open(folds_path, "a") as fh:
            for h, sc in scores.items():
                if rep in shared:  # its share of the run's one encoding pass
                    sc["fit_seconds"] += shared[rep] * n_train
                    sc["transform_seconds"] += shared[rep] * n_test
                fold_done[(key(rep, h), i)] = sc
                fh.write(json.dumps({"key": key(rep, h), "fold": i, "scores": sc}) + "\n")

    def arguments(t):
        _, i, step, hs = t
        train, test = splits[i]
        return (step, {h: built_heads[h] for h in hs}, take(X, train), y[train], take(X, test), y[test],
                scoring, plan)

    _run_tasks(tasks, jobs, plan, arguments, record, progress)
    for kind, rep, head in rows_wanted:
        if key(rep, head) in done:
            continue
        frame = pd.DataFrame([fold_done[(key(rep, head), i)] for i in range(len(splits))])
        row = {"key": key(rep, head), "scored": scored, "kind": kind, "representation": rep,
               "head": head}
        for m in metrics:
            row[f"{m}_mean"], row[f"{m}_std"] = frame[m].mean(), frame[m].std(ddof=0)
        row.update(fit_seconds=frame.fit_seconds.mean(),
                   transform_seconds=frame.transform_seconds.mean(),
                   predict_seconds=frame.predict_seconds.mean(), peak_mb=frame.peak_mb.max(),
                   n_splits=len(frame))
        with open(runs_path, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        done[row["key"]] = row
    shutil.rmtree(store.directory, ignore_errors=True)  # kept only while a run is unfinished
    rows = [{**done[key(rep, head)], "kind": kind} for kind, rep, head in rows_wanted]
    results = (pd.DataFrame(rows).drop(columns=["key", "scored"])
               .sort_values(f"{metrics[0]}_mean", ascending=False, kind="stable")
               .reset_index(drop=True))
    results.attrs.update(dataset=dataset_name, protocol=protocol, n_docs=len(df), task=task,
                         notes=notes,
                         wall_seconds=time.perf_counter() - wall, metrics=metrics,
                         pos_label=positive, n_jobs=jobs if jobs > 0 else "dask",
                         threads_per_job=plan.threads if plan is not None else None,
                         peak_process_mb=largest_process_mb())
    if table is not None:
        results.attrs["columns"] = table.describe()
        df = pd.DataFrame({"text": df[table.text[0]], "label": df["label"]})  # the report's summary
    write_report(results, out, dataset=df, representations=built_reps, heads=built_heads)
    return results


def _rows_wanted(representations, heads, quick, experiment, params, baselines):
    """``(kind, representation, head)`` rows of a run, and the entries their names refer to."""
    chosen = experiments.select(representations, heads, quick=quick, experiment=experiment,
                                params=params)
    rows = [("pipeline", r, h) for r, h in chosen.pairs]
    reps, hds = dict(chosen.representations), dict(chosen.heads)
    if baselines:
        base = experiments.BASELINES
        clash = (set(base.representations) & set(reps)) | (set(base.heads) & set(hds))
        if clash:
            raise ValueError(f"the experiment names steps {sorted(clash)} that the baselines use; "
                             "rename them.")
        reps.update(base.representations)
        hds.update(base.heads)
        rows += [("baseline", r, h) for r, h in base.pairs]
    return rows, reps, hds


def _dataset(dataset, name: str | None) -> tuple[pd.DataFrame, str]:
    """A built-in dataset by name (checked, with did-you-mean), or the caller's frame."""
    if not isinstance(dataset, str):
        return dataset, name or "custom"
    from .data.datasets import DATASETS, load_dataset

    if dataset not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}.{did_you_mean(dataset, DATASETS)} "
                         f"Choose from {', '.join(DATASETS)} (`embedkit datasets`), or pass your "
                         "own file with --file.")
    return load_dataset(dataset), name or dataset


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _tasks(by_rep: dict, built_reps: dict, splits, X, store, scored) -> tuple[list, dict]:
    """One task ``(representation, fold, step, heads)`` per representation and fold with heads
    left to score (``scored(rep, head, fold)`` says which are done). A representation whose
    vectors do not depend on the fold is encoded once into ``store`` first (``shared``: its
    encoding seconds per document); the fold-trained ones run first."""
    from sklearn.base import clone

    from .cache import fingerprint

    shared: dict[str, float] = {}  # representation -> encoding seconds per document
    encoded: dict[str, float] = {}  # cache fingerprint -> seconds per document
    tasks = []
    for rep, head_names in by_rep.items():
        todo = {i: [h for h in head_names if not scored(rep, h, i)] for i in range(len(splits))}
        todo = {i: hs for i, hs in todo.items() if hs}
        if not todo:
            continue
        step = built_reps[rep]
        if _fold_independent(step, X, store):
            fp = fingerprint(clone(step).set_params(cache=store).fit(X[:16]))
            if fp not in encoded:
                encoded[fp] = _encode_once(step, X, store) / len(X)
            shared[rep] = encoded[fp]
            step = clone(step).set_params(cache=store)
        elif takes_cache(step):
            step = clone(step).set_params(cache=None)  # a fold's features are used once
        tasks.extend((rep, i, step, hs) for i, hs in todo.items())
    tasks.sort(key=lambda t: t[0] in shared)  # the slow, fold-trained ones first
    return tasks, shared


def _jobs(n_jobs, n_tasks: int) -> tuple[int, ThreadPlan | None]:
    """``(jobs, thread plan)``: ``jobs`` -1 means every Dask worker (threads left alone)."""
    jobs = available_cores() if n_jobs is None else int(n_jobs)
    if jobs == 0 or jobs < -1:
        raise ValueError(f"n_jobs={n_jobs!r}; use a positive number of jobs, -1 for every worker, "
                         "or None for every core.")
    if jobs == -1:
        return jobs, None
    jobs = max(1, min(jobs, n_tasks))
    return jobs, plan_threads(workers=jobs)


def _run_tasks(tasks: list, jobs: int, plan: ThreadPlan | None, arguments, record,
               progress: bool) -> None:
    """Score every task, in this process (``jobs`` 1) or in ``jobs`` loky workers started
    under ``plan`` (-1: joblib's backend decides, e.g. a Dask cluster), calling
    ``record(index, scores)`` as each ends."""
    from tqdm.auto import tqdm

    bar = tqdm(total=len(tasks), disable=None if progress else True, unit="fold")  # a terminal only
    if 0 < jobs <= 1:
        with collecting_new_objects():  # one full collection for the run, not one per fold
            for n, t in enumerate(tasks):
                bar.set_description(f"{t[0]} + {', '.join(t[3])}")
                record(n, _score_fold(*arguments(t)))
                bar.update(1)
    elif tasks:
        import contextlib

        from joblib import Parallel, delayed, parallel_config

        bar.set_description(f"{len(tasks)} jobs, {jobs if jobs > 0 else 'all'} at a time")
        config = parallel_config(**plan.joblib_config()) if plan else contextlib.nullcontext()
        with config:
            results = Parallel(n_jobs=jobs, return_as="generator_unordered")(
                delayed(_job)(n, *arguments(t)) for n, t in enumerate(tasks))
            for n, scores in results:
                record(n, scores)
                bar.update(1)
    bar.close()
