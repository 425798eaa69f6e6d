"""Several targets from one table in one run: `TargetSet`, the model that predicts each of them,
and `Tuner.fit` when ``y`` is a DataFrame of several columns (`fit_targets`: the searches, the
targets' names, the least budget, the output).

    tuner = embedkit.Tuner(budget="10m").fit(table, table[["rating", "topic"]])
    tuner.predict(new_rows)                 # a DataFrame: a column per target

One search per target, in the order of ``y``'s columns, each with an equal share of the time
left when it starts (what one leaves unspent goes to the next), keeping its own time to write
its part of the output as a run on that target alone would. Every search reads the same
documents through the same cache (the default ``cache="memory"``: one store in this process),
so an encoder's pass over them is paid once, by the first search that needs it. Each target
is of its own kind (a class, a number or a set of labels, read from its values); ``task`` and
``scoring``, where given, hold for every one. Ctrl-C ends the run: the search it lands in keeps
its best model so far, the targets after it get what the least budget buys (their plain TF-IDF
baseline), so the model still predicts every target.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from ..base import CheckedKeywords, store_params

__all__ = ["TargetSet", "fit_targets", "folder_name", "least_for_targets", "several_targets",
           "summary", "target_names", "write_targets"]


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


def several_targets(y) -> bool:
    """Whether ``y`` holds several targets: a DataFrame of more than one column."""
    return isinstance(y, pd.DataFrame) and y.shape[1] > 1


def folder_name(target) -> str:
    """The target's folder in the output (``targets/<name>``): its name, with what a file
    system would not take replaced."""
    return re.sub(r"[^\w.-]+", "_", str(target)).strip("._") or "target"


def target_names(y: pd.DataFrame) -> list[str]:
    """``y``'s column names as the targets' names, refused where two would share a folder."""
    names = [str(c) for c in y.columns]
    if len(set(names)) < len(names) or len({folder_name(n) for n in names}) < len(names):
        raise ValueError(f"y's columns {names} name two targets alike; give each target its own "
                         "name (letters, digits, '_', '.', '-').")
    return names


def least_for_targets(X, targets: int, output=None) -> float:
    """Seconds below which ``targets`` searches on ``X`` cannot each score a baseline (and
    write its part of ``output``): `least_budget` of all of ``X``'s text, per target."""
    from ._inputs import least_budget

    words = X.select_dtypes(exclude="number") if isinstance(X, pd.DataFrame) else pd.DataFrame(
        {"text": list(X)})  # what the baselines read is at most this much text
    chars = int(sum(words[c].fillna("").astype(str).str.len().sum() for c in words.columns))
    return targets * least_budget(rows=len(words), characters=chars, output=output)


def summary(fitted: dict) -> pd.DataFrame:
    """A row per target of ``fitted`` (name -> its fitted `Tuner`): its kind, the scorer, the
    pick and its validation score, where its leaderboard is."""
    rows = []
    for name, one in fitted.items():
        board = one.leaderboard_
        pick = board[board["pick"]].iloc[0]
        rows.append({"target": name, "task": one.task_, "scoring": one.scoring_,
                     "pick": one.pick_, "score": float(pick[board.attrs["metrics"][0]]),
                     "leaderboard": f"targets/{folder_name(name)}/leaderboard.md"})
    return pd.DataFrame(rows)


def write_targets(folder, fitted: dict, model: TargetSet, budget: float) -> None:
    """Fill ``folder`` with the output of several targets: the summary as ``leaderboard.md`` /
    ``.csv``, each target's leaderboard files under ``targets/<name>/``, ``model/``."""
    from ..storage.persist import save
    from ._leaderboard import pipelines, write_leaderboard

    table = summary(fitted)
    table.to_csv(folder / "leaderboard.csv", index=False)
    lines = [f"# embedkit tune: {len(table)} targets (budget {budget:.0f} s)", "",
             "One search per target; each target's leaderboard in its folder.", "",
             table.to_markdown(index=False, floatfmt=".3f"), ""]
    (folder / "leaderboard.md").write_text("\n".join(lines), encoding="utf-8")
    for name, one in fitted.items():
        write_leaderboard(one.leaderboard_, folder / "targets" / folder_name(name),
                          title=f"embedkit tune: {name}", pipelines=pipelines(one))
    save(model, folder / "model")


def fit_targets(tuner, X, y: pd.DataFrame, clock, say):
    """Fit the `embedkit.Tuner` ``tuner`` on the several targets of ``y`` within ``clock``: a
    search per column (clones of it that keep their writing time but write nothing), each with
    an equal share of the time left when it starts; the `TargetSet` of their picks; one output
    for all. ``say``: where its progress lines go."""
    import math

    from .._budget import BudgetError, format_seconds
    from .._stopping import interrupts_held
    from ..storage.outputs import WRITE_SECONDS, check_output_folder, publish_folder

    names = target_names(y)
    tuner.budget_, tuner.published_ = clock.budget, False
    if tuner.output is not None:
        check_output_folder(tuner.output, overwrite=tuner.overwrite)
    least = least_for_targets(X, len(names), tuner.output)
    if clock.left() < least:  # said before any work
        raise BudgetError(
            f"a budget of {format_seconds(clock.left())} cannot score {len(names)} targets: a "
            "search each (at least the plain TF-IDF baseline on every document)"
            + (" and writing each one's leaderboard" if tuner.output is not None else "")
            + f" need about {math.ceil(least)} s; give at least {math.ceil(least)} s.")
    say(f"{clock.stamp()} tune: {len(names)} targets ({', '.join(names)}), one search each, "
        f"budget {format_seconds(clock.budget)} for everything")
    tuner.targets_, stopped = {}, False
    for i, (name, column) in enumerate(zip(names, y.columns, strict=True)):
        # each search keeps its own writing time, as one run would; what the searches done
        # kept for theirs is held back from the next ones
        held = WRITE_SECONDS * i if tuner.output is not None else 0.0
        share = max((clock.left() - held) / (len(names) - i), 1e-3)
        if stopped:  # Ctrl-C: the rest get what their baseline needs, no more (twice the least,
            # a prior of an idle machine: a loaded one, or a first import of the target's kind)
            share = min(share, 2 * least / len(names))
        said = (lambda line, name=name: say(f"[{name}] {line}")) if tuner.progress else False
        one = clone(tuner).set_params(budget=share, progress=said)
        tuner.targets_[name] = one.fit(X, y[column], write=False)
        if not stopped and one.interrupted_ and i + 1 < len(names):
            stopped = True
            say(f"{clock.stamp()} interrupted while tuning {name}: "
                f"{', '.join(names[i + 1:])} get what the least budget buys (their plain TF-IDF "
                "baseline), so that the model predicts every target")
    fitted = tuner.targets_
    tuner.best_estimator_ = TargetSet([(n, t.best_estimator_) for n, t in fitted.items()])
    tuner.best_estimator_.estimators_ = list(tuner.best_estimator_.estimators)  # fitted
    tuner.pick_, tuner.task_, tuner.scoring_ = ({n: getattr(t, a) for n, t in fitted.items()}
                                             for a in ("pick_", "task_", "scoring_"))
    board = pd.concat([t.leaderboard_.assign(target=n) for n, t in fitted.items()],
                      ignore_index=True)
    tuner.leaderboard_ = board[["target", *(c for c in board.columns if c != "target")]]
    tuner.interrupted_ = any(t.interrupted_ for t in fitted.values())
    tuner.refit_interrupted_ = any(t.refit_interrupted_ for t in fitted.values())
    if tuner.output is not None:
        with interrupts_held():  # what is published and `published_` never disagree
            out = publish_folder(tuner.output, lambda folder: write_targets(
                folder, fitted, tuner.best_estimator_, clock.budget), overwrite=tuner.overwrite)
            tuner.published_ = True
        say(f"{clock.stamp()} wrote {out / 'leaderboard.md'}, each target's leaderboard under "
            f"{out / 'targets'} and the model {out / 'model'}")
    tuner.budget_used_ = clock.elapsed()
    say(f"{clock.stamp()} done: " + "; ".join(f"{n}: {t.pick_}" for n, t in fitted.items())
        + f"; {tuner.budget_used_:.0f} s of {clock.budget:.0f} s used")
    return tuner
