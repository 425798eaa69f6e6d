"""The best pipeline a time budget buys, as an estimator: `Tuner`.

    tuner = embedkit.Tuner(budget="10m", output="my-tune").fit(texts, labels)
    tuner.predict(["a new document"])      # the pick
    tuner.leaderboard_                     # every model tried, the baselines, what was left out

``embedkit.tune(texts, labels, budget="10m")`` is ``Tuner(budget="10m").fit(texts, labels)``;
``embedkit tune`` (`embedkit.cli`) is a thin layer over it.

The budget is wall time for the whole of `Tuner.fit`: the search, the two plain baselines, the
refit of the pick and writing ``output``. The search (`embedkit.tuning._engine`) scores every model
on one validation split (the same rows for all; below 500 documents, every row, by 5-fold
cross-validation). Its schedule (`embedkit.tuning._schedule`) runs
what promises the most expected gain per second of this machine: every model starts on what is
cheap (a subsample of rows, one epoch, the length the documents need) and grows (more rows, then
its own epochs) while its measured curve promises the most; an ensemble is selected from
everything scored. A model that does not fit is left out, with the budget that would include it.
The pick (`embedkit.tuning._pick`) is the better of the two baselines a user could write in five
lines (where labels are few, the best model of `FEW_LABEL_PAIRS`: frozen mpnet + LR, SetFit),
unless a model (or ensemble) beats it beyond the noise of the validation rows; then the best of
those, or a close one that predicts much faster. It is refit on all the documents when that adds
rows worth the time the budget has left, and otherwise kept as fitted on the training rows. A
fine-tuned pick (or ensemble member) is refit as the mean of as many seeds as the time left pays
for, up to `MAX_SEEDS`: seeds are not compared on the validation rows (the luckiest of several
seeds of one recipe would be picked for its luck), they are averaged; the search keeps back the
time of `RESERVED_SEEDS` of them once its defaults are done. Every number it decides by is in
`embedkit.tuning._settings` (listed in the manual). Ctrl-C (``KeyboardInterrupt``) during the
search ends it and finishes with the best so far.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import get_scorer_names
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._budget import BudgetError, Clock, format_bytes, format_seconds, parse_budget
from .._params import validate_params
from .._stopping import interrupts_held
from ..base import CheckedKeywords, store_params
from ..storage.outputs import check_output_folder, publish_folder
from ._engine import Search
from ._finish import Finish
from ._inputs import (
    MINILM_BASELINE,
    TFIDF_BASELINE,
    baseline_pipelines,
    chosen_pairs,
    least_budget,
    memory_limit,
    pairs_for_task,
    prepare,
    rows_to_read,
    standing_pairs,
)
from ._lanes import accelerated
from ._leaderboard import calibration_figures, leaderboard, pipelines, write_leaderboard
from ._schedule import TIERS, Schedule
from ._settings import (
    DEFAULT_PAIRS,
    MAX_SEEDS,
    RESERVED_SEEDS,
)
from .targets import TargetSet, fit_targets, several_targets

__all__ = ["DEFAULT_PAIRS", "MAX_SEEDS", "MINILM_BASELINE", "RESERVED_SEEDS",
           "TFIDF_BASELINE", "BudgetError", "Tuner", "baseline_pipelines", "leaderboard",
           "least_budget", "memory_limit", "parse_budget", "pipelines", "rows_to_read", "tune"]



#: scikit-learn's warnings about the rows the search itself chose (a class with fewer rows than
#: logreg-cv's 3 folds in a growth slice, many classes among a fine-tuning probe's few rows):
#: the user cannot act on them; a class too rare in the user's own labels is refused before the
#: search
_SLICE_WARNINGS = ("The least populated class in y has only",
                   "The number of unique classes is greater than 50%")
#: SciPy's warning from Ridge's solve on a candidate's features (a number's head and baselines:
#: TF-IDF columns or a table's raw numbers on a slice of rows): the fit stands (its ``alpha``
#: regularises it) and the features and rows are the search's choice, not the user's
_SOLVE_WARNING = "An ill-conditioned matrix detected"


@contextmanager
def _quiet_about_its_own_choices():
    """The search and its finish without the warnings about what they chose (`_SLICE_WARNINGS`,
    `_SOLVE_WARNING`); every other warning passes."""
    from scipy.linalg import LinAlgWarning

    with warnings.catch_warnings():
        for message in _SLICE_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=UserWarning)
        warnings.filterwarnings("ignore", message=_SOLVE_WARNING, category=LinAlgWarning)
        yield


def _clock(budget, started: float | None) -> Clock:
    """The one reading of ``budget``, counted from ``started`` (a `time.monotonic`) or now."""
    clock = Clock(parse_budget(budget))
    clock.start = clock.start if started is None else started
    return clock


def progress_printer(progress) -> Callable[[str], None]:
    """Where `Tuner`'s progress lines go: its ``progress`` callable, stderr (True), nowhere."""
    if callable(progress):
        return progress
    if progress:
        return lambda line: print(line, file=sys.stderr, flush=True)
    return lambda line: None


class Tuner(CheckedKeywords, ClassifierMixin, BaseEstimator):
    """Find the best representation x head x settings for ``(X, y)`` within a time budget.

    A scikit-learn classifier: `fit` runs the search and keeps the pick (see the module
    docstring); `predict`, `predict_proba` and `score` use it. With ``y`` a DataFrame of several
    columns, one search per target (`embedkit.tuning.targets`): the pick is a
    `embedkit.TargetSet` whose ``predict`` gives a column per target, ``targets_`` holds each
    target's own fitted `Tuner`, and ``pick_``, ``task_`` and ``scoring_`` are per target.

    Parameters
    ----------
    budget : str or float, default="15m"
        Wall time of the whole `fit`, in seconds or as ``"90s"``, ``"15m"``, ``"1h"``
        (`parse_budget`).
    pairs : list of (str, str), optional
        ``(representation, head)`` registry names to search; default `DEFAULT_PAIRS`. Each is
        placed in its tier (sparse, frozen encoder, fine-tuning) by what it is.
    representations, heads : list of str, optional
        Instead of ``pairs``: every compatible pair of these (registry defaults for the other).
    validation : "auto" or float, default="auto"
        A share of the documents held out as the one validation split every model is scored on
        (at least 20 rows and two of each class, at most 2,000 rows). "auto": 0.2, except below
        500 documents (``CV_ROWS``; classes or a number; label sets always hold rows out), where so
        few held-out rows would pick a model by their noise: then each model is scored on every
        row by 5-fold cross-validation (a fit a fold, predicting the rows it left out),
        and the pick refit on all of them.
    scoring : str, optional
        A scikit-learn scorer name; by default accuracy for classes, R² for a number (on the
        one validation split R² ranks models as RMSE does, and it reads as a share: 1 is
        perfect, 0 the mean) and micro-F1 for label sets (``f1_macro`` and ``f1_samples`` are
        the others there).
    task : {None, "classification", "regression", "multilabel"}, default=None
        What ``y`` holds, read from its values by default (`embedkit.data.targets.infer_task`: numbers
        with a fraction, or integers of more than 10 values, are a number; a list per document,
        or cells ``"a|b"`` whose labels recombine, a label set). On a number every head is its
        regressor (`embedkit.registry.for_task`; the pairs of heads without one are left out, said
        in the progress), the baselines are TF-IDF + Ridge and MiniLM + Ridge, the validation
        split is not stratified and an ensemble averages the numbers (scikit-learn's
        ``VotingRegressor``). On label sets every head predicts a probability per label (one
        per label, ``OneVsRestClassifier``, where it cannot alone), the baselines are one
        ``LogisticRegression`` per label, every model is scored at the threshold that scores it
        best on the validation rows, the split is stratified by each row's rarest label (every
        label on some training rows, and on every subsample), a label on fewer than
        3 documents (`MIN_PER_LABEL`) is left out (said), and the pick, an ensemble or one model,
        is an `embedkit.EnsembleClassifier` vote with the threshold its scoring chose: its
        ``predict`` gives the 0/1 matrix of labels, ``classes_`` their names.
    text_columns, categorical, numeric : str or list of str, optional
        On a table (``X`` a DataFrame of several columns), the columns of each role; the others
        are read from their values (`embedkit.data.columns.infer_columns`, said in the progress).
        Every representation then reads the table: a pooled one through
        `embedkit.TableEmbedder` (each text column encoded, the categorical columns one-hot, the
        numeric ones scaled, side by side for the head), a head that reads text (fine-tuning)
        the columns joined as ``name: value`` lines; the baselines read the first text column
        alone, as five lines on one column would. The pick reads the same columns by name.
    predict_limit : float, optional
        Seconds a row the pick may take to predict new documents on this machine (AutoGluon's
        ``infer_limit``): a model, or an ensemble whose members together, above it is scored
        and shown but not picked (the leaderboard says so), and an ensemble is built only of
        members that fit it together. The cost is measured as the leaderboard's
        ``predict_s_per_1000``: the model's predictions on the validation rows, plus the pass
        of the frozen encoder whose cache it read. Where no model fits it, the cheapest to
        predict is the pick (said). None (default): any cost.
    memory : str or float, optional
        Memory this process may hold, in bytes or as a size such as ``"4GB"`` (AutoGluon's
        ``memory_limit``); None (default): `MEMORY_SHARE` of the memory free when the search
        starts (the machine's, or what a container's limit leaves). Memory is kept like time:
        every fit is measured (the leaderboard's ``memory_mb``, the run's peak in its
        ``attrs``), a model whose pair measured more than the limit leaves room for is left out
        before it runs, saying what it needs, and a fit that grows the process past the limit,
        or leaves the machine less than `MEMORY_FLOOR` free, is stopped there and left out: the
        search goes on, and ends with a saved model rather than the system's out-of-memory kill.
    finetune : {"auto", True, False}, default="auto"
        Fine-tuning pairs join when the time left pays for them ("auto"; True is the same, kept
        for the command line's ``--finetune yes``); False leaves them out.
    cache : None, "memory" or a folder, default="memory"
        Embedding cache of every representation that takes one: the frozen encoder's vectors
        are computed once for every model that reads them.
    random_state : int, default=0
        Seeds the split, the probes, the sampled settings and the models.
    output : str or Path, optional
        A folder: ``leaderboard.csv`` / ``.md`` / ``.png`` and ``report.html`` are written there,
        and the pick is saved to ``output/model/`` with `embedkit.save`, within the budget; all
        published at once (`embedkit.storage.outputs`). It must be new, empty or an earlier tune's
        output, which `fit` checks before any work.
    overwrite : bool, default=False
        Let ``output`` be a folder of yours: only the files tune writes are replaced there.
    progress : bool or callable, default=True
        Print a line per model (to stderr) with the time left, or call ``progress(line)``.
    backend : {None, "dask"}, default=None
        Where the sparse and static tiers' models fit: None, in this process; ``"dask"``, on the
        workers of the running Dask client (`embedkit.distributed.dask_backend`, or your own
        ``distributed.Client``), as many at once as they have threads. The frozen encoder's
        models read this process's cache and fine-tuning its device, so they stay here. On a
        machine with an accelerator, fine-tuning trains on it in a thread while the cores fit
        the other models, whatever the backend.

    Attributes
    ----------
    best_estimator_ : Pipeline
        The pick: a registry pair's pipeline, a baseline, or an ensemble of scored models
        (``Pipeline([("features", "passthrough"), ("head", EnsembleClassifier(...))])``); where
        calibrating lowered its validation log-loss (classes only), its last step is a
        `TemperatureScaled` of itself.
    calibration_ : dict or None
        Classes only: whether the pick's probabilities were calibrated (``applied``), at what
        ``temperature``, whether its top class's confidence was then mapped (``top_label``),
        and the validation rows' ``log_loss`` and ``ece`` as fitted and calibrated
        (``log_loss_calibrated``, ``ece_calibrated``: each fold of the validation rows at the
        calibration fitted on the others).
    pick_ : str
        The leaderboard name of the pick.
    refit_ : bool
        Whether the pick was refit on all the documents (else it is as fitted on the training
        rows: the time left could not pay for a refit).
    refit_members_ : tuple of (int, int)
        How many of the pick's models were refit on all the documents, of how many: where the
        whole refit of an ensemble does not fit, its members are refit heaviest first while each
        fits, the others kept as fitted.
    seeds_ : int
        How many seeds each fine-tuned model of the pick averages (1: one, or none fine-tuned).
    leaderboard_ : DataFrame
        Every model: scored, left out (with the budget that would include it) or failed.
    roles_ : ColumnRoles or None
        The role of every column of a table (None for documents).
    task_ : str
        What ``y`` was read as: "classification", "regression" or "multilabel".
    scoring_ : str
        The scorer the search chose by.
    classes_ : ndarray (classes and label sets only)
        The labels seen at fit (label sets: the name of each column `predict` gives).
    budget_ : float
        The budget in seconds.
    budget_used_ : float
        Wall-clock seconds of `fit`, everything included.
    tiers_reached_ : list of str
        The tiers the search got to.
    interrupted_ : bool
        Whether a ``KeyboardInterrupt`` ended the search early.
    refit_interrupted_ : bool
        Whether one stopped the refit (the members not refit are kept as fitted).
    published_ : bool
        Whether ``output`` holds this fit's result (set in the step that publishes it).
    search_ : `embedkit.tuning._engine.Search`
        The search itself (``board.candidates``: every model it tried; ``data``: the split).

    Raises
    ------
    BudgetError
        When the budget runs out before even the first baseline is scored.
    ValueError
        When every model that ran failed (e.g. documents without words): the first failures say why.
    KeyboardInterrupt
        When a Ctrl-C stops the search before any model is scored (after one, it finishes with
        it), or comes while the output is written (``published_`` says whether it was).

    Examples
    --------
    >>> from embedkit import load_dataset
    >>> df = load_dataset("trec").sample(400, random_state=0)
    >>> tuner = Tuner(budget="40s", pairs=[("tfidf", "logreg-cv")], progress=False)
    >>> tuner.fit(df["text"], df["label"]).pick_ in set(tuner.leaderboard_["pipeline"])
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        "budget": [Interval(Real, 0, None, closed="neither"), str],
        "pairs": [list, tuple, None],
        "representations": [list, tuple, None],
        "heads": [list, tuple, None],
        "validation": [StrOptions({"auto"}), Interval(Real, 0, 0.5, closed="neither")],
        "predict_limit": [None, Interval(Real, 0, None, closed="neither")],
        "memory": [None, str, Interval(Real, 0, None, closed="neither")],
        "scoring": [None, StrOptions(set(get_scorer_names()))],
        "task": [None, StrOptions({"classification", "regression", "multilabel"})],
        "text_columns": [None, str, list, tuple],
        "categorical": [None, str, list, tuple],
        "numeric": [None, str, list, tuple],
        "finetune": [StrOptions({"auto"}), "boolean"],
        "cache": [None, str, os.PathLike],
        "random_state": [Interval(Integral, 0, None, closed="left")],
        "output": [None, str, os.PathLike],
        "overwrite": ["boolean"],
        "progress": ["boolean", callable],
        "backend": [None, StrOptions({"dask"})],
    }

    def __init__(self, budget: str | float = "15m", *, pairs=None, representations=None,
                 heads=None, validation: float | str = "auto", predict_limit: float | None = None,
                 memory: str | float | None = None, scoring: str | None = None,
                 task: str | None = None, text_columns=None, categorical=None, numeric=None,
                 finetune: bool | str = "auto", cache="memory", random_state: int = 0,
                 output=None, overwrite: bool = False,
                 progress: bool | Callable[[str], None] = True, backend=None):
        store_params(self, locals())

    def fit(self, X, y, *, started: float | None = None, write: bool = True):
        """Search within the budget, then keep (and where time allows refit) the pick.

        ``started``: the `time.monotonic` at which the budget began (``embedkit tune`` passes its
        own start, so that reading the file counts); by default, now. ``write=False``: the time
        to write ``output`` is kept as usual, but the writing is left to the caller (the search
        of one of several targets, whose output is written once for all)."""
        validate_params(self)
        clock = _clock(self.budget, started)
        if several_targets(y):  # a DataFrame of several columns: a search per target
            return fit_targets(self, X, y, clock, progress_printer(self.progress))
        self.budget_, self.published_, self.refit_interrupted_ = clock.budget, False, False
        if self.output is not None:  # before any work: a folder tune may not write is refused now
            check_output_folder(self.output, overwrite=self.overwrite)
        docs, texts, self.roles_, target, self.scoring_, self.notes_ = prepare(
            X, y, text_columns=self.text_columns, categorical=self.categorical,
            numeric=self.numeric, task=self.task, scoring=self.scoring)
        y, self.task_ = target.y, target.task
        if self.task_ == "multilabel":  # the label of each column of y
            self.classes_ = target.names
        self.memory_limit_ = memory_limit(self.memory)
        least = least_budget(texts, self.output)
        if clock.left() < least:  # said before any work (loading MiniLM, ...)
            raise BudgetError(f"a budget of {format_seconds(clock.left())} cannot score anything: the "
                              f"plain TF-IDF baseline on {len(docs):,} documents"
                              + (" and writing the output" if self.output is not None else "")
                              + f" need about {math.ceil(least)} s; give at least {math.ceil(least)} s.")
        say = progress_printer(self.progress)
        per_class = (float(np.median(np.unique(y, return_counts=True)[1]))
                     if self.task_ == "classification" else None)
        pairs = chosen_pairs(self.pairs, self.representations, self.heads, self.finetune, per_class)
        pairs, without = pairs_for_task(pairs, self.task_)
        from ..distributed import running_client

        search = Search(docs, y, clock=clock, pairs=pairs, scoring=self.scoring_, task=self.task_,
                        validation=self.validation, finetune=self.finetune, cache=self.cache,
                        random_state=self.random_state, say=say,
                        finish=Finish(self.output, clock.budget, target.names), device_lane=accelerated(),
                        client=running_client() if self.backend == "dask" else None,
                        roles=self.roles_, predict_limit=self.predict_limit,
                        standing=standing_pairs(pairs, per_class), memory=self.memory_limit_)
        say(f"{clock.stamp()} tune: {len(docs):,} documents, {len(pairs)} pairs, budget "
            f"{format_seconds(clock.budget)} for everything (search, baselines, refit, output)")
        if search.asked.standing:
            named = [" + ".join(p) for p in search.asked.standing]
            stands = (named[0] if len(named) == 1 else
                      f"the better of {', '.join(named[:-1])} and {named[-1]}")
            say(f"{clock.stamp()} few labels ({per_class:g} documents in the median class): "
                f"{stands} stands as the pick unless a model beats it beyond the noise of its scores")
        self.notes_ += without
        for note in self.notes_:
            say(f"{clock.stamp()} note: {note}")
        from sklearn.base import clone

        from ..machine import plan_threads

        # threads set once, by policy, for the search and the finish: torch and the tokenizer
        # get this process's cores (less one that feeds an accelerator), BLAS one
        threads = plan_threads(workers=1, reserve=1 if search.asked.device_lane else 0).block()
        with threads, _quiet_about_its_own_choices():
            search.run(Schedule({name: (lambda pipe=pipe: clone(pipe))
                                 for name, pipe in baseline_pipelines(
                                     self.cache, self.task_, None if self.roles_ is None
                                     else self.roles_.text[0]).items()}))
        self.search_ = search
        if not any(c.status == "scored" for c in search.board.candidates):
            failed = [f"{c.label} failed ({c.note})" for c in search.board.candidates if c.status == "failed"]
            if search.board.interrupted:  # stopped before anything was scored: nothing to keep
                raise KeyboardInterrupt
            if failed:  # not a budget problem: the data
                raise ValueError("no model could be scored: " + "; ".join(failed[:3]) + ". Check "
                                 "that the documents hold words (not only empty texts or numbers).")
            raise BudgetError(f"the budget of {format_seconds(clock.budget)} ran out before even the "
                              "plain TF-IDF baseline was scored; give a larger budget (at least "
                              f"{format_seconds(max(2 * clock.budget, 120))}).")
        order = ["baselines", *(t.name for t in TIERS), "ensembles"]
        self.tiers_reached_ = [t for t in order if t in search.board.tiers_reached]
        self.interrupted_ = search.board.interrupted
        pick = search.board.best()
        self.pick_ = pick.label
        if not search.board.within_limit(pick):
            say(f"{clock.stamp()} no model predicts within the limit of "
                f"{1000 * self.predict_limit:.2f} ms a row: the pick is the cheapest to predict "
                f"({1000 * pick.row_seconds:.2f} ms a row)")
        with threads, _quiet_about_its_own_choices():
            done = search.finish.run(search, pick, clock, say)
        self.best_estimator_, self.refit_, self.seeds_ = done.estimator, done.refit, done.seeds
        self.refit_members_, self.refit_interrupted_ = done.members, done.interrupted
        self.calibration_ = done.calibration
        if self.task_ != "regression":  # label sets: the names the finish fitted the pick with
            self.classes_ = np.asarray(self.best_estimator_.classes_)
        self.leaderboard_ = leaderboard(self)
        if self.output is not None and write:
            self._write(texts, y, clock, say)
        self.budget_used_ = clock.elapsed()
        seeds = f" as the mean of {self.seeds_} seeds" if self.seeds_ > 1 else ""
        rows = "the validation rows" if search.data.folds is None else "every row, out of fold"
        as_ = f", refit as {done.refit_as}" if done.refit_as else ""
        say(f"{clock.stamp()} done: {self.pick_}{seeds} ({pick.score:.3f} on {rows}{as_}); "
            f"{self.budget_used_:.0f} s of {clock.budget:.0f} s used, "
            f"{format_bytes(self.leaderboard_.attrs['peak_mb'] * 2**20)} of memory at most "
            f"(limit {format_bytes(self.memory_limit_)})")
        return self

    def _write(self, docs, y, clock: Clock, say) -> None:
        from ..storage.persist import save

        title = f"embedkit tune ({len(docs):,} documents, budget {format_seconds(clock.budget)})"
        with interrupts_held():  # what is published and `published_` never disagree
            out = publish_folder(self.output, lambda folder: (
                write_leaderboard(self.leaderboard_, folder, title=title, pipelines=pipelines(self),
                                  dataset=pd.DataFrame({"text": docs, "label": self._labels(y)}),
                                  figures=calibration_figures(self)),
                save(self.best_estimator_, folder / "model")), overwrite=self.overwrite)
            self.published_ = True
        say(f"{clock.stamp()} wrote the leaderboard files, report.html and the model {out / 'model'}")

    def _labels(self, y):
        """``y`` as the report lists it: label sets as their names joined by ``|``."""
        if self.task_ != "multilabel":
            return y
        return ["|".join(map(str, self.classes_[row.astype(bool)])) for row in y]

    # -- the estimator ----------------------------------------------------------------------------
    def predict(self, X):
        """The pick's predictions."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def predict_proba(self, X):
        """The pick's class probabilities (columns ordered as ``classes_``)."""
        self._one_target("predict_proba(X)")
        return self.best_estimator_.predict_proba(X)

    def _one_target(self, call: str) -> None:
        check_is_fitted(self, "best_estimator_")
        if isinstance(self.best_estimator_, TargetSet):
            raise ValueError(f"this Tuner was fitted on several targets ({', '.join(self.targets_)}); "
                             f"ask each one's own: tuner.targets_[name].{call}.")

    def score(self, X, y, sample_weight=None) -> float:
        """The pick's score under ``scoring`` on ``(X, y)``."""
        from sklearn.metrics import get_scorer

        self._one_target("score(X, y[name])")
        return float(get_scorer(self.scoring_)(self.best_estimator_, X, y, **(
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
    >>> df = load_dataset("trec").sample(400, random_state=0)
    >>> tune(df["text"], df["label"], "40s", pairs=[("tfidf", "logreg-cv")],
    ...      progress=False).budget_used_ < 60
    True
    """
    return Tuner(budget, **params).fit(X, y)
