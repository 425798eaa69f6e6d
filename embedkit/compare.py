"""`embedkit compare`: score representation x head pipelines on one dataset and write a report.

Cross-validates (stratified k-fold) on datasets without an official split, and trains on
``train`` / scores on ``test`` where the dataset defines one (TREC). Scores of each finished
fold are kept in ``<output>/folds.jsonl`` and of each finished pipeline in ``runs.jsonl``, so
an interrupted run resumes where it stopped, losing at most the fold in progress.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from . import registry


class _PeakRSS:
    """Peak resident memory of this process while the block runs (sampled every 10 ms).

    On entry, garbage is collected and (glibc) freed heap handed back to the system, so the
    start reflects live memory rather than what earlier pipelines freed.
    """

    def __enter__(self):
        import ctypes
        import gc
        import threading

        import psutil

        gc.collect()
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # not glibc: the start may include freed memory
            pass

        self._proc = psutil.Process()
        self.start = self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self._proc.memory_info().rss)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)


def _score_fold(representation, heads: dict, X_train, y_train, X_test, y_test) -> dict:
    """Fit ``representation`` once on one fold, then every head on its features.

    Scores equal those of ``Pipeline([representation, head])`` fitted on the fold; sharing the
    representation's fit between heads is what makes a multi-head comparison affordable.
    Returns ``{head name: scores and timings}``; ``fit_seconds`` is the pipeline's (the
    representation's ``fit_transform`` plus the head's ``fit``), ``transform_seconds`` the
    representation on the test documents, ``peak_mb`` the growth of peak resident memory over
    the fold's start.
    """
    from sklearn.base import clone
    from sklearn.metrics import accuracy_score, f1_score

    with _PeakRSS() as rep_mem:
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
        with _PeakRSS() as head_mem:
            model = clone(head)
            start = time.perf_counter()
            model.fit(train_features, y_train)
            head_fit_s = time.perf_counter() - start
            start = time.perf_counter()
            pred = model.predict(test_features)
            predict_s = time.perf_counter() - start
        peak = max(rep_mem.peak, head_mem.peak) - rep_mem.start
        out[name] = {"accuracy": accuracy_score(y_test, pred),
                     "f1_macro": f1_score(y_test, pred, average="macro"),
                     "fit_seconds": fit_s + head_fit_s, "transform_seconds": transform_s,
                     "predict_seconds": predict_s, "peak_mb": peak / 2**20}
    return out


def _splits(df: pd.DataFrame, folds: int, seed: int, holdout: float | None = None):
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
    return list(cv.split(df["text"], df["label"])), f"{folds}-fold stratified CV"


def run_compare(dataset: str | pd.DataFrame = "bbc-news", representations=None, heads=None,
                folds: int = 5, output: str | Path = "embedkit-results", seed: int = 0,
                quick: bool = False, progress: bool = True, dataset_name: str | None = None,
                n_jobs: int | None = None, experiment: str | None = None,
                holdout: float | None = None):
    """Score every compatible (representation, head) pair and write the report.

    Each representation is fitted once per fold and its features feed every head paired with
    it (the scores are those of the corresponding `Pipeline`).

    Parameters
    ----------
    dataset : str or DataFrame, default="bbc-news"
        A built-in dataset name or a DataFrame with ``text`` and ``label`` (and ``split``).
    representations, heads : list of str, optional
        Names from `embedkit.registry.REPRESENTATIONS` / `HEADS`; defaults when None.
    folds : int, default=5
    output : path, default="embedkit-results"
        Folder for results.csv, results.md, results.png and results_time.png.
    seed : int, default=0
    quick : bool, default=False
        A stratified sample of 300 documents, 3 folds and the quick selection: a smoke run.
    progress : bool, default=True
    n_jobs : int, optional
        Folds run in parallel through joblib; inside ``embedkit.distributed.dask_backend`` they
        run on a Dask cluster.
    experiment : str or Path, optional
        A built-in experiment (``course_comparison``, ``representations_only``) or an
        experiment file (`embedkit.registry.load_experiment`) instead of a representation x
        head selection.
    holdout : float, optional
        Score on one stratified held-out fraction (e.g. 0.2) instead of k-fold CV, for slow
        experiments; ignored where the dataset has an official test split.

    Returns
    -------
    pandas.DataFrame, one row per pipeline, best first.
    """
    from tqdm.auto import tqdm

    from .datasets import load_dataset, stratified_sample

    wall = time.perf_counter()
    if isinstance(dataset, str):
        dataset_name = dataset_name or dataset
        df = load_dataset(dataset)
    else:
        df = dataset
        dataset_name = dataset_name or "custom"
    if quick:
        df = stratified_sample(df, 300, seed).reset_index(drop=True)
        folds = min(folds, 3)
    chosen = registry.select(representations, heads, quick=quick, experiment=experiment)
    selection = chosen.pairs
    splits, protocol = _splits(df, folds, seed, holdout)
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    runs_path = out / "runs.jsonl"
    done = {}
    if runs_path.exists():
        for line in runs_path.read_text().splitlines():
            row = json.loads(line)
            done[row["key"]] = row
    X, y = df["text"].to_numpy(dtype=object), df["label"].to_numpy()

    def key(rep, head):
        return f"{dataset_name}|{len(df)}|{rep}|{head}|{protocol}|{seed}"

    # per-fold scores, so an interruption loses at most the fold in progress
    folds_path = out / "folds.jsonl"
    fold_done = {}
    if folds_path.exists():
        for line in folds_path.read_text().splitlines():
            row = json.loads(line)
            fold_done[(row["key"], row["fold"])] = row["scores"]
    by_rep: dict[str, list[str]] = {}
    for rep, head in selection:
        if key(rep, head) not in done:
            by_rep.setdefault(rep, []).append(head)
    bar = tqdm(total=len(by_rep) * len(splits), disable=not progress, unit="fold")
    for rep, head_names in by_rep.items():
        bar.set_description(f"{rep} + {', '.join(head_names)}")
        representation = chosen.representations[rep].factory()
        todo = {i: {h: chosen.heads[h].factory() for h in head_names if (key(rep, h), i) not in fold_done}
                for i in range(len(splits))}
        todo = {i: heads_ for i, heads_ in todo.items() if heads_}
        bar.update(len(splits) - len(todo))

        def record(i, scores):
            with open(folds_path, "a") as fh:
                for h, sc in scores.items():
                    fold_done[(key(rep, h), i)] = sc
                    fh.write(json.dumps({"key": key(rep, h), "fold": i, "scores": sc}) + "\n")

        if n_jobs in (None, 1):
            for i, heads_ in todo.items():
                train, test = splits[i]
                record(i, _score_fold(representation, heads_, X[train], y[train], X[test], y[test]))
                bar.update(1)
        elif todo:
            from joblib import Parallel, delayed

            outs = Parallel(n_jobs=n_jobs)(
                delayed(_score_fold)(representation, heads_, X[splits[i][0]], y[splits[i][0]],
                                     X[splits[i][1]], y[splits[i][1]])
                for i, heads_ in todo.items())
            for i, scores in zip(todo, outs):
                record(i, scores)
            bar.update(len(todo))
        for head in head_names:
            frame = pd.DataFrame([fold_done[(key(rep, head), i)] for i in range(len(splits))])
            row = {"key": key(rep, head), "representation": rep, "head": head,
                   "accuracy_mean": frame.accuracy.mean(), "accuracy_std": frame.accuracy.std(ddof=0),
                   "f1_macro_mean": frame.f1_macro.mean(), "f1_macro_std": frame.f1_macro.std(ddof=0),
                   "fit_seconds": frame.fit_seconds.mean(),
                   "transform_seconds": frame.transform_seconds.mean(),
                   "predict_seconds": frame.predict_seconds.mean(), "peak_mb": frame.peak_mb.max(),
                   "n_splits": len(frame)}
            with open(runs_path, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            done[row["key"]] = row
    bar.close()
    rows = [done[key(rep, head)] for rep, head in selection]
    results = (pd.DataFrame(rows).drop(columns="key")
               .sort_values("accuracy_mean", ascending=False).reset_index(drop=True))
    results.attrs.update(dataset=dataset_name, protocol=protocol, n_docs=len(df),
                         wall_seconds=time.perf_counter() - wall)
    write_report(results, out)
    return results


def format_table(results: pd.DataFrame) -> pd.DataFrame:
    """Human-readable table: mean ± std columns (the score alone for one split), rounded seconds."""
    splits = results["n_splits"] if "n_splits" in results else pd.Series(2, index=results.index)

    def score(metric):
        return [f"{m:.3f}" if n == 1 else f"{m:.3f} ± {s:.3f}"
                for m, s, n in zip(results[f"{metric}_mean"], results[f"{metric}_std"], splits)]

    return pd.DataFrame({
        "representation": results.representation,
        "head": results["head"],
        "accuracy": score("accuracy"),
        "macro-F1": score("f1_macro"),
        "fit s": results.fit_seconds.round(2),
        "transform s": results.transform_seconds.round(2),
        "predict s": results.predict_seconds.round(2),
        "peak MB": results.peak_mb.map(lambda v: "" if pd.isna(v) else f"{v:.0f}"),
    })


_COLUMNS = """\
*fit s*: the pipeline's fit on one training fold (representation `fit_transform` + head `fit`;
the run fits each representation once per fold and shares it between its heads). *transform s*:
the representation on the test documents; *predict s*: the head on those features. Seconds are
means over folds. *peak MB*: the largest growth of resident memory over a fold's start.
"""


def write_report(results: pd.DataFrame, out: Path) -> dict[str, Path]:
    """Write results.csv, results.md, results.png (scores) and results_time.png (fit time
    versus score) into ``out``; return their paths."""
    from .plots import score_chart, time_chart

    paths = {"csv": out / "results.csv", "md": out / "results.md", "png": out / "results.png",
             "time_png": out / "results_time.png"}
    results.to_csv(paths["csv"], index=False)
    meta = results.attrs
    title = f"{meta.get('dataset', '')}: {meta.get('n_docs', '?')} documents, {meta.get('protocol', '')}"
    wall = meta.get("wall_seconds")
    footer = _COLUMNS + (f"\nWall time of the run that wrote this report: {wall:.0f} s.\n" if wall else "")
    paths["md"].write_text(f"# {title}\n\n" + format_table(results).to_markdown(index=False)
                           + "\n\n" + footer)
    score_chart(results, paths["png"], title=title)
    time_chart(results, paths["time_png"], title=title)
    return paths
