"""Budgeted search over representation x head x hyperparameters, as an estimator: `Tuner`.

    tuner = embedkit.Tuner(budget="15m").fit(texts, labels)
    tuner.predict(["a new document"])      # the pick, refit on all the documents
    tuner.leaderboard_                     # candidates and the two plain baselines, best first

``embedkit.tune(texts, labels, budget="15m")`` is ``Tuner(budget="15m").fit(texts, labels)``;
``embedkit tune`` (`embedkit.cli`) is a thin layer over it.

How it searches
---------------
* **Candidates** come from `embedkit.registry`: each ``(representation, head)`` pair with its
  registry defaults first, then up to ``per_pair - 1`` settings sampled (scikit-learn's
  `ParameterSampler`) from the entries' ``space`` (e.g. TF-IDF's ``ngram_range`` / ``min_df``,
  LR's ``C``, the MLP's hidden size and epochs). Pairs are ordered by their registry ``cost``
  (cheap first), and a pair whose one fit on all the documents is estimated at more than a
  quarter of the budget is left out (``finetune="auto"``: fine-tuning joins at budgets that
  can pay for it).
* **Successive halving** is scikit-learn's `HalvingGridSearchCV` (resource: documents): every
  candidate is cross-validated on a small stratified subsample first, the best third goes on
  with three times the documents, and so on until the last round uses all of them; fine-tuning
  is therefore tried on subsets first and carried on only while it leads.
* **The embedding cache** (``cache="memory"``) is set on every representation that takes one, so
  a pretrained encoder encodes each document once for all candidates, folds and rounds.

The budget
----------
``budget`` bounds the search (`embedkit._halving.BudgetedHalvingSearchCV`) and the refit of the
winner on all the data. Before each candidate is cross-validated, its time is estimated (from
its own time in the previous round, scaled by the documents, or in the first round from the
registry ``cost``) together with the time to refit the current leader (``REFIT_MARGIN`` times
its time scaled linearly to all the documents); a candidate that would not finish in what is
left is skipped, and a round in which no candidate fits ends the search. **Granularity: one
candidate's cross-validation at one round's sample size** -- a candidate that has started is
finished, never killed half-way, so a search overruns its budget by the error of that estimate,
which is large for a candidate whose time grows faster than linearly with the documents (NBSVM +
``logreg-cv``: lbfgs over NB-scaled features); `pipelines/benchmarks/tune_budget.py` measures
the overrun (`pipelines/benchmarks/results/tune_budget.md`). Within a round, candidates are
evaluated best-first (by the previous round's score), so when the budget runs out it is the
weakest that go unscored, and the pick is the best of the last round reached (scikit-learn's
rule for halving searches). The two plain baselines are scored after the search, outside the
budget, on the same folds (plain MiniLM costs one encoder pass, none when the search already
encoded the documents), and, where the search's best was scored on a subsample only, also on
that subsample of those folds: a candidate is compared with the baselines on the same documents.
Where a baseline out-scores the search's best, it is the pick. The pick is refit on all the
documents after that comparison (so no time goes into refitting a loser), and the saved model is
never worse than those five lines on the search's folds.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from numbers import Integral, Real
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import get_scorer_names
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._halving import (
    BudgetedHalvingSearchCV,
    BudgetError,
    candidate_label,
    candidates,
    describe,
    parse_budget,
)
from ._params import validate_params
from .base import CheckedKeywords, store_params
from .registry import HEADS, REPRESENTATIONS

__all__ = ["DEFAULT_PAIRS", "FINETUNE_HEADS", "MINILM_BASELINE", "TFIDF_BASELINE", "BudgetError",
           "Tuner", "baseline_pipelines", "leaderboard", "parse_budget", "pipelines", "tune"]

#: what `Tuner` searches when no pairs are given: the levers the accuracy suite found (issue 13)
DEFAULT_PAIRS = (
    ("tfidf", "logreg-cv"), ("nbsvm", "logreg-cv"), ("glove", "logreg-cv"),
    ("nbsvm-char", "logreg-cv"), ("tfidf", "mlp"), ("minilm", "logreg-cv"), ("minilm", "mlp"),
    ("minilm-tokens", "attention"), ("passthrough", "stack"), ("glove-seq", "rnn"),
    ("passthrough", "finetune-short"), ("passthrough", "finetune"), ("passthrough", "setfit"),
)
#: heads that fine-tune a Transformer: ``finetune=False`` leaves them out
FINETUNE_HEADS = ("finetune", "finetune-short", "finetune-seeds", "vote-finetune", "setfit")
#: a pair is left out when one fit on all the documents is estimated above this share of budget
BUDGET_SHARE_PER_FIT = 0.25
TFIDF_BASELINE, MINILM_BASELINE = "plain TF-IDF + LR", "plain MiniLM + LR"


def baseline_pipelines(cache="memory") -> dict:
    """The two five-line baselines a user would write (issue 13), by leaderboard name.

    They are `embedkit.experiments.BASELINES`' rows, the ones every ``embedkit compare`` report
    carries: *plain TF-IDF + LR* is scikit-learn ``TfidfVectorizer(ngram_range=(1, 2),
    min_df=2, sublinear_tf=True)`` + ``LogisticRegression(max_iter=3000)``; *plain MiniLM + LR*
    the packaged all-MiniLM-L6-v2, L2-normalised as sentence-transformers' ``encode`` returns it,
    + the same ``LogisticRegression``. The MiniLM one uses ``cache``, so it reads the vectors
    the search already computed (the registry's ``minilm`` has the same fingerprint).
    """
    from sklearn.pipeline import Pipeline

    from .experiments import BASELINES

    reps, heads = BASELINES.representations, BASELINES.heads
    return {  # the candidates' step names, so a baseline pick reads like any other
        TFIDF_BASELINE: Pipeline([("features", reps["baseline-tfidf"].factory()),
                                  ("head", heads["plain-lr"].factory())]),
        MINILM_BASELINE: Pipeline([
            ("features", reps["baseline-minilm"].factory().set_params(cache=cache)),
            ("head", heads["plain-lr"].factory())]),
    }


def _pairs(pairs, representations, heads, finetune) -> list[tuple[str, str]]:
    from . import experiments

    if pairs is not None and (representations or heads):
        raise ValueError("give either pairs=[(representation, head), ...] or representations= / "
                         "heads= selections, not both.")
    if pairs is None and not (representations or heads):
        chosen = list(DEFAULT_PAIRS)
    elif pairs is None:
        chosen = list(experiments.select(representations or None, heads or None).pairs)
    else:
        chosen = list(experiments.checked_pairs(pairs, REPRESENTATIONS, HEADS, "tune(pairs=...)"))
    if finetune is False:
        chosen = [(r, h) for r, h in chosen if h not in FINETUNE_HEADS]
    return chosen


def _check_labels(y, n_docs: int, cv: int) -> np.ndarray:
    from .datasets import is_multilabel

    if is_multilabel(y) or getattr(y, "ndim", 1) == 2:
        raise ValueError(
            "y is multi-label (a list of labels or an indicator row per document); tune searches "
            "single-label targets. For multi-label data run `embedkit compare` (micro/macro/"
            "samples-F1, thresholds tuned per model) or GridSearchCV(scoring='f1_samples') over "
            "embedkit pipelines.")
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != n_docs:
        raise ValueError(f"y has shape {y.shape}; expected one label per document ({n_docs}).")
    if pd.isna(pd.Series(y)).any():
        rows = np.flatnonzero(pd.isna(pd.Series(y)).to_numpy())[:10].tolist()
        raise ValueError(f"y has missing labels at rows {rows}; drop those rows or label them.")
    classes, counts = np.unique(y.astype(str) if y.dtype == object else y, return_counts=True)
    if len(classes) < 2:
        raise ValueError(f"y has a single class ({classes[0]!r}); tune needs at least two.")
    if counts.min() < cv:
        rare = [str(c) for c, n in zip(classes, counts, strict=True) if n < cv][:10]
        raise ValueError(f"classes {rare} have fewer than cv={cv} documents; each fold needs one "
                         "of each class. Add documents, merge rare classes or lower cv.")
    return y


def _affordable(chosen, n: int, seconds: float, finetune, say) -> list[tuple[str, str]]:
    """The pairs whose one fit on all ``n`` documents is estimated within
    ``BUDGET_SHARE_PER_FIT`` of the budget (fine-tuning ones too when ``finetune=True``)."""
    kept, dropped = [], []
    for rep, head in chosen:
        fit_s = (REPRESENTATIONS[rep].cost + HEADS[head].cost) * n / 1000
        affordable = fit_s <= BUDGET_SHARE_PER_FIT * seconds
        (kept if affordable or (finetune is True and head in FINETUNE_HEADS) else dropped).append(
            (rep, head))
        if not affordable and (rep, head) in kept:
            say(f"kept {rep} + {head} (finetune=True) though one fit is estimated at {fit_s:.0f} s")
    if dropped:
        say(f"left out for the budget ({seconds:g} s; one fit on {n:,} documents estimated above "
            f"{BUDGET_SHARE_PER_FIT:.0%} of it): " + ", ".join(f"{r} + {h}" for r, h in dropped))
    if not kept:
        cheapest = min(chosen, key=lambda p: REPRESENTATIONS[p[0]].cost + HEADS[p[1]].cost)
        need = (REPRESENTATIONS[cheapest[0]].cost + HEADS[cheapest[1]].cost) * n / 1000
        raise BudgetError(
            f"a budget of {seconds:g} s is too small for any pair on {n:,} documents: the cheapest,"
            f" {cheapest[0]} + {cheapest[1]}, is estimated at {need:.0f} s per fit. Give at least "
            f"{math.ceil(need / BUDGET_SHARE_PER_FIT)} s, or fewer documents.")
    return kept


class Tuner(CheckedKeywords, ClassifierMixin, BaseEstimator):
    """Find the best representation x head x hyperparameters for ``(X, y)`` within a budget.

    A scikit-learn classifier: `fit` runs the search, scores the two plain baselines on the
    same folds and refits the pick on all the documents; `predict`, `predict_proba` and `score`
    use that pick. See the module docstring for how the search runs and how the budget is kept.

    Parameters
    ----------
    budget : str or float, default="15m"
        Seconds, or a duration such as ``"90s"``, ``"15m"``, ``"1h"`` (`parse_budget`), for the
        search and the winner's refit.
    pairs : list of (str, str), optional
        ``(representation, head)`` registry names to search; default `DEFAULT_PAIRS`.
    representations, heads : list of str, optional
        Instead of ``pairs``: every compatible pair of these (registry defaults for the other).
    cv : int, default=3
        Stratified folds (shuffled, seeded); the baselines are scored on the same folds.
    scoring : str, default="accuracy"
        A scikit-learn scorer name.
    factor : int, default=3
        Halving factor: a third of the candidates go on, with three times the documents.
    per_pair : int, default=3
        Candidates per pair: its registry defaults plus settings sampled from its ``space``.
    finetune : {"auto", True, False}, default="auto"
        ``"auto"``: fine-tuning heads join when the budget can pay for them (like every pair);
        True: always (still skipped within the search when they would overrun); False: never.
    baselines : bool, default=True
        Score the two plain baselines (`baseline_pipelines`) on the same folds after the search.
    cache : None, "memory" or a folder, default="memory"
        Embedding cache of every representation that takes one (a folder with ``n_jobs > 1``).
    random_state : int, default=0
        Seeds the folds, the subsamples and the sampled settings.
    n_jobs : int, optional
        Parallel fits of one candidate's folds (scikit-learn's ``n_jobs``).
    output : str or Path, optional
        A folder: ``leaderboard.csv`` / ``.md`` / ``.png`` and ``report.html`` are written there,
        and the refit pick is saved to ``output/model/`` with `embedkit.save`.
    progress : bool or callable, default=True
        Print a line per candidate (to stderr), or call ``progress(line)``.

    Attributes
    ----------
    best_estimator_ : Pipeline
        The pick refit on all of ``X``: the search's best candidate, or a plain baseline when it
        out-scores that candidate on the same documents of the same folds.
    pick_ : str
        The leaderboard name of the pick.
    leaderboard_ : DataFrame
        One row per candidate (its last round) and per baseline, best first (`leaderboard`).
    search_ : BudgetedHalvingSearchCV
        The fitted search (``cv_results_``, ``best_index_``, ``skipped_``, ...).
    baselines_ : dict
        The baselines' fold scores: ``scores`` on all the documents, ``scores_as_best`` on the
        documents the best candidate was scored on.
    classes_ : ndarray
        The labels seen at fit.
    budget_ : float
        The budget in seconds.
    budget_used_ : float
        Wall-clock seconds of `fit`: search, baselines, refit and writing ``output``.
    refit_time_ : float
        Seconds of the pick's refit.
    pairs_ : list of (str, str)
        The pairs searched (after the ones the budget cannot pay for were left out).
    candidates_ : list of dict
        Every candidate (`embedkit._halving.candidates`), in search order.

    Raises
    ------
    BudgetError
        When the budget runs out before any candidate is scored.

    Examples
    --------
    >>> from embedkit import load_dataset
    >>> df = load_dataset("bbc-news").sample(300, random_state=0)
    >>> tuner = Tuner(budget="1m", pairs=[("tfidf", "logreg-cv")], progress=False)
    >>> tuner.fit(df["text"], df["label"]).leaderboard_["pipeline"].iloc[0]  # doctest: +SKIP
    'tfidf + logreg-cv'
    """

    _parameter_constraints: ClassVar[dict] = {
        "budget": [Interval(Real, 0, None, closed="neither"), str],
        "pairs": [list, tuple, None],
        "representations": [list, tuple, None],
        "heads": [list, tuple, None],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "scoring": [StrOptions(set(get_scorer_names()))],
        "factor": [Interval(Integral, 2, None, closed="left")],
        "per_pair": [Interval(Integral, 1, None, closed="left")],
        "finetune": [StrOptions({"auto"}), "boolean"],
        "baselines": ["boolean"],
        "cache": [None, str, os.PathLike],
        "random_state": [Interval(Integral, 0, None, closed="left")],
        "n_jobs": [Integral, None],
        "output": [None, str, os.PathLike],
        "progress": ["boolean", callable],
    }

    def __init__(self, budget: str | float = "15m", *, pairs=None, representations=None,
                 heads=None, cv: int = 3, scoring: str = "accuracy", factor: int = 3,
                 per_pair: int = 3, finetune: bool | str = "auto", baselines: bool = True,
                 cache="memory", random_state: int = 0, n_jobs: int | None = None, output=None,
                 progress: bool | Callable[[str], None] = True):
        store_params(self, locals())

    def _say(self) -> Callable[[str], None]:
        if callable(self.progress):
            return self.progress
        if self.progress:
            return lambda line: print(line, file=sys.stderr, flush=True)
        return lambda line: None

    def fit(self, X, y):
        """Search, score the baselines on the same folds, refit the pick on all of ``X``."""
        from sklearn.model_selection import StratifiedKFold
        from sklearn.pipeline import Pipeline

        from .documents import validate_documents

        started = time.monotonic()
        validate_params(self)
        seconds = parse_budget(self.budget)
        docs = np.asarray(validate_documents(X), dtype=object)
        y = _check_labels(y, len(docs), self.cv)
        say = self._say()
        n = len(docs)
        chosen = _pairs(self.pairs, self.representations, self.heads, self.finetune)
        kept = _affordable(chosen, n, seconds, self.finetune, say)
        cands = candidates(kept, per_pair=self.per_pair, random_state=self.random_state,
                           cache=self.cache)
        n_classes = len(np.unique(y))
        n_required = 1 + math.floor(math.log(len(cands), self.factor))
        floor = min(n, max(100, 5 * n_classes * self.cv))
        n_rounds = max(1, min(n_required, 1 + math.floor(math.log(n / floor, self.factor))))
        min_resources = n // self.factor ** (n_rounds - 1)
        folds = StratifiedKFold(n_splits=self.cv, shuffle=True, random_state=self.random_state)
        first = cands[0]["grid"]
        search = BudgetedHalvingSearchCV(
            Pipeline([("features", first["features"][0]), ("head", first["head"][0])]),
            [c["grid"] for c in cands], budget=seconds,
            info=[{"label": candidate_label(c), "cost": c["cost"],
                   "pair": f"{c['representation']} + {c['head']}"} for c in cands], progress=say,
            # refit after the baselines are scored: the pick may be one of them (no wasted refit)
            factor=self.factor, min_resources=min_resources, cv=folds, scoring=self.scoring,
            refit=False, error_score=np.nan, return_train_score=False,
            random_state=self.random_state, n_jobs=self.n_jobs)
        say(f"tune: {len(cands)} candidates from {len(kept)} pairs, {n:,} documents, {self.cv} "
            f"folds, up to {n_rounds} rounds from {min_resources:,} documents, budget {seconds:g} s")
        texts = pd.Series(docs)
        search.fit(texts, y)
        self.search_, self.budget_, self.pairs_ = search, seconds, kept
        self.candidates_ = [{k: v for k, v in c.items() if k != "grid"} for c in cands]
        self.pick_ = candidate_label(cands[search.candidate_[search.best_index_]])
        say(f"search: {search.search_seconds_:.0f} s; best candidate: {self.pick_} "
            f"({int(search.cv_results_['n_resources'][search.best_index_]):,} documents)")
        self.baselines_ = _score_baselines(search, texts, y, self.cache, say) if self.baselines else {}
        self._refit_the_pick(texts, y, say)
        self.classes_ = self.best_estimator_.classes_
        self.leaderboard_ = leaderboard(self)
        if self.output is not None:
            from .persist import save
            from .report import write_leaderboard

            title = f"embedkit tune ({n:,} documents, budget {seconds:g} s)"
            paths = write_leaderboard(self.leaderboard_, self.output, title=title,
                                      dataset=pd.DataFrame({"text": docs, "label": y}),
                                      pipelines=pipelines(self))
            say("wrote " + ", ".join(str(p) for p in paths))
            say(f"saved the model to {save(self.best_estimator_, Path(self.output) / 'model')}")
        self.budget_used_ = time.monotonic() - started
        return self

    def _refit_the_pick(self, X, y, say) -> None:
        """Refit the pick on all documents as ``best_estimator_``: the search's best candidate,
        or a plain baseline where one out-scores it on the same documents of the same folds.

        The halving search may end with its best candidate scored on a subsample only (the
        budget stopped it at an early round); that score is then compared with the baselines'
        scores on that very subsample (``baselines_[name]["scores_as_best"]``), not with their
        scores on all the documents, which more training data makes higher. A baseline that
        wins is the pick (``pick_`` names it): a user never leaves with a model worse than the
        five lines they could have written.
        """
        from sklearn.base import clone

        search = self.search_
        best = float(search.cv_results_["mean_test_score"][search.best_index_])
        began = time.monotonic()
        winner = (max(self.baselines_.items(), key=lambda item: np.mean(item[1]["scores_as_best"]))
                  if self.baselines_ else None)
        if winner is not None and np.mean(winner[1]["scores_as_best"]) > best:
            name, info = winner
            self.best_estimator_ = baseline_pipelines(self.cache)[name].fit(X, y)  # fresh: no clone
            self.pick_ = name
            say(f"pick: the baseline {name} ({np.mean(info['scores_as_best']):.3f}) beats the "
                f"search's best ({best:.3f}) on the same documents; refit on all documents in "
                f"{time.monotonic() - began:.0f} s")
        else:
            self.best_estimator_ = clone(search.estimator).set_params(
                **clone(search.best_params_, safe=False)).fit(X, y)
            say(f"pick: {self.pick_}; refit on all documents in {time.monotonic() - began:.0f} s")
        self.refit_time_ = time.monotonic() - began

    def predict(self, X):
        """The pick's predictions."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def predict_proba(self, X):
        """The pick's class probabilities (columns ordered as ``classes_``)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_proba(X)

    def score(self, X, y, sample_weight=None) -> float:
        """The pick's score under ``scoring`` on ``(X, y)``."""
        from sklearn.metrics import get_scorer

        check_is_fitted(self, "best_estimator_")
        return float(get_scorer(self.scoring)(self.best_estimator_, X, y, **(
            {} if sample_weight is None else {"sample_weight": sample_weight})))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.non_deterministic = True  # wall-clock budgets: what is scored depends on the machine
        return tags


def tune(X, y, budget: str | float = "15m", **params) -> Tuner:
    """``Tuner(budget, **params).fit(X, y)``: the budgeted search in one call.

    Examples
    --------
    >>> from embedkit import load_dataset
    >>> df = load_dataset("trec").sample(300, random_state=0)
    >>> tune(df["text"], df["label"], "30s", pairs=[("tfidf", "logreg-cv")],
    ...      progress=False).pick_  # doctest: +SKIP
    'tfidf + logreg-cv'
    """
    return Tuner(budget, **params).fit(X, y)


def _rounding_slack(search) -> int:
    """Documents the halving search's last round may fall short of all of them by (its
    ``n_resources`` are ``min_resources * factor ** round``, rounded down)."""
    return search.factor ** max(len(search.n_resources_) - 1, 0)


def _score_baselines(search, X, y, cache, say) -> dict:
    """Cross-validate the plain baselines on the search's folds: ``scores`` on all the
    documents, and ``scores_as_best`` on the documents the search's best candidate was scored
    on (the halving search's subsample of those folds at its round; ``scores`` when that round
    had them all)."""
    from sklearn.model_selection import cross_validate
    from sklearn.model_selection._search_successive_halving import _SubsampleMetaSplitter

    n = len(X)
    best_docs = int(search.cv_results_["n_resources"][search.best_index_])
    # the last round's n_resources is rounded down (5,985 of 5,988): that is all the data, as
    # in the leaderboard's all_data, and the baselines' scores on all of it serve as they are
    same_docs = None if n - best_docs < _rounding_slack(search) else list(_SubsampleMetaSplitter(
        base_cv=search.cv, fraction=best_docs / n, subsample_test=True,
        random_state=search.random_state).split(X, y))  # HalvingGridSearchCV's at that round
    out = {}
    for name, pipe in baseline_pipelines(cache).items():
        began = time.monotonic()
        scores = cross_validate(pipe, X, y, cv=search.cv, scoring=search.scoring)
        info = {"scores": scores["test_score"], "fit_seconds": float(np.mean(scores["fit_time"]))}
        info["scores_as_best"] = (info["scores"] if same_docs is None else cross_validate(
            pipe, X, y, cv=same_docs, scoring=search.scoring)["test_score"])
        info["seconds"] = time.monotonic() - began
        out[name] = info
        say(f"baseline {name}: {np.mean(info['scores']):.3f}" + (
            "" if same_docs is None else f", {np.mean(info['scores_as_best']):.3f} on the best "
            f"candidate's {best_docs:,} documents") + f" ({info['seconds']:.0f} s)")
    return out


def leaderboard(tuner) -> pd.DataFrame:
    """One row per candidate (its last round) and per baseline, best first.

    Columns: ``pipeline``, ``kind`` ("candidate" / "baseline"), ``representation``, ``head``,
    ``params``, ``round`` (1-based; baselines: the last), ``documents`` (of the round),
    ``all_data`` (scored on the full folds), ``<scoring>`` and ``<scoring>_std`` (over folds),
    ``fit_seconds`` (mean per fold), ``pick`` (the refit winner). Rows scored on all the data
    come first, then by documents and score.
    """
    search = tuner.search_
    res = search.cv_results_
    name = search.scoring if isinstance(search.scoring, str) else "score"
    n = search._n_samples_orig if hasattr(search, "_n_samples_orig") else search.n_resources_[-1]
    slack = _rounding_slack(search)
    pick = getattr(tuner, "pick_", None)
    last_row: dict[int, int] = {}
    for row, cand in enumerate(search.candidate_):
        last_row[int(cand)] = row  # rows are in evaluation order: the last is the latest round
    rows = []
    for cand, row in last_row.items():
        c = tuner.candidates_[cand]
        docs = int(res["n_resources"][row])
        rows.append({
            "pipeline": search.info[cand]["label"] if search.info else str(cand),
            "kind": "candidate", "representation": c.get("representation", ""),
            "head": c.get("head", ""), "params": describe(c.get("params", {})),
            "round": int(res["iter"][row]) + 1, "documents": docs,
            "all_data": n - docs < slack, name: float(res["mean_test_score"][row]),
            f"{name}_std": float(res["std_test_score"][row]),
            "fit_seconds": float(res["mean_fit_time"][row]),
            "pick": row == search.best_index_ and pick in (None, search.info[cand]["label"]
                                                        if search.info else None)})
    for base, info in getattr(tuner, "baselines_", {}).items():
        rep, head = base.rsplit(" + ", 1)
        rows.append({"pipeline": base, "kind": "baseline", "representation": rep, "head": head,
                     "params": "", "round": len(search.n_resources_), "documents": n,
                     "all_data": True, name: float(np.mean(info["scores"])),
                     f"{name}_std": float(np.std(info["scores"])),
                     "fit_seconds": info["fit_seconds"], "pick": base == pick})
    board = pd.DataFrame(rows)
    board[name] = board[name].astype(float)
    board = board.sort_values(["all_data", "documents", name], ascending=False,
                              na_position="last", kind="stable").reset_index(drop=True)
    board.insert(0, "rank", np.arange(1, len(board) + 1))
    folds = search.cv if isinstance(search.cv, int) else search.cv.get_n_splits()
    board.attrs.update(n_docs=n, metrics=[name], protocol=f"{folds}-fold stratified CV, "
                       f"successive halving (factor {search.factor})")
    return board


def pipelines(tuner) -> dict:
    """Each leaderboard row's pipeline, unfitted: a candidate's is the search's estimator with
    its parameters, a baseline's its five-line pipeline."""
    from sklearn.base import clone

    search = tuner.search_
    res, out = search.cv_results_, {}
    for row, cand in enumerate(search.candidate_):
        label = search.info[int(cand)]["label"] if search.info else str(cand)
        out[label] = clone(search.estimator).set_params(**res["params"][row])
    return {**out, **{name: pipe for name, pipe in baseline_pipelines(None).items()
                      if name in getattr(tuner, "baselines_", {})}}
