"""Several targets from one table in one run: `TargetSet`, the model that predicts each of them,
and `fit_targets`, which `Tuner.fit` runs when ``y`` is a DataFrame of several columns.

    tuner = embedkit.Tuner(budget="10m").fit(table, table[["rating", "topic"]])
    tuner.predict(new_rows)                 # a DataFrame: a column per target

One search per target, in the order of ``y``'s columns, each with an equal share of the time
left when it starts (what one leaves unspent goes to the next) after the time kept for writing
the output. Every search reads the same documents through the same cache (the default
``cache="memory"``: one store in this process), so an encoder's pass over them is paid once,
by the first search that needs it. Each target is of its own kind (a class, a number or a set
of labels, read from its values); ``task`` and ``scoring``, where given, hold for every one.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from ..base import CheckedKeywords, store_params

__all__ = ["TargetSet", "fit_targets", "progress_printer", "several_targets", "summary"]


class TargetSet(CheckedKeywords, BaseEstimator):
    """A model for each of several targets of the same rows: ``predict`` gives a DataFrame
    with a column per target (in ``estimators``' order); `embedkit.predict_file` (``embedkit
    predict``) writes each target's columns under its name.

    Parameters
    ----------
    estimators : list of (str, estimator), default=()
        Each target's name and its model (fitted by `fit`, or already fitted by `embedkit.Tuner`).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression, Ridge
    >>> from sklearn.pipeline import make_pipeline
    >>> from embedkit import TfidfEmbedder
    >>> docs = ["a good film", "a bad film", "a great plot", "an awful plot"]
    >>> y = pd.DataFrame({"liked": ["yes", "no", "yes", "no"], "stars": [4.0, 1.0, 5.0, 1.5]})
    >>> model = TargetSet([("liked", make_pipeline(TfidfEmbedder(), LogisticRegression())),
    ...                    ("stars", make_pipeline(TfidfEmbedder(), Ridge()))]).fit(docs, y)
    >>> model.predict(["a good plot"]).columns.tolist()
    ['liked', 'stars']
    """

    def __init__(self, estimators=()):
        store_params(self, locals())

    def fit(self, X, y):
        """Fit each target's model on ``X`` and its column of the DataFrame ``y``."""
        if not len(self.estimators):
            raise ValueError("TargetSet(estimators=()) has no target: give [(name, estimator), ...].")
        missing = [name for name, _ in self.estimators if name not in getattr(y, "columns", ())]
        if missing:
            raise ValueError(f"y has no column {missing[0]!r}; TargetSet fits each estimator on "
                             "the column of y named as it is.")
        self.estimators_ = [(name, clone(est).fit(X, y[name])) for name, est in self.estimators]
        return self

    @property
    def targets_(self) -> list[str]:
        check_is_fitted(self, "estimators_")
        return [name for name, _ in self.estimators_]

    def predict(self, X) -> pd.DataFrame:
        """Each target's predictions, a column per target (label sets: one list per row)."""
        check_is_fitted(self, "estimators_")
        out = {}
        for name, est in self.estimators_:
            predicted = np.asarray(est.predict(X))
            classes = getattr(est, "classes_", None)
            if predicted.ndim == 2 and classes is not None:  # label sets: the names of each row's
                predicted = [list(np.asarray(classes)[row.astype(bool)]) for row in predicted]
            out[name] = list(predicted) if isinstance(predicted, list) else predicted
        return pd.DataFrame(out)


def progress_printer(progress):
    """Where `Tuner`'s progress lines go: its ``progress`` callable, stderr (True), nowhere."""
    import sys

    if callable(progress):
        return progress
    if progress:
        return lambda line: print(line, file=sys.stderr, flush=True)
    return lambda line: None


def several_targets(y) -> bool:
    """Whether ``y`` holds several targets: a DataFrame of more than one column."""
    return isinstance(y, pd.DataFrame) and y.shape[1] > 1


def folder_name(target) -> str:
    """The target's folder in the output (``targets/<name>``): its name, with what a file
    system would not take replaced."""
    return re.sub(r"[^\w.-]+", "_", str(target)).strip("._") or "target"


def fit_targets(tuner, X, y: pd.DataFrame, started: float | None = None):
    """`Tuner.fit` on several targets: a search per column of ``y`` (clones of ``tuner`` that
    write nothing), then the `TargetSet` of their picks and one output for all."""
    from .._budget import BudgetError, Clock, format_seconds, parse_budget
    from ..storage.outputs import WRITE_SECONDS, check_output_folder
    from ._inputs import least_budget

    names = [str(c) for c in y.columns]
    if len(set(names)) < len(names) or len({folder_name(n) for n in names}) < len(names):
        raise ValueError(f"y's columns {names} name two targets alike; give each target its own "
                         "name (letters, digits, '_', '.', '-').")
    clock = Clock(parse_budget(tuner.budget))
    clock.start = clock.start if started is None else started
    if tuner.output is not None:
        check_output_folder(tuner.output, overwrite=tuner.overwrite)
    say = progress_printer(tuner.progress)
    write = WRITE_SECONDS * len(names) if tuner.output is not None else 0.0
    words = X.select_dtypes(exclude="number") if isinstance(X, pd.DataFrame) else pd.DataFrame(
        {"text": list(X)})  # what the baselines read is at most this much text
    chars = int(sum(words[c].fillna("").astype(str).str.len().sum() for c in words.columns))
    least = len(names) * least_budget(rows=len(words), characters=chars) + write
    if clock.left() < least:  # said before any work
        raise BudgetError(
            f"a budget of {format_seconds(clock.left())} cannot score {len(names)} targets: a search "
            f"each (at least the plain TF-IDF baseline on {len(words):,} documents)"
            + (" and writing each one's leaderboard" if tuner.output is not None else "")
            + f" need about {math.ceil(least)} s; give at least {math.ceil(least)} s.")
    say(f"{clock.stamp()} tune: {len(names)} targets ({', '.join(names)}), one search each, "
        f"budget {format_seconds(clock.budget)} for everything")
    tuner.targets_ = {}
    for i, (name, column) in enumerate(zip(names, y.columns, strict=True)):
        share = (clock.left() - write) / (len(names) - i)

        def said(line: str, name=name) -> None:
            say(f"[{name}] {line}")

        one = clone(tuner).set_params(budget=max(share, 1e-3), output=None, overwrite=False,
                                      progress=said if tuner.progress else False)
        tuner.targets_[name] = one.fit(X, y[column])
    fitted = list(tuner.targets_.items())
    tuner.best_estimator_ = TargetSet([(n, t.best_estimator_) for n, t in fitted])
    tuner.best_estimator_.estimators_ = [(n, t.best_estimator_) for n, t in fitted]
    tuner.pick_ = {n: t.pick_ for n, t in fitted}
    tuner.task_ = {n: t.task_ for n, t in fitted}
    tuner.scoring_ = {n: t.scoring_ for n, t in fitted}
    board = pd.concat([t.leaderboard_.assign(target=n) for n, t in fitted], ignore_index=True)
    tuner.leaderboard_ = board[["target", *(c for c in board.columns if c != "target")]]
    tuner.interrupted_ = any(t.interrupted_ for _, t in fitted)
    tuner.refit_interrupted_ = any(t.refit_interrupted_ for _, t in fitted)
    tuner.budget_, tuner.published_ = clock.budget, False
    if tuner.output is not None:
        _write(tuner, clock, say)
    tuner.budget_used_ = clock.elapsed()
    say(f"{clock.stamp()} done: " + "; ".join(f"{n}: {t.pick_}" for n, t in fitted)
        + f"; {tuner.budget_used_:.0f} s of {clock.budget:.0f} s used")
    return tuner


def summary(tuner) -> pd.DataFrame:
    """A row per target: its kind, the scorer, the pick and its validation score, where its
    leaderboard is."""
    rows = []
    for name, one in tuner.targets_.items():
        board = one.leaderboard_
        pick = board[board["pick"]].iloc[0]
        rows.append({"target": name, "task": one.task_, "scoring": one.scoring_,
                     "pick": one.pick_, "score": float(pick[board.attrs["metrics"][0]]),
                     "leaderboard": f"targets/{folder_name(name)}/leaderboard.md"})
    return pd.DataFrame(rows)


def _write(tuner, clock, say) -> None:
    from .._stopping import interrupts_held
    from ..report import write_leaderboard
    from ..storage.outputs import publish_folder
    from ..storage.persist import save
    from ._leaderboard import pipelines

    def write(folder):
        table = summary(tuner)
        table.to_csv(folder / "leaderboard.csv", index=False)
        lines = [f"# embedkit tune: {len(table)} targets (budget {tuner.budget_:.0f} s)", "",
                 "One search per target; each target's leaderboard in its folder.", "",
                 table.to_markdown(index=False, floatfmt=".3f"), ""]
        (folder / "leaderboard.md").write_text("\n".join(lines), encoding="utf-8")
        for name, one in tuner.targets_.items():
            write_leaderboard(one.leaderboard_, folder / "targets" / folder_name(name),
                              title=f"embedkit tune: {name}", pipelines=pipelines(one))
        save(tuner.best_estimator_, folder / "model")

    with interrupts_held():  # what is published and `published_` never disagree
        out = publish_folder(tuner.output, write, overwrite=tuner.overwrite)
        tuner.published_ = True
    say(f"{clock.stamp()} wrote {out / 'leaderboard.md'}, each target's leaderboard under "
        f"{out / 'targets'} and the model {out / 'model'}")
