"""Budgeted search over representation x head x hyperparameters: `embedkit.tune`.

    search = embedkit.tune(texts, labels, budget="15m")
    search.best_estimator_.predict(["a new document"])
    search.leaderboard_          # candidates and the two plain baselines, best first

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
``budget`` bounds the search and the refit of the winner on all the data. Before each candidate
is cross-validated, its time is estimated (from its own time in the previous round, scaled by
the documents, or in the first round from the registry ``cost``) together with the time to refit
the current leader (``REFIT_MARGIN`` times its time scaled linearly to all the documents); a
candidate that would not finish in what is left is skipped, and a round in
which no candidate fits ends the search. **Granularity: one candidate's cross-validation at one
round's sample size** -- a candidate that has started is finished, never killed half-way, so a
search overruns its budget by the error of that estimate, which is large for a candidate whose
time grows faster than linearly with the documents (NBSVM + ``logreg-cv``: lbfgs over NB-scaled
features); `pipelines/benchmarks/tune_budget.py` measures the overrun
(`pipelines/benchmarks/results/tune_budget.md`). Within a round, candidates
are evaluated best-first (by the previous round's score), so when the budget runs out it is the
weakest that go unscored, and the pick is the best of the last round reached (scikit-learn's
rule for halving searches). The two plain baselines are scored after the search, outside the
budget, on the same folds (plain MiniLM costs one encoder pass, none when the search already
encoded the documents), and, where the search's best was scored on a subsample only, also on
that subsample of those folds: a candidate is compared with the baselines on the same
documents. Where a baseline out-scores the search's best, it is the pick. The pick is refit on
all the documents after that comparison (so no time goes into refitting a loser), and the saved
model is never worse than those five lines on the search's folds.
"""

from __future__ import annotations

import inspect
import math
import re
import sys
import time
import types
from collections.abc import Callable, Sequence
from numbers import Real
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
from sklearn.experimental import enable_halving_search_cv  # noqa: F401  (the halving search)
from sklearn.model_selection import HalvingGridSearchCV
from sklearn.utils._param_validation import Interval

from .registry import HEADS, REPRESENTATIONS

__all__ = [
    "DEFAULT_PAIRS",
    "BudgetError",
    "BudgetedHalvingSearchCV",
    "baseline_pipelines",
    "candidates",
    "parse_budget",
    "run_tune_cli",
    "tune",
    "write_leaderboard",
]

#: what `tune` searches when no pairs are given: the levers the accuracy suite found (issue 13)
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
#: the leader's refit is reserved at this multiple of its time scaled linearly to all documents
#: (iterative solvers such as LogisticRegression's take more than linear time as data grows)
REFIT_MARGIN = 1.5
TFIDF_BASELINE, MINILM_BASELINE = "plain TF-IDF + LR", "plain MiniLM + LR"

_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?:in)?)?(?:(\d+(?:\.\d+)?)s)?")


class BudgetError(RuntimeError):
    """The budget ran out before any candidate could be scored."""


def parse_budget(budget: str | float) -> float:
    """Seconds from a budget: a number of seconds, or a duration such as ``"90s"``, ``"15m"``,
    ``"1h"`` or ``"1h30m"``.

    Examples
    --------
    >>> parse_budget("15m"), parse_budget("1h30m"), parse_budget("90s"), parse_budget(45)
    (900.0, 5400.0, 90.0, 45.0)
    """
    how = ("write a number of seconds or a duration such as 90s, 15m, 1h or 1h30m "
           "(units: h, m, s)")
    if isinstance(budget, bool):
        raise TypeError(f"budget={budget!r}; {how}.")
    if isinstance(budget, Real):
        seconds = float(budget)
    elif isinstance(budget, str):
        text = budget.strip().lower().replace(" ", "")
        match = _DURATION.fullmatch(text)
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)
        elif text and match and any(match.groups()):
            h, m, s = (float(g) if g else 0.0 for g in match.groups())
            seconds = 3600 * h + 60 * m + s
        else:
            raise ValueError(f"budget={budget!r} is not a duration; {how}.")
    else:
        raise TypeError(f"budget={budget!r} ({type(budget).__name__}); {how}.")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"budget={budget!r}; the budget must be a positive time: {how}.")
    return seconds


# -- candidates -------------------------------------------------------------------------------

def _with_cache(step, cache):
    if cache is not None and not isinstance(step, str) and "cache" in step.get_params():
        step.set_params(cache=cache)
    return step


def _describe(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def candidates(pairs: Sequence[tuple[str, str]], *, per_pair: int = 3, random_state: int = 0,
               cache="memory") -> list[dict]:
    """The candidates of a tune search, cheapest first.

    Each pair gives its registry default, then up to ``per_pair - 1`` other settings sampled
    from its representation's and head's ``space``; pairs whose cost is 30 or more (fine-tuning,
    stacking) give their default only.

    Returns
    -------
    list of dict
        ``representation``, ``head`` (registry names), ``params`` (the sampled overrides, as
        ``features__x`` / ``head__y``), ``cost`` (registry cost per 1,000 documents) and
        ``grid`` (a single-candidate ``param_grid`` entry for `HalvingGridSearchCV`).

    Examples
    --------
    >>> [(c["representation"], c["params"]) for c in candidates([("tfidf", "logreg-cv")])]
    [('tfidf', {}), ('tfidf', {'features__ngram_range': (1, 2)}), \
('tfidf', {'features__min_df': 1, 'features__ngram_range': (1, 2)})]
    """
    from sklearn.model_selection import ParameterSampler

    out = []
    for rep_name, head_name in pairs:
        rep_entry, head_entry = REPRESENTATIONS[rep_name], HEADS[head_name]
        cost = rep_entry.cost + head_entry.cost
        space = {**{f"features__{k}": list(v) for k, v in rep_entry.space.items()},
                 **{f"head__{k}": list(v) for k, v in head_entry.space.items()}}
        features, head = rep_entry.factory(), head_entry.factory()
        defaults = {}
        for key in space:
            part, name = key.split("__", 1)
            defaults[key] = (features if part == "features" else head).get_params()[name]
        settings = [{}]
        n_more = per_pair - 1 if cost < 30 else 0
        if space and n_more > 0:
            size = math.prod(len(v) for v in space.values())
            draws = ParameterSampler(space, n_iter=min(size, n_more + 1), random_state=random_state)
            for draw in draws:
                draw = dict(sorted(draw.items()))
                changed = {k: v for k, v in draw.items() if defaults[k] != v}
                if changed and changed not in settings and len(settings) <= n_more:
                    settings.append(changed)
        for params in settings:
            grid = {"features": [_with_cache(rep_entry.factory(), cache)],
                    "head": [head_entry.factory()], **{k: [v] for k, v in params.items()}}
            out.append({"representation": rep_name, "head": head_name, "params": params,
                        "cost": cost, "grid": grid})
    order = sorted(range(len(out)), key=lambda i: (out[i]["cost"], i))
    return [out[i] for i in order]


def _label(candidate: dict) -> str:
    params = {k.split("__", 1)[1]: v for k, v in candidate["params"].items()}
    text = f"{candidate['representation']} + {candidate['head']}"
    return f"{text} ({_describe(params)})" if params else text


# -- the search -------------------------------------------------------------------------------

class _OutOfBudget(Exception):
    """Raised inside the halving loop to end it (no candidate of a round fits the budget)."""


class BudgetedHalvingSearchCV(HalvingGridSearchCV):
    """scikit-learn's `HalvingGridSearchCV` that stops at a time budget.

    Parameters are those of `HalvingGridSearchCV`, plus:

    budget : float or None
        Seconds for the search and the refit of the winner (None: no limit).
    info : list of dict or None
        One dict per ``param_grid`` entry: ``label``, ``cost`` (seconds per 1,000 documents,
        the first-round time estimate) and ``pair`` (candidates of one pair share time
        estimates until each has its own).
    progress : callable or None
        Called with one line of text after each candidate (and each skip).

    Each ``param_grid`` entry must hold one candidate with its own ``head`` object (as
    `candidates` builds them): that is how results are traced back to candidates.

    Attributes
    ----------
    stopped_by_budget_ : bool
        True when the budget skipped candidates or ended the search early.
    skipped_ : list of dict
        Candidates not scored in a round for lack of time: ``round``, ``label``, ``estimate_s``,
        ``left_s``.
    candidate_ : ndarray of int
        For each ``cv_results_`` row, the index of its ``param_grid`` entry.
    search_seconds_ : float
        Wall-clock seconds of the search, and of the refit where ``refit=True`` (`tune` refits
        after scoring the baselines: its ``refit_time_``).

    Besides these, every attribute of `HalvingGridSearchCV` (``best_estimator_``,
    ``cv_results_``, ``n_resources_``, ...).
    """

    _parameter_constraints: ClassVar[dict] = {
        **HalvingGridSearchCV._parameter_constraints,
        "budget": [Interval(Real, 0, None, closed="neither"), None],
        "info": [list, None],
        "progress": [callable, None],
    }

    def __init__(self, estimator, param_grid, *, budget=None, info=None, progress=None,
                 factor=3, resource="n_samples", max_resources="auto", min_resources="exhaust",
                 aggressive_elimination=False, cv=5, scoring=None, refit=True,
                 error_score=np.nan, return_train_score=True, random_state=None, n_jobs=None,
                 verbose=0):
        super().__init__(estimator, param_grid, factor=factor, resource=resource,
                         max_resources=max_resources, min_resources=min_resources,
                         aggressive_elimination=aggressive_elimination, cv=cv, scoring=scoring,
                         refit=refit, error_score=error_score,
                         return_train_score=return_train_score, random_state=random_state,
                         n_jobs=n_jobs, verbose=verbose)
        self.budget = budget
        self.info = info
        self.progress = progress

    def fit(self, X, y=None, **params):
        self._start = time.monotonic()
        super().fit(X, y, **params)
        keys = self._keys()
        self.candidate_ = np.array([keys.get(id(p["head"]), -1)
                                    for p in self.cv_results_["params"]])
        self.search_seconds_ = time.monotonic() - self._start
        return self

    def _keys(self) -> dict:
        grid = self.param_grid if isinstance(self.param_grid, list) else [self.param_grid]
        return {id(g["head"][0]): i for i, g in enumerate(grid)}

    def _info(self, i: int) -> dict:
        info = self.info[i] if self.info and 0 <= i < len(self.info) else {}
        return {"label": info.get("label", f"candidate {i}"), "cost": info.get("cost", 0.0),
                "pair": info.get("pair")}

    def _run_search(self, evaluate_candidates, callback_ctx=None):
        budget = math.inf if self.budget is None else float(self.budget)
        deadline = self._start + budget
        keys = self._keys()
        n_splits, n_samples = self.n_splits_, self._n_samples_orig
        timing: dict[int, tuple[float, int]] = {}  # candidate -> (seconds per fold, documents)
        scores: dict[int, tuple[int, float]] = {}  # candidate -> (round, mean score)
        self.stopped_by_budget_, self.skipped_ = False, []
        say = self.progress or (lambda line: None)

        def estimate(key: int, n_resources: int) -> float:
            """Its own time in the last round it ran, else the slowest measured time of its
            pair (same representation and head, other settings), else the registry cost."""
            pair = self._info(key)["pair"]
            known = ([timing[key]] if key in timing else
                     [t for k, t in timing.items() if pair and self._info(k)["pair"] == pair])
            if known:
                return max(per_fold * n_splits * n_resources / max(docs, 1)
                           for per_fold, docs in known)
            return self._info(key)["cost"] * n_resources / 1000 * n_splits

        def refit_reserve() -> float:
            """Time to refit the current leader (best of the latest round) on all documents."""
            if not scores:
                return 0.0
            last = max(r for r, _ in scores.values())
            leader = max((s, k) for k, (r, s) in scores.items() if r == last)[1]
            per_fold, docs = timing[leader]
            linear = per_fold * n_samples / max(docs * (n_splits - 1) / n_splits, 1)
            return REFIT_MARGIN * linear

        def budgeted(candidate_params, cv=None, more_results=None, **_):
            itr = more_results["iter"][0]
            n_resources = more_results["n_resources"][0]
            params = list(candidate_params)
            if itr > 0:  # halving hands the survivors worst-first: score the leaders first
                params.reverse()
            results = None
            for p in params:
                key = keys.get(id(p["head"]), -1)
                label = self._info(key)["label"]
                need = estimate(key, n_resources)
                left = deadline - time.monotonic() - refit_reserve()
                if need > left:
                    self.stopped_by_budget_ = True
                    self.skipped_.append({"round": itr, "label": label, "estimate_s": need,
                                          "left_s": max(left, 0.0)})
                    say(f"[{time.monotonic() - self._start:6.0f} s] round {itr + 1}, "
                        f"{n_resources:,} docs: skip {label}: about {need:.0f} s, "
                        f"{max(left, 0):.0f} s left")
                    continue
                began = time.monotonic()
                results = evaluate_candidates(
                    [p], cv, more_results={"iter": [itr], "n_resources": [n_resources]})
                spent = time.monotonic() - began
                score = float(results["mean_test_score"][-1])
                timing[key] = (spent / n_splits, n_resources)
                scores[key] = (itr, -np.inf if np.isnan(score) else score)
                say(f"[{time.monotonic() - self._start:6.0f} s] round {itr + 1}, "
                    f"{n_resources:,} docs: {label}: {score:.3f} ({spent:.1f} s)")
            if results is None:
                raise _OutOfBudget
            return results

        parent = super()._run_search
        kwargs = ({"callback_ctx": callback_ctx}
                  if "callback_ctx" in inspect.signature(parent).parameters else {})
        try:
            parent(budgeted, **kwargs)
        except _OutOfBudget:  # a round with nothing scored: end where the last one ended
            self.n_resources_.pop()
            self.n_candidates_.pop()
            self.n_iterations_ = len(self.n_resources_)
            self.n_remaining_candidates_ = sum(r == self.n_iterations_ - 1
                                               for r, _ in scores.values())
            self.n_required_iterations_ = 1 + math.floor(math.log(len(keys), self.factor))
            self.n_possible_iterations_ = 1 + math.floor(
                math.log(self.max_resources_ // self.min_resources_, self.factor))
        if not scores:
            first = min(range(len(keys)), key=lambda k: estimate(k, self.min_resources_))
            need = estimate(first, self.min_resources_)
            raise BudgetError(
                f"the budget of {budget:g} s ran out before any candidate was scored: the "
                f"cheapest, {self._info(first)['label']}, needs about {need:.1f} s for the first "
                f"round ({self.min_resources_:,} documents, {n_splits} folds) plus its refit. "
                "Give a larger budget (e.g. budget='2m'), fewer or cheaper pairs, or fewer "
                "documents.")


# -- baselines --------------------------------------------------------------------------------

def baseline_pipelines(cache="memory") -> dict:
    """The two five-line baselines a user would write (issue 13), by leaderboard name.

    They are `embedkit.registry.BASELINES`' rows, the ones every ``embedkit compare`` report
    carries: *plain TF-IDF + LR* is scikit-learn ``TfidfVectorizer(ngram_range=(1, 2),
    min_df=2, sublinear_tf=True)`` + ``LogisticRegression(max_iter=3000)``; *plain MiniLM + LR*
    the packaged all-MiniLM-L6-v2, L2-normalised as sentence-transformers' ``encode`` returns it,
    + the same ``LogisticRegression``. The MiniLM one uses ``cache``, so it reads the vectors
    the search already computed (the registry's ``minilm`` has the same fingerprint).
    """
    from sklearn.pipeline import Pipeline

    from .registry import BASELINES

    reps, heads = BASELINES.representations, BASELINES.heads
    return {  # the candidates' step names, so a baseline pick reads like any other
        TFIDF_BASELINE: Pipeline([("features", reps["baseline-tfidf"].factory()),
                                  ("head", heads["plain-lr"].factory())]),
        MINILM_BASELINE: Pipeline([
            ("features", reps["baseline-minilm"].factory().set_params(cache=cache)),
            ("head", heads["plain-lr"].factory())]),
    }


# -- tune -------------------------------------------------------------------------------------

def _pairs(pairs, representations, heads, finetune) -> list[tuple[str, str]]:
    from . import registry

    if pairs is not None and (representations or heads):
        raise ValueError("give either pairs=[(representation, head), ...] or representations= / "
                         "heads= selections, not both.")
    if pairs is None and not (representations or heads):
        chosen = list(DEFAULT_PAIRS)
    elif pairs is None:
        chosen = list(registry.select(representations or None, heads or None).pairs)
    else:
        chosen = list(registry._checked(pairs, REPRESENTATIONS, HEADS, "tune(pairs=...)"))
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


def tune(X, y, budget: str | float = "15m", *, pairs: Sequence[tuple[str, str]] | None = None,
         representations: Sequence[str] | None = None, heads: Sequence[str] | None = None,
         cv: int = 3, scoring: str = "accuracy", factor: int = 3, per_pair: int = 3,
         finetune: bool | str = "auto", baselines: bool = True, cache="memory",
         random_state: int = 0, n_jobs: int | None = None, output: str | Path | None = None,
         progress: bool | Callable[[str], None] = True) -> BudgetedHalvingSearchCV:
    """Find the best representation x head x hyperparameters for ``(X, y)`` within a budget.

    See the module docstring for how the search runs and how the budget is kept.

    Parameters
    ----------
    X : iterable of str
        The documents.
    y : array-like
        One label per document.
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
        A folder: ``leaderboard.csv`` / ``.md`` / ``.png`` are written there, and the refit
        winner is saved to ``output/model/`` with `embedkit.persist.save`.
    progress : bool or callable, default=True
        Print a line per candidate (to stderr), or call ``progress(line)``.

    Returns
    -------
    BudgetedHalvingSearchCV
        Fitted: ``best_estimator_`` is the winning `Pipeline` refit on all of ``X`` (a plain
        baseline when it out-scores the best candidate on the same documents of the same folds;
        ``pick_`` names it); ``leaderboard_`` is the leaderboard (`leaderboard`), ``baselines_``
        the baselines' fold scores (``scores`` on all the documents, ``scores_as_best`` on the
        best candidate's), ``refit_time_`` the pick's refit seconds, ``budget_`` the budget in
        seconds.

    Raises
    ------
    BudgetError
        When the budget runs out before any candidate is scored.

    Examples
    --------
    >>> from embedkit import load_dataset
    >>> df = load_dataset("bbc-news").sample(300, random_state=0)
    >>> search = tune(df["text"], df["label"], budget="1m",
    ...               pairs=[("tfidf", "logreg-cv")])  # doctest: +SKIP
    >>> search.leaderboard_[["pipeline", "accuracy"]].head(3)  # doctest: +SKIP
    """
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import Pipeline

    from .documents import validate_documents

    seconds = parse_budget(budget)
    if finetune not in ("auto", True, False):
        raise ValueError(f"finetune={finetune!r}; use 'auto', True or False.")
    if not isinstance(cv, (int, np.integer)) or isinstance(cv, bool) or cv < 2:
        raise ValueError(f"cv={cv!r}; use an int >= 2 (stratified folds).")
    docs = np.asarray(validate_documents(X), dtype=object)
    y = _check_labels(y, len(docs), cv)
    say = (progress if callable(progress)
           else (lambda line: print(line, file=sys.stderr, flush=True)) if progress
           else (lambda line: None))
    n = len(docs)
    chosen = _pairs(pairs, representations, heads, finetune)
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
            f"{BUDGET_SHARE_PER_FIT:.0%} of it): "
            + ", ".join(f"{r} + {h}" for r, h in dropped))
    if not kept:
        cheapest = min(chosen, key=lambda p: REPRESENTATIONS[p[0]].cost + HEADS[p[1]].cost)
        need = (REPRESENTATIONS[cheapest[0]].cost + HEADS[cheapest[1]].cost) * n / 1000
        raise BudgetError(
            f"a budget of {seconds:g} s is too small for any pair on {n:,} documents: the cheapest,"
            f" {cheapest[0]} + {cheapest[1]}, is estimated at {need:.0f} s per fit. Give at least "
            f"{math.ceil(need / BUDGET_SHARE_PER_FIT)} s, or fewer documents.")
    cands = candidates(kept, per_pair=per_pair, random_state=random_state, cache=cache)
    n_classes = len(np.unique(y))
    n_required = 1 + math.floor(math.log(len(cands), factor))
    floor = min(n, max(100, 5 * n_classes * cv))
    n_rounds = max(1, min(n_required, 1 + math.floor(math.log(n / floor, factor))))
    min_resources = n // factor ** (n_rounds - 1)
    folds = StratifiedKFold(n_splits=cv, shuffle=True, random_state=random_state)
    first = cands[0]["grid"]
    search = BudgetedHalvingSearchCV(
        Pipeline([("features", first["features"][0]), ("head", first["head"][0])]),
        [c["grid"] for c in cands], budget=seconds,
        info=[{"label": _label(c), "cost": c["cost"], "pair": f"{c['representation']} + "
               f"{c['head']}"} for c in cands], progress=say,
        # refit after the baselines are scored: the pick may be one of them (no wasted refit)
        factor=factor, min_resources=min_resources, cv=folds, scoring=scoring, refit=False,
        error_score=np.nan, return_train_score=False, random_state=random_state, n_jobs=n_jobs)
    say(f"tune: {len(cands)} candidates from {len(kept)} pairs, {n:,} documents, {cv} folds, "
        f"up to {n_rounds} rounds from {min_resources:,} documents, budget {seconds:g} s")
    started = time.monotonic()
    search.fit(pd.Series(docs), y)
    search.budget_ = seconds
    search.pairs_ = kept
    search.candidates_ = [{k: v for k, v in c.items() if k != "grid"} for c in cands]
    search.pick_ = _label(cands[search.candidate_[search.best_index_]])
    say(f"search: {search.search_seconds_:.0f} s; best candidate: {search.pick_} "
        f"({int(search.cv_results_['n_resources'][search.best_index_]):,} documents)")
    search.baselines_ = (_score_baselines(search, pd.Series(docs), y, cache, say)
                         if baselines else {})
    _refit_the_pick(search, pd.Series(docs), y, cache, say)
    search.elapsed_ = time.monotonic() - started
    search.leaderboard_ = leaderboard(search)
    if output is not None:
        paths = write_leaderboard(search.leaderboard_, output, title=f"embedkit tune ({n:,} "
                                  f"documents, budget {seconds:g} s)",
                                  dataset=pd.DataFrame({"text": docs, "label": y}),
                                  pipelines=_pipelines(search))
        say("wrote " + ", ".join(str(p) for p in paths))
        say(f"saved the model to {save_model(search.best_estimator_, Path(output) / 'model')}")
    return search


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


def _refit_the_pick(search, X, y, cache, say) -> None:
    """Refit the pick on all documents as ``best_estimator_``: the search's best candidate, or
    a plain baseline where one out-scores it on the same documents of the same folds.

    The halving search may end with its best candidate scored on a subsample only (the budget
    stopped it at an early round); that score is then compared with the baselines' scores on
    that very subsample (``baselines_[name]["scores_as_best"]``), not with their scores on all
    the documents, which more training data makes higher. A baseline that wins is the pick
    (``pick_`` names it; ``best_params_`` / ``best_score_`` stay the best candidate's): a user
    never leaves with a model worse than the five lines they could have written.
    """
    from sklearn.base import clone

    best = float(search.cv_results_["mean_test_score"][search.best_index_])
    began = time.monotonic()
    winner = (max(search.baselines_.items(), key=lambda item: np.mean(item[1]["scores_as_best"]))
              if search.baselines_ else None)
    if winner is not None and np.mean(winner[1]["scores_as_best"]) > best:
        name, info = winner
        search.best_estimator_ = baseline_pipelines(cache)[name].fit(X, y)  # built fresh: no clone
        search.pick_ = name
        say(f"pick: the baseline {name} ({np.mean(info['scores_as_best']):.3f}) beats the "
            f"search's best ({best:.3f}) on the same documents; refit on all documents in "
            f"{time.monotonic() - began:.0f} s")
    else:
        search.best_estimator_ = clone(search.estimator).set_params(
            **clone(search.best_params_, safe=False)).fit(X, y)
        say(f"pick: {search.pick_}; refit on all documents in {time.monotonic() - began:.0f} s")
    search.refit_time_ = time.monotonic() - began
    search.refit = True  # refitted here: scikit-learn's predict/score now read best_estimator_


def leaderboard(search) -> pd.DataFrame:
    """One row per candidate (its last round) and per baseline, best first.

    Columns: ``pipeline``, ``kind`` ("candidate" / "baseline"), ``representation``, ``head``,
    ``params``, ``round`` (1-based; baselines: the last), ``documents`` (of the round),
    ``all_data`` (scored on the full folds), ``<scoring>`` and ``<scoring>_std`` (over folds),
    ``fit_seconds`` (mean per fold), ``pick`` (the refit winner). Rows scored on all the data
    come first, then by documents and score.
    """
    res = search.cv_results_
    name = search.scoring if isinstance(search.scoring, str) else "score"
    n = search._n_samples_orig if hasattr(search, "_n_samples_orig") else search.n_resources_[-1]
    slack = _rounding_slack(search)
    pick = getattr(search, "pick_", None)
    last_row: dict[int, int] = {}
    for row, cand in enumerate(search.candidate_):
        last_row[int(cand)] = row  # rows are in evaluation order: the last is the latest round
    rows = []
    for cand, row in last_row.items():
        c = search.candidates_[cand] if hasattr(search, "candidates_") else {}
        docs = int(res["n_resources"][row])
        rows.append({
            "pipeline": search.info[cand]["label"] if search.info else str(cand),
            "kind": "candidate", "representation": c.get("representation", ""),
            "head": c.get("head", ""), "params": _describe(c.get("params", {})),
            "round": int(res["iter"][row]) + 1, "documents": docs,
            "all_data": n - docs < slack, name: float(res["mean_test_score"][row]),
            f"{name}_std": float(res["std_test_score"][row]),
            "fit_seconds": float(res["mean_fit_time"][row]),
            "pick": row == search.best_index_ and pick in (None, search.info[cand]["label"]
                                                        if search.info else None)})
    for base, info in getattr(search, "baselines_", {}).items():
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


def write_leaderboard(board: pd.DataFrame, output: str | Path, *, title: str = "embedkit tune",
                      top: int = 20, dataset: pd.DataFrame | None = None,
                      pipelines: dict | None = None) -> list[Path]:
    """Write ``leaderboard.csv``, ``leaderboard.md``, ``leaderboard.png`` (the ``top`` rows as
    bars, `embedkit.plots.score_chart`) and ``report.html`` (`embedkit.report.write_html_report`:
    every row, sortable, the score-versus-time chart, the ``dataset`` summary and the parameters
    of each row's pipeline from ``pipelines``, keyed by the ``pipeline`` column) into the folder
    ``output``; returns their paths."""
    from .plots import score_chart
    from .report import write_html_report

    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    metric = next(c for c in board.columns if c.endswith("_std"))[: -len("_std")]
    csv_path, md_path, png_path = (out / f"leaderboard.{ext}" for ext in ("csv", "md", "png"))
    board.to_csv(csv_path, index=False)
    shown = board.head(top).copy()
    shown["pick"] = np.where(shown["pick"], "**pick**", "")
    shown["all_data"] = np.where(shown["all_data"], "yes", "no")
    table = shown[["rank", "pipeline", "kind", "round", "documents", "all_data", metric,
                   f"{metric}_std", "fit_seconds", "pick"]].to_markdown(index=False,
                                                                        floatfmt=".3f")
    md_path.write_text(
        f"# {title}\n\n{metric} (mean over the cross-validation folds, std beside it) of each "
        "candidate at the last round it reached (*documents*: that round's sample; *all_data*: "
        "scored on the full folds, as the baselines are), and of the two plain baselines on the "
        "same folds. *fit_seconds*: mean per fold, wall clock.\n\n" + table + "\n")
    # charts and the page name each row by its pipeline, its sample when it is not all the data
    # and the pick; representation (the family colour) and head stay the registry names
    results = board.rename(columns={metric: f"{metric}_mean"})
    results["pipeline"] = [
        label + ("" if full else f" [{docs:,} docs]") + (" [pick]" if pick else "")
        for label, full, docs, pick in zip(board["pipeline"], board["all_data"],
                                           board["documents"], board["pick"], strict=True)]
    results.attrs.update(board.attrs)
    score_chart(results.head(top), png_path, title=title, metric=metric)
    html_path = write_html_report(
        results, out / "report.html", dataset=dataset, metric=metric, title=title,
        pipelines={shown_as: pipelines[label] for label, shown_as
                   in zip(board["pipeline"], results["pipeline"], strict=True)
                   if pipelines and label in pipelines})
    return [csv_path, md_path, png_path, html_path]


def _pipelines(search) -> dict:
    """Each leaderboard row's pipeline, unfitted: a candidate's is the search's estimator with
    its parameters, a baseline's its five-line pipeline."""
    from sklearn.base import clone

    res, out = search.cv_results_, {}
    for row, cand in enumerate(search.candidate_):
        label = search.info[int(cand)]["label"] if search.info else str(cand)
        out[label] = clone(search.estimator).set_params(**res["params"][row])
    return {**out, **{name: pipe for name, pipe in baseline_pipelines(None).items()
                      if name in getattr(search, "baselines_", {})}}


def save_model(pipeline, path: str | Path) -> Path:
    """Save ``pipeline`` as a model folder at ``path`` with `embedkit.persist.save`, written to a
    temporary sibling first and renamed, so an interrupted save leaves no half-written folder."""
    import os
    import shutil
    import tempfile

    try:
        from .persist import save
    except ImportError as err:
        raise ImportError(
            "saving the tuned model needs embedkit.persist (save/load of model folders), which "
            "this installation does not have yet; the leaderboard was written. Call tune() "
            "without output= and keep search.best_estimator_, or update embedkit.") from err
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    try:
        save(pipeline, staging / "model")
        if path.exists():
            shutil.rmtree(path)
        os.replace(staging / "model", path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return path


# -- the command -----------------------------------------------------------------------------

def run_tune_cli(file: str | Path | None = None, text_column: str = "text",
                 label_column: str = "label", budget: str = "15m", dataset: str | None = None,
                 output: str | Path = "embedkit-tune", cv: int = 3, seed: int = 0,
                 finetune: bool | str = "auto", progress: bool = True,
                 representations: Sequence[str] | None = None,
                 heads: Sequence[str] | None = None):
    """The body of ``embedkit tune``: load the data, tune, print the leaderboard, save.

    ``embedkit tune --file data.csv --text-column review --label-column stars --budget 15m``
    (or ``-d NAME`` for a built-in dataset; where it has an official split only its ``train``
    rows are used, keeping the test rows unseen). ``representations`` / ``heads`` narrow the
    search to every compatible pair of those registry names. Progress lines go to stderr, the
    leaderboard to stdout; ``output`` gets the leaderboard files, ``report.html`` and the model
    folder ``output/model/``.
    Returns the fitted search.
    """
    from .datasets import load_dataset
    from .io import load_texts

    seconds = parse_budget(budget)  # refuse a bad budget before loading anything
    if (file is None) == (dataset is None):
        raise ValueError("give either --file PATH (with --text-column/--label-column) or "
                         "-d NAME for a built-in dataset (see `embedkit datasets`).")
    if file is not None:
        df = load_texts(file, text_column, label_column)
    else:
        df = load_dataset(dataset)
    if "split" in df and set(df["split"]) >= {"train", "test"}:
        df = df[df["split"] == "train"].reset_index(drop=True)
        if progress:
            print(f"tune: the data has an official split; tuning on its {len(df):,} train rows",
                  file=sys.stderr, flush=True)
    search = tune(df["text"], df["label"], seconds, cv=cv, random_state=seed, finetune=finetune,
                  progress=progress, representations=representations or None,
                  heads=heads or None)
    board = search.leaderboard_
    metric = next(c for c in board.columns if c.endswith("_std"))[: -len("_std")]
    print(board.head(15)[["rank", "pipeline", "kind", "documents", metric, "fit_seconds",
                          "pick"]].to_string(index=False, float_format="{:.3f}".format))
    paths = write_leaderboard(board, output, title=f"embedkit tune ({len(df):,} documents, "
                              f"budget {budget})", dataset=df, pipelines=_pipelines(search))
    print("wrote " + ", ".join(str(p) for p in paths))
    print(f"saved the model to {save_model(search.best_estimator_, Path(output) / 'model')}")
    return search


class _CallableModule(types.ModuleType):
    """``embedkit.tune`` is both this module and its `tune` function: once ``import
    embedkit.tune`` has bound the module to the package's attribute, ``embedkit.tune(X, y)``
    still calls the function."""

    def __call__(self, *args, **kwargs):
        return tune(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
