"""`embedkit compare`: score representation x head pipelines on one dataset and write a report.

Cross-validates (stratified k-fold) on datasets without an official split, and trains on
``train`` / scores on ``test`` where the dataset defines one (TREC). Results of finished
pipelines are kept in ``<output>/runs.jsonl``, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from . import grids


def _score_split(pipe, X_train, y_train, X_test, y_test) -> dict:
    from sklearn.base import clone
    from sklearn.metrics import accuracy_score, f1_score

    model = clone(pipe)
    start = time.perf_counter()
    model.fit(X_train, y_train)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    pred = model.predict(X_test)
    predict_s = time.perf_counter() - start
    return {"accuracy": accuracy_score(y_test, pred),
            "f1_macro": f1_score(y_test, pred, average="macro"),
            "fit_seconds": fit_s, "predict_seconds": predict_s}


def _splits(df: pd.DataFrame, folds: int, seed: int):
    if "split" in df and set(df["split"]) >= {"train", "test"}:
        train = np.flatnonzero(df["split"].to_numpy() == "train")
        test = np.flatnonzero(df["split"].to_numpy() == "test")
        return [(train, test)], "official test split"
    from sklearn.model_selection import StratifiedKFold

    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return list(cv.split(df["text"], df["label"])), f"{folds}-fold stratified CV"


def run_compare(dataset: str | pd.DataFrame = "bbc-news", representations=None, heads=None,
                folds: int = 5, output: str | Path = "embedkit-results", seed: int = 0,
                quick: bool = False, progress: bool = True, dataset_name: str | None = None,
                n_jobs: int | None = None):
    """Score every compatible (representation, head) pair and write the report.

    Parameters
    ----------
    dataset : str or DataFrame, default="bbc-news"
        A built-in dataset name or a DataFrame with ``text`` and ``label`` (and ``split``).
    representations, heads : list of str, optional
        Names from `pipelines.grids.REPRESENTATIONS` / `HEADS`; defaults when None.
    folds : int, default=5
    output : path, default="embedkit-results"
        Folder for results.csv, results.md and results.png.
    seed : int, default=0
    quick : bool, default=False
        A stratified sample of 300 documents, 3 folds and the quick selection: a smoke run.
    progress : bool, default=True
    n_jobs : int, optional
        Folds run in parallel through joblib; inside ``embedkit.distributed.dask_backend`` they
        run on a Dask cluster.

    Returns
    -------
    pandas.DataFrame, one row per pipeline, best first.
    """
    from tqdm.auto import tqdm

    from embedkit.datasets import _stratified_sample, load_dataset

    if isinstance(dataset, str):
        dataset_name = dataset_name or dataset
        df = load_dataset(dataset)
    else:
        df = dataset
        dataset_name = dataset_name or "custom"
    if quick:
        df = _stratified_sample(df, 300, seed).reset_index(drop=True)
        folds = min(folds, 3)
    selection = grids.pairs(representations, heads, quick=quick)
    splits, protocol = _splits(df, folds, seed)
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    runs_path = out / "runs.jsonl"
    done = {}
    if runs_path.exists():
        for line in runs_path.read_text().splitlines():
            row = json.loads(line)
            done[row["key"]] = row
    X, y = df["text"].to_numpy(dtype=object), df["label"].to_numpy()
    rows = []
    bar = tqdm(total=len(selection) * len(splits), disable=not progress, unit="fit")
    for rep, head in selection:
        key = f"{dataset_name}|{len(df)}|{rep}|{head}|{protocol}|{seed}"
        if key in done:
            rows.append(done[key])
            bar.update(len(splits))
            continue
        bar.set_description(f"{rep} + {head}")
        pipe = grids.make_pipeline(rep, head)
        if n_jobs in (None, 1):
            scores = []
            for train, test in splits:
                scores.append(_score_split(pipe, X[train], y[train], X[test], y[test]))
                bar.update(1)
        else:
            from joblib import Parallel, delayed

            scores = Parallel(n_jobs=n_jobs)(
                delayed(_score_split)(pipe, X[tr], y[tr], X[te], y[te]) for tr, te in splits)
            bar.update(len(splits))
        frame = pd.DataFrame(scores)
        row = {"key": key, "representation": rep, "head": head,
               "accuracy_mean": frame.accuracy.mean(), "accuracy_std": frame.accuracy.std(ddof=0),
               "f1_macro_mean": frame.f1_macro.mean(), "f1_macro_std": frame.f1_macro.std(ddof=0),
               "fit_seconds": frame.fit_seconds.mean(), "predict_seconds": frame.predict_seconds.mean()}
        with open(runs_path, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        rows.append(row)
    bar.close()
    results = (pd.DataFrame(rows).drop(columns="key")
               .sort_values("accuracy_mean", ascending=False).reset_index(drop=True))
    results.attrs.update(dataset=dataset_name, protocol=protocol, n_docs=len(df))
    write_report(results, out)
    return results


def format_table(results: pd.DataFrame) -> pd.DataFrame:
    """Human-readable table: mean ± std columns, rounded seconds."""
    return pd.DataFrame({
        "representation": results.representation,
        "head": results["head"],
        "accuracy": [f"{m:.3f} ± {s:.3f}" for m, s in zip(results.accuracy_mean, results.accuracy_std)],
        "macro-F1": [f"{m:.3f} ± {s:.3f}" for m, s in zip(results.f1_macro_mean, results.f1_macro_std)],
        "fit s": results.fit_seconds.round(2),
        "predict s": results.predict_seconds.round(2),
    })


def write_report(results: pd.DataFrame, out: Path) -> dict[str, Path]:
    """Write results.csv, results.md and results.png into ``out``; return their paths."""
    from embedkit.plots import score_chart

    paths = {"csv": out / "results.csv", "md": out / "results.md", "png": out / "results.png"}
    results.to_csv(paths["csv"], index=False)
    meta = results.attrs
    title = f"{meta.get('dataset', '')}: {meta.get('n_docs', '?')} documents, {meta.get('protocol', '')}"
    paths["md"].write_text(f"# {title}\n\n" + format_table(results).to_markdown(index=False) + "\n")
    score_chart(results, paths["png"], title=title)
    return paths
