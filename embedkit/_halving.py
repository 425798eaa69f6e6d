"""Successive halving within a time budget: the search engine of `embedkit.tuning`.

`candidates` turns registry pairs into single-candidate grids (each pair's registry defaults,
then settings sampled from the entries' ``space``), cheapest first; `BudgetedHalvingSearchCV`
is scikit-learn's `HalvingGridSearchCV` that estimates each candidate's time before running it
and skips what the budget cannot pay for; `parse_budget` reads ``"15m"``-style durations.
"""

from __future__ import annotations

import inspect
import math
import re
import time
from collections.abc import Sequence
from numbers import Real
from typing import ClassVar

import numpy as np
from sklearn.experimental import enable_halving_search_cv  # noqa: F401  (the halving search)
from sklearn.model_selection import HalvingGridSearchCV
from sklearn.utils._param_validation import Interval

from .registry import HEADS, REPRESENTATIONS

__all__ = ["BudgetError", "BudgetedHalvingSearchCV", "candidate_label", "candidates", "describe",
           "parse_budget"]

#: the leader's refit is reserved at this multiple of its time scaled linearly to all documents
#: (iterative solvers such as LogisticRegression's take more than linear time as data grows)
REFIT_MARGIN = 1.5

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


def _with_cache(step, cache):
    if cache is not None and not isinstance(step, str) and "cache" in step.get_params():
        step.set_params(cache=cache)
    return step


def describe(params: dict) -> str:
    """``a=1, b=2``: a candidate's settings as the leaderboard prints them."""
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


def candidate_label(candidate: dict) -> str:
    """``representation + head (settings)``: a candidate's leaderboard name."""
    params = {k.split("__", 1)[1]: v for k, v in candidate["params"].items()}
    text = f"{candidate['representation']} + {candidate['head']}"
    return f"{text} ({describe(params)})" if params else text


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
