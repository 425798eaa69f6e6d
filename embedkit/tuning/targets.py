"""Several targets from one table in one run: `TargetSet`, the model that predicts each of them,
and what `Tuner.fit` needs when ``y`` is a DataFrame of several columns (the targets' names, the
least budget, the output).

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

__all__ = ["TargetSet", "folder_name", "least_for_targets", "several_targets", "summary",
           "target_names", "write_targets"]


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
    from ..report import write_leaderboard
    from ..storage.persist import save
    from ._leaderboard import pipelines

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
