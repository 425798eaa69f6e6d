"""What a target asks for: a class per row, a number, or a set of labels; the kind read from the
values (or named), checked before any work, and the metrics each kind takes. The head each kind
takes is the catalog's (`embedkit.registry.for_task`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._suggest import did_you_mean
from .reading import LABEL_SEPARATOR

__all__ = ["CALIBRATION_BINS", "DEFAULT_METRICS", "MULTILABEL_METRICS", "REGRESSION_METRICS", "TASKS",
           "THRESHOLDS", "expected_calibration_error", "in_classes", "infer_task", "log_loss",
           "multilabel_decisions", "numeric_target", "scorers", "split_label_sets",
           "threshold_scores", "tune_threshold"]

#: the kinds of target: one class per row, a number per row, a set of labels per row
TASKS = ("classification", "regression", "multilabel")
#: the metrics of a report unless ``metrics=`` says otherwise; the first one ranks the rows
DEFAULT_METRICS = ("accuracy", "f1_macro")
#: the default metrics on a multi-label dataset (a list of labels per row): scikit-learn's
#: micro-, macro- and per-document F1 (accuracy there would be exact-set accuracy)
MULTILABEL_METRICS = ("f1_micro", "f1_macro", "f1_samples")

#: scorer names that score one positive class of a two-class target: their function, the
#: prediction method they read and whether greater is better (see `scorers`)
POSITIVE_CLASS_METRICS = {
    "f1": ("f1_score", "predict", True),
    "precision": ("precision_score", "predict", True),
    "recall": ("recall_score", "predict", True),
    "jaccard": ("jaccard_score", "predict", True),
    "average_precision": ("average_precision_score", ("decision_function", "predict_proba"), True),
    "neg_brier_score": ("brier_score_loss", "predict_proba", False),
}
#: two-class-only scorers without a positive class to choose, and their multi-class forms
_TWO_CLASS_ONLY = {"roc_auc": "roc_auc_ovr"}
#: the metrics of a numeric target (the first ranks): scikit-learn's scorer names, negated
#: where smaller is better (reports show RMSE and MAE as positive numbers)
REGRESSION_METRICS = ("neg_root_mean_squared_error", "neg_mean_absolute_error", "r2")
#: integer targets with at most this many distinct values are read as classes (a star rating);
#: more, or any fraction, as numbers. ``task=`` overrides the reading.
MAX_INTEGER_CLASSES = 10
#: a target of numbers but for at most this share of its cells (a ``NaN`` or ``high`` typed in a
#: column of scores) is refused with those cells named, not read as one class per distinct value
#: (a choice: a column of classes whose names are numbers holds few distinct numbers, no fraction)
STRAY_TEXT_SHARE = 0.05


def _rows(positions, values=None) -> str:
    shown = ", ".join(f"{int(i)}" + (f" ({values[k]!r})" if values is not None else "")
                      for k, i in enumerate(positions[:5]))
    more = f" and {len(positions) - 5} more" if len(positions) > 5 else ""
    return f"rows {shown}{more}"


def numeric_target(values, column: str = "label") -> np.ndarray | None:
    """The values as float64 where every one reads as a number (ints, floats, numeric strings),
    else None. Missing values are an error naming the rows.

    Examples
    --------
    >>> numeric_target(["1.5", "2", "-3"]).tolist(), numeric_target(["1", "good"])
    ([1.5, 2.0, -3.0], None)
    """
    series = pd.Series(np.asarray(values, dtype=object))
    if series.map(lambda v: isinstance(v, (list, tuple, set, np.ndarray))).any():
        return None
    number = pd.to_numeric(series, errors="coerce")
    missing = series.isna() | series.map(lambda v: isinstance(v, str) and not v.strip())
    if missing.any():
        raise ValueError(f"the target column {column!r} is empty on "
                         f"{_rows(np.flatnonzero(missing.to_numpy()))} (counted from 0); drop "
                         "those rows or fill them in.")
    if number.isna().any():
        return None
    out = number.to_numpy(dtype=np.float64)
    if not np.isfinite(out).all():
        raise ValueError(f"the target column {column!r} holds infinity on "
                         f"{_rows(np.flatnonzero(~np.isfinite(out)))}; drop those rows.")
    return out


def _numbers_but_a_few(series: pd.Series, column: str) -> None:
    """Refuse a target read as classes only because a few of its cells hold text, where its
    other cells read as numbers (`STRAY_TEXT_SHARE`; fractions, or more than
    `MAX_INTEGER_CLASSES` values): every distinct number would be a class of its own."""
    number = pd.to_numeric(series, errors="coerce")
    text = np.flatnonzero(number.isna().to_numpy())
    values = number.dropna().to_numpy(dtype=np.float64)
    if not len(text) or len(text) > max(1, STRAY_TEXT_SHARE * len(series)) or not (
            np.any(values != np.round(values)) or len(np.unique(values)) > MAX_INTEGER_CLASSES):
        return
    where, many = _rows(text, series.to_numpy()[text]), len(text) > 1
    raise ValueError(
        f"the target column {column!r} holds numbers but for {where if many else 'row' + where[4:]}"
        f" (counted from 0): text where a number should be. Read as it is, each of its "
        f"{series.nunique():,} distinct values would be a class of its own. To predict the "
        f"numbers, fix {'those cells' if many else 'that cell'} or drop "
        f"{'those rows' if many else 'that row'} (the column is then read as numbers, as --task "
        "regression reads it); to predict classes, "
        "pass --task classification.")


def split_label_sets(values, column: str = "label") -> list[list]:
    """A label set per row: a list as it is, a cell ``"a|b"`` split on ``|`` (spaces around each
    label stripped, empty parts dropped). A column without one label on any row is an error.

    Examples
    --------
    >>> split_label_sets(["drama|comedy", ["action"], "drama"])
    [['drama', 'comedy'], ['action'], ['drama']]
    """
    out = []
    for v in values:
        if isinstance(v, (list, tuple, set, np.ndarray)):
            out.append([x for x in v if not (isinstance(x, str) and not x.strip())])
        elif v is None or (isinstance(v, float) and np.isnan(v)):
            out.append([])
        else:
            out.append([p.strip() for p in str(v).split(LABEL_SEPARATOR) if p.strip()])
    if not any(out):
        raise ValueError(f"the label-set column {column!r} is empty on every row: nothing to "
                         f"learn. Write each row's labels as a list or as one cell separated by "
                         f"'{LABEL_SEPARATOR}' (drama|comedy).")
    return out


def _looks_like_sets(series: pd.Series) -> bool:
    if series.map(lambda v: isinstance(v, (list, tuple, set, np.ndarray))).any():
        return True
    text = series[series.map(lambda v: isinstance(v, str))]
    if text.empty or not text.str.contains(LABEL_SEPARATOR, regex=False).any():
        return False
    parts = {p.strip() for cell in text for p in cell.split(LABEL_SEPARATOR)}
    return len(parts) <= text.nunique()  # labels recombine: a vocabulary of labels, not free text


def infer_task(labels, task: str | None = None, column: str = "label") -> str:
    """The kind of target ``labels`` is (one of `TASKS`), read from the values or checked against
    ``task`` where it is named.

    Read as ``"multilabel"``: a list per row, or cells joined by ``|`` whose labels recombine
    (fewer distinct labels than distinct cells); ``"regression"``: numbers with a fraction, or
    integers with more than `MAX_INTEGER_CLASSES` values; else ``"classification"`` (a star
    rating of 1-5 is five classes: name ``task="regression"`` to predict it as a number).

    Raises
    ------
    ValueError
        An unknown ``task``; a target with one value on every row; ``task="regression"`` on
        values that are not numbers (the rows named); empty target cells; numbers but for a few
        cells of text (`STRAY_TEXT_SHARE`; the cells named), unless ``task`` is named.

    Examples
    --------
    >>> infer_task([0.5, -1.25, 3.0]), infer_task([1, 2, 5, 4]), infer_task(["a|b", "b", "a"])
    ('regression', 'classification', 'multilabel')
    """
    if task is not None and task not in TASKS:
        raise ValueError(f"task={task!r} is not a kind of target; use one of {', '.join(TASKS)} "
                         "(--task), or leave it out to read it from the values.")
    series = pd.Series(np.asarray(labels, dtype=object) if not isinstance(labels, pd.Series)
                       else labels.to_numpy(dtype=object))
    if task == "multilabel" or (task is None and _looks_like_sets(series)):
        split_label_sets(series, column)
        return "multilabel"
    number = numeric_target(series, column)
    if task is None and number is None:
        _numbers_but_a_few(series, column)
    if task == "regression":
        if number is None:
            text = pd.to_numeric(series, errors="coerce").isna().to_numpy()
            bad = np.flatnonzero(text)
            raise ValueError(f"--task regression needs numbers in {column!r}, but "
                             f"{_rows(bad, series.to_numpy()[bad])} (counted from 0) hold text; "
                             "fix those cells, or drop --task to predict classes.")
        values = number
    else:
        values = series.to_numpy()
    distinct = pd.unique(values)
    if len(distinct) < 2:
        raise ValueError(f"the target column {column!r} has one value ({distinct[0]!r}) on every "
                         "row: there is nothing to learn. Name the column that varies "
                         "(--label-column).")
    if task is not None:
        return task
    if number is not None and (np.any(number != np.round(number))
                               or len(distinct) > MAX_INTEGER_CLASSES):
        return "regression"
    return "classification"


#: the thresholds a label-set decision is chosen among (`tune_threshold`)
THRESHOLDS = np.round(np.arange(0.05, 0.951, 0.05), 2)


def threshold_scores(proba: np.ndarray, y: np.ndarray, average: str = "micro") -> np.ndarray:
    """F1 of ``proba > t`` against the 0/1 matrix ``y`` for every ``t`` of `THRESHOLDS` at once,
    averaged as scikit-learn's ``f1_score(average=..., zero_division=0)`` does: ``"micro"`` (the
    labels' counts pooled), ``"macro"`` (the mean over labels) or ``"samples"`` (the mean over
    rows). One pass over a (thresholds, rows, labels) array, so a search can score many sets of
    probabilities where calling scikit-learn per threshold would take seconds.

    Examples
    --------
    >>> p, y = np.array([[0.3, 0.2], [0.1, 0.35]]), np.array([[1, 0], [0, 1]])
    >>> threshold_scores(p, y)[[0, 4, 6]].round(2).tolist()  # t = 0.05, 0.25, 0.35
    [0.67, 1.0, 0.0]
    """
    y = np.asarray(y, dtype=bool)
    predicted = np.asarray(proba)[None] > THRESHOLDS[:, None, None]
    over = {"micro": (1, 2), "macro": 1, "samples": 2}[average]  # of (thresholds, rows, labels)
    true_pos = (predicted & y).sum(axis=over)
    both = predicted.sum(axis=over) + y.sum(axis=None if average == "micro" else over - 1)
    f1 = np.divide(2 * true_pos, both, out=np.zeros(true_pos.shape), where=both > 0)
    return f1 if average == "micro" else f1.mean(axis=1)


def tune_threshold(proba: np.ndarray, y: np.ndarray, average: str = "micro") -> float:
    """The global threshold, among `THRESHOLDS` (0.05, 0.10, ..., 0.95), that maximises F1
    (micro by default; `threshold_scores`) of ``proba > threshold`` against the 0/1 matrix
    ``y`` (ties: the one nearest 0.5).

    Examples
    --------
    >>> tune_threshold(np.array([[0.3, 0.2], [0.1, 0.35]]), np.array([[1, 0], [0, 1]]))
    0.25
    """
    f1 = threshold_scores(proba, y, average)
    best = np.flatnonzero(f1 == f1.max())
    return float(THRESHOLDS[best[np.argmin(np.abs(THRESHOLDS[best] - 0.5))]])


def multilabel_decisions(proba: np.ndarray, threshold: float) -> np.ndarray:
    """The int 0/1 indicator matrix of ``proba > threshold`` (scikit-learn's multi-label
    ``predict`` output)."""
    return (np.asarray(proba) > threshold).astype(np.int64)


def scorers(metrics=DEFAULT_METRICS, y=None, pos_label=None,
            task: str = "classification") -> tuple[dict, object]:
    """scikit-learn scorers for ``metrics`` and the positive class they use (or None).

    Any scorer name of `sklearn.metrics.get_scorer_names` is accepted. The names that score one
    positive class of a two-class target (``f1``, ``precision``, ``recall``, ``jaccard``,
    ``average_precision``, ``neg_brier_score``) take ``pos_label``; by default it is the
    **minority class** of ``y`` (spam in ham/spam: the class a user usually cares about), ties
    going to the greater label as in scikit-learn (``classes_[1]``). ``roc_auc`` needs no
    positive class (it is symmetric). On more than two classes these names are refused with the
    averaged forms to use instead (``f1_macro``, ``roc_auc_ovr``, ...).

    Returns
    -------
    (dict of name -> scorer, positive class or None)

    Examples
    --------
    >>> found, positive = scorers(["f1", "accuracy"], ["ham"] * 8 + ["spam"] * 2)
    >>> sorted(found), positive
    (['accuracy', 'f1'], 'spam')
    """
    from sklearn import metrics as skm

    metrics = list(metrics or DEFAULT_METRICS)
    names = skm.get_scorer_names()
    for name in metrics:
        if name not in names:
            raise ValueError(f"unknown metric {name!r}.{did_you_mean(name, names)} Use a "
                             "scikit-learn scorer name, e.g. --metric accuracy --metric f1_macro "
                             "(all of them: sklearn.metrics.get_scorer_names()).")
    if len(set(metrics)) != len(metrics):
        raise ValueError(f"--metric lists {metrics}; name each metric once.")
    numbers = {m for m in metrics if skm.get_scorer(m)._score_func.__module__.endswith("_regression")}
    if y is not None and (task == "regression") != (len(numbers) == len(metrics)):
        m = next(m for m in metrics if (m in numbers) != (task == "regression"))
        fits = (", ".join(REGRESSION_METRICS) if task == "regression"
                else "accuracy, f1_macro, ...")
        raise ValueError(f"--metric {m} scores {'numbers' if m in numbers else 'classes'}; this "
                         f"target holds {'numbers' if task == 'regression' else 'classes'}. Use "
                         f"{fits} (or --task to read the target as the other kind).")
    if task == "regression":
        return {m: skm.get_scorer(m) for m in metrics}, None
    two_class = [m for m in metrics if m in POSITIVE_CLASS_METRICS or m in _TWO_CLASS_ONLY]
    if y is not None and np.ndim(y) == 2:  # a label-set indicator matrix (`_compare_data`)
        one_class = [m for m in two_class if m in POSITIVE_CLASS_METRICS]
        if one_class:
            m = one_class[0]
            raise ValueError(f"--metric {m} scores one positive class; this dataset is multi-label. "
                             f"Use {m}_micro, {m}_macro or {m}_samples.")
        return {m: skm.get_scorer(m) for m in metrics}, None
    labels = pd.Series(np.asarray(y)) if y is not None else None
    classes = sorted(labels.unique()) if labels is not None else []
    if two_class and len(classes) > 2:
        m = two_class[0]
        instead = _TWO_CLASS_ONLY.get(m) or f"{m}_macro, {m}_weighted or {m}_micro"
        raise ValueError(f"--metric {m} scores one positive class of a two-class target; this "
                         f"dataset has {len(classes)} classes. Use {instead}.")
    positive = None
    if any(m in POSITIVE_CLASS_METRICS for m in metrics) and classes:
        if pos_label is None:
            counts = labels.value_counts()
            rarest = counts[counts == counts.min()].index
            positive = max(rarest)
        else:
            match = [c for c in classes if c == pos_label or str(c) == str(pos_label)]
            if not match:
                raise ValueError(f"--pos-label {pos_label!r} is not a class of this dataset; "
                                 f"its classes are {classes}."
                                 f"{did_you_mean(pos_label, map(str, classes))}")
            positive = match[0]
        positive = positive.item() if hasattr(positive, "item") else positive
    out = {}
    for m in metrics:
        if m in POSITIVE_CLASS_METRICS and positive is not None:
            func, method, greater = POSITIVE_CLASS_METRICS[m]
            out[m] = skm.make_scorer(getattr(skm, func), response_method=method,
                                     greater_is_better=greater, pos_label=positive)
        else:
            out[m] = skm.get_scorer(m)
    return out, positive


# -- how far probabilities can be trusted: log-loss and expected calibration error ------------
#: the bins of `expected_calibration_error`: equal widths of the top-class confidence
CALIBRATION_BINS = 15


def _as_codes(y, proba, classes) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(codes, proba, multilabel)``: ``y`` as column indices of ``proba`` (``classes`` names
    the columns; by default the sorted distinct labels of ``y``), or a 0/1 label matrix."""
    proba = np.asarray(proba, dtype=np.float64)
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] > 1 or y.ndim == 2 and proba.ndim == 2 and proba.shape == y.shape:
        if y.shape != proba.shape:
            raise ValueError(f"y is a {y.shape} label matrix but the probabilities are "
                             f"{proba.shape}; give one probability per row and label.")
        return (y > 0).astype(np.int64), proba, True
    y = y.ravel()
    if proba.ndim == 1:  # the second class's probability of a two-class target
        proba = np.column_stack([1.0 - proba, proba])
    classes = np.unique(y) if classes is None else np.asarray(classes)
    if len(y) != len(proba) or len(classes) != proba.shape[1]:
        raise ValueError(f"{len(y)} labels and {proba.shape} probabilities: give one row of "
                         f"probabilities per label and one column per class ({len(classes)} "
                         "classes; pass classes= in the columns' order where y lacks some).")
    order = np.argsort(classes, kind="stable")
    at = np.clip(np.searchsorted(classes[order], y), 0, len(classes) - 1)
    unknown = classes[order][at] != y
    if unknown.any():
        raise ValueError(f"labels {sorted(set(y[unknown].tolist()))[:5]} are not among the "
                         f"classes {classes.tolist()}; pass classes= naming every column.")
    return order[at], proba, False


def log_loss(y, proba, classes=None) -> float:
    """Mean negative log-probability of the true class (probabilities clipped to ``[1e-15,
    1]``); for label sets (``y`` a 0/1 matrix) each label's two-class log-loss, averaged over
    the labels.

    Parameters
    ----------
    y : array-like of labels, or (n, n_labels) 0/1 matrix
    proba : (n, n_classes) array, columns ordered as ``classes``; (n,) for the second of two
        classes; (n, n_labels) for label sets
    classes : array-like, optional
        The columns' classes; by default the sorted distinct labels of ``y``.

    Examples
    --------
    >>> round(log_loss(["a", "b"], [[0.8, 0.2], [0.4, 0.6]]), 4)
    0.367
    """
    codes, proba, multilabel = _as_codes(y, proba, classes)
    p = np.clip(proba, 1e-15, 1.0)
    if multilabel:
        q = np.clip(1.0 - proba, 1e-15, 1.0)
        return float(np.mean(-np.where(codes > 0, np.log(p), np.log(q)).mean(axis=0)))
    return float(np.mean(-np.log(p[np.arange(len(codes)), codes])))


def _binned_gap(confidence: np.ndarray, right: np.ndarray, bins: int) -> float:
    which = np.minimum((confidence * bins).astype(np.int64), bins - 1)
    count = np.bincount(which, minlength=bins)
    gap = np.abs(np.bincount(which, right, bins) - np.bincount(which, confidence, bins))
    return float(gap.sum() / max(count.sum(), 1))


def expected_calibration_error(y, proba, classes=None, bins: int = CALIBRATION_BINS) -> float:
    """Expected calibration error (Guo et al., 2017): the rows binned by their top-class
    confidence into ``bins`` equal widths of [0, 1], and the gap between each bin's accuracy
    and its mean confidence averaged with the bins' shares of the rows. 0 is perfect; a model
    that says 0.9 and is right 70 times in 100 adds 0.2 for those rows. For label sets each
    label is a two-class decision (its confidence ``max(p, 1 - p)``), and the labels' errors
    are averaged. Arguments as `log_loss`.

    Examples
    --------
    >>> y, proba = [0, 0, 1, 1], [[0.9, 0.1], [0.9, 0.1], [0.9, 0.1], [0.2, 0.8]]
    >>> round(expected_calibration_error(y, proba), 3)  # 0.9 said, 2 of 3 right; 0.8, 1 of 1
    0.225
    """
    codes, proba, multilabel = _as_codes(y, proba, classes)
    if len(codes) == 0:
        raise ValueError("no rows to measure calibration on.")
    if multilabel:
        return float(np.mean([_binned_gap(np.maximum(p, 1 - p), ((p > 0.5) == (c > 0)).astype(float),
                                          bins) for p, c in zip(proba.T, codes.T, strict=True)]))
    right = (proba.argmax(axis=1) == codes).astype(np.float64)
    return _binned_gap(proba.max(axis=1), right, bins)


def in_classes(proba, seen, classes) -> np.ndarray:
    """Probabilities ``proba`` over the classes ``seen`` (a fitted model's ``classes_``) with a
    column per class of ``classes``, in that order: a class the model never saw gets 0 (a model
    fitted on rows that lacked it). The search aligns every model's validation probabilities so;
    a vote (`embedkit.heads.EnsembleClassifier`) its members'."""
    proba, seen = np.asarray(proba, dtype=np.float64), list(seen)
    if seen == list(classes):
        return proba
    where = {c: i for i, c in enumerate(seen)}
    out = np.zeros((len(proba), len(classes)))
    for j, c in enumerate(classes):
        if c in where:
            out[:, j] = proba[:, where[c]]
    return out
