"""One `GridSearchCV` over many representations and heads, pairing only compatible steps.

    from embedkit.search import make_search
    search, X, y = make_search("trec", representations=["tfidf", "glove"], heads=["mlp", "rnn"])
    search.fit(X, y)
    search.cv_results_

The param grid is a list of small grids, one per representation, each listing the heads that
accept what that representation produces; a representation that yields pooled vectors is never
paired with a sequence-only head. With ``cache`` set (the default) every representation that
supports it caches its vectors, so each document is encoded once per fitted representation
across candidates and folds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import experiments, registry
from .base import with_cache


def param_grid(representations=None, heads=None, cache="memory") -> list[dict]:
    """A GridSearchCV ``param_grid`` pairing each representation with its compatible heads.

    Names come from `embedkit.registry` (all registered ones when None); ``cache`` is set on
    every representation that takes one.

    Examples
    --------
    >>> [len(g["head"]) for g in param_grid(["tfidf", "glove-seq"], ["logreg", "mlp", "rnn"])]
    [2, 2]
    """
    reps = list(representations or registry.REPRESENTATIONS)
    chosen = experiments.select(reps, list(heads or registry.HEADS))
    grid = []
    for name in reps:
        ok = [chosen.heads[h].factory() for r, h in chosen.pairs if r == name]
        if ok:
            features = chosen.representations[name].factory()
            if cache is not None:
                features = with_cache(features, cache)
            grid.append({"features": [features], "head": ok})
    return grid


def make_search(dataset="bbc-news", representations=None, heads=None, cv=5, scoring=None,
                n_jobs=None, cache="memory", seed: int = 0, refit: str | bool = "accuracy"):
    """A ready `GridSearchCV` and the data to fit it on.

    Parameters
    ----------
    dataset : str or DataFrame, default="bbc-news"
        Built-in name or a DataFrame with ``text``, ``label`` (and ``split``). Where the data
        has an official train/test split, the search uses it (a `PredefinedSplit`) instead of
        ``cv`` folds.
    representations, heads : list of str, optional
        Registry names from `embedkit.registry`; all registered ones when None.
    cv : int, default=5
        Stratified folds when there is no official split.
    scoring : dict, optional
        Default: accuracy and macro-F1.
    n_jobs : int, optional
    cache : None, "memory" or a folder, default="memory"
        Embedding cache for every representation that supports one. Use a folder with
        ``n_jobs > 1`` so worker processes share it.
    seed : int, default=0
    refit : str or bool, default="accuracy"

    Returns
    -------
    (GridSearchCV, X, y)
    """
    from sklearn.model_selection import GridSearchCV, PredefinedSplit, StratifiedKFold

    from .data.datasets import load_dataset

    df = load_dataset(dataset) if isinstance(dataset, str) else dataset
    if "split" in df and set(df["split"]) >= {"train", "test"}:
        folds = PredefinedSplit(np.where(df["split"].to_numpy() == "test", 0, -1))
    else:
        folds = StratifiedKFold(cv, shuffle=True, random_state=seed)
    scoring = scoring or {"accuracy": "accuracy", "f1_macro": "f1_macro"}
    grid = param_grid(representations, heads, cache)
    first = grid[0]
    pipe = registry.pair_pipeline(first["features"][0], first["head"][0])
    search = GridSearchCV(pipe, grid, cv=folds, scoring=scoring, refit=refit, n_jobs=n_jobs,
                          error_score="raise")
    X = pd.Series(df["text"].to_numpy(dtype=object))
    return search, X, df["label"].to_numpy()
