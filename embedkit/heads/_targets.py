"""Targets of the heads: labels checked and encoded by scikit-learn's rules (one label per row,
a 0/1 indicator matrix, or label lists), regression targets, the loss that fits them (with
class weights). The multi-label threshold is the targets' own (`embedkit.data.targets`).

Every classifier of the package (the neural heads, the fine-tuning and SetFit heads, the linear
head, the ensemble) encodes ``y`` here, so a missing label or a constant label column gets the
same message everywhere.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import _num_samples

__all__ = ["check_target_rows", "encode_class_labels", "encode_regression_targets",
           "encode_targets", "loss_for_targets"]


def encode_class_labels(y, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, codes)`` of a classifier's targets: one label per row, none missing (the rows
    are named), at least two classes. ``codes`` are int64 indices into the sorted ``classes``."""
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import column_or_1d

    y = column_or_1d(y, warn=True)
    _check_missing_labels(y, name)
    check_classification_targets(y)
    classes, encoded = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"y has only one class ({classes[0]!r}); a classifier needs at least "
                         "two classes in the training data." if len(classes) else
                         "y is empty; a classifier needs labelled rows of at least two classes.")
    return classes, encoded.astype(np.int64)


_LABEL_LIST = (list, tuple, set, frozenset, np.ndarray)


def encode_targets(y, name: str) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(classes, encoded, multilabel)`` of a classifier's targets, by scikit-learn's rules.

    * one label per row: `encode_class_labels` (``encoded``: int64 class indices);
    * a 0/1 indicator matrix, ``type_of_target(y) == "multilabel-indicator"`` (what
      `sklearn.preprocessing.MultiLabelBinarizer` makes, dense or sparse): ``classes`` is
      ``arange(n_labels)``, as scikit-learn's MLPClassifier has it;
    * a list of label lists (``[["sport", "politics"], [], ...]``): binarized with
      ``MultiLabelBinarizer``; ``classes`` holds the label names, sorted. A rectangular list of
      0/1 lists is an indicator matrix, as scikit-learn reads it.

    For multi-label targets ``encoded`` is a float32 ``(n_samples, n_labels)`` 0/1 matrix; every
    label must be on some rows and off others (a constant column teaches nothing and is named).

    Examples
    --------
    >>> classes, encoded, multilabel = encode_targets([["b", "a"], ["a"], []], "head")
    >>> classes.tolist(), encoded.tolist(), multilabel
    (['a', 'b'], [[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]], True)
    """
    from sklearn.utils.multiclass import type_of_target

    rows = None
    if isinstance(y, (list, tuple)) or (getattr(y, "ndim", 0) == 1
                                        and getattr(y, "dtype", None) == np.dtype(object)):
        rows = list(y)
        lists = [isinstance(v, _LABEL_LIST) for v in rows]
        if any(lists) and not all(lists):
            bad = lists.index(not lists[0])
            first = "a list of labels" if lists[0] else "one label"
            raise ValueError(
                f"y row 0 is {first} but row {bad} is {rows[bad]!r}: {name} takes either one "
                "label per row or a list of labels per row (multi-label), not a mix. Give every "
                "row a list, e.g. ['sport'] or [] for no label, or every row one label.")
        if not any(lists):
            rows = None
    if rows is None and not sp.issparse(y):
        # name missing labels by row before type_of_target sorts them (None < "a" is a TypeError);
        # np.asarray, not np.ndim: array-likes that refuse numpy's functions pass through __array__
        labels = np.asarray(y, dtype=object)
        if labels.ndim == 1:
            _check_missing_labels(labels, name)
    try:
        kind = type_of_target(y)
    except ValueError:  # a sequence of sequences: label lists
        kind = "label lists" if rows is not None else None
    if kind != "multilabel-indicator" and rows is not None:
        from sklearn.preprocessing import MultiLabelBinarizer

        _check_missing_labels(np.asarray([_missing_in(r) for r in rows]), name)
        try:
            binarizer = MultiLabelBinarizer().fit(rows)
        except TypeError as err:
            raise ValueError(f"{name} could not sort the labels of y ({err}); use labels of one "
                             "type (all strings or all numbers).") from None
        classes, encoded = binarizer.classes_, binarizer.transform(rows)
    elif kind == "multilabel-indicator":
        encoded = y.toarray() if sp.issparse(y) else np.asarray(y)
        classes = np.arange(encoded.shape[1])
    else:
        if getattr(y, "ndim", 1) == 2 and np.shape(y)[1] > 1:
            _check_missing_labels(np.asarray(y, dtype=object), name)
            raise ValueError(
                f"y is a 2-D array but not a 0/1 indicator matrix (scikit-learn's type_of_target "
                f"says {kind!r}); {name} takes one label per row, a 0/1 matrix of shape (n_samples, "
                "n_labels) for multi-label targets (MultiLabelBinarizer makes one) or a list of "
                "label lists.")
        classes, codes = encode_class_labels(y, name)
        return classes, codes, False
    encoded = np.asarray(encoded, dtype=np.float32)
    counts = encoded.sum(axis=0)
    for j in np.flatnonzero((counts == 0) | (counts == len(encoded))):
        state = "no row" if counts[j] == 0 else "every row"
        raise ValueError(
            f"label {classes[j].tolist()!r} (column {j} of y) is on {state} of the {len(encoded)} training "
            f"rows, so {name} cannot learn when to predict it; drop that column (or add rows "
            "with and without it).")
    return classes, encoded, True


def check_target_rows(y, n_rows: int, name: str) -> None:
    """Refuse a missing ``y``, one that is not array-like, or one whose length is not the
    number of training rows, with a message that says so."""
    if y is None:
        raise ValueError(f"{name} requires y to be passed, but the target y is None.")
    try:
        n_y = _num_samples(y)
    except TypeError:
        raise ValueError(f"y must be an array-like of targets, got {type(y).__name__}.") from None
    if n_y != n_rows:
        raise ValueError(f"X has {n_rows} rows but y has {n_y}; they must match row for row.")


def encode_regression_targets(y, name: str) -> tuple[np.ndarray, int]:
    """``(targets, ndim)`` of a regressor: float32 ``(n_samples, n_targets)`` and the number of
    dimensions ``y`` had (predictions are shaped back to it); missing, non-numeric or non-finite
    values are refused with the rows or the fix named."""
    y = np.asarray(y, dtype=object)
    _check_missing_labels(y.reshape(len(y), -1), name)
    try:
        y = y.astype(np.float32)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} is a regressor: y must hold numbers ({err}).") from None
    if not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinity; drop or impute those rows first.")
    return y.reshape(len(y), -1), y.ndim


def loss_for_targets(y_enc: np.ndarray, *, task: str, multilabel: bool, class_weight,
                     classes: np.ndarray | None, name: str) -> tuple[type, dict]:
    """The torch loss class for encoded targets and its skorch ``criterion__*`` arguments.

    Regression: mean squared error. Single-label classification: cross-entropy, with
    ``class_weight`` (None, "balanced" or a dict label -> weight, scikit-learn's
    ``compute_class_weight``) as its class weights. Multi-label: one sigmoid per label
    (binary cross-entropy on the logits); "balanced" weights each label's positive rows by its
    negatives / positives (torch's ``pos_weight``); a dict is refused.
    """
    import torch

    if task != "classification":
        return torch.nn.MSELoss, {}
    if multilabel:
        if class_weight is None:
            return torch.nn.BCEWithLogitsLoss, {}
        if class_weight != "balanced":
            raise ValueError(
                f"{name}(class_weight={{...}}): a dict of class weights applies to single-label "
                "targets; y is multi-label. Use class_weight='balanced' (each label's positive "
                "rows weighted by its negatives / positives, torch's pos_weight) or None.")
        positives = y_enc.sum(axis=0)
        pos_weight = (len(y_enc) - positives) / positives
        return torch.nn.BCEWithLogitsLoss, {
            "criterion__pos_weight": torch.as_tensor(pos_weight, dtype=torch.float32)}
    if class_weight is None:
        return torch.nn.CrossEntropyLoss, {}
    from sklearn.utils.class_weight import compute_class_weight

    if isinstance(class_weight, dict):
        missing = set(class_weight) - set(classes.tolist())
        if missing:
            raise ValueError(f"class_weight names classes {sorted(missing)} not present in y.")
    w = compute_class_weight(class_weight, classes=classes, y=classes[y_enc])
    return torch.nn.CrossEntropyLoss, {"criterion__weight": torch.as_tensor(w, dtype=torch.float32)}


def _missing_in(row) -> object:
    """None when a label list holds a missing label (None, NaN), else the row's first label."""
    import pandas as pd

    return None if any(v is None or (not isinstance(v, str) and pd.isna(v)) for v in row) else 0


def _check_missing_labels(y: np.ndarray, name: str) -> None:
    """Name the rows whose target is missing (None, NaN, pandas NA), before numpy sorts them."""
    import pandas as pd

    missing = np.asarray(pd.isna(y))
    missing = missing.reshape(len(missing), -1).any(axis=1) if missing.ndim > 1 else missing
    if missing.any():
        rows = np.flatnonzero(missing)
        shown = ", ".join(map(str, rows[:5])) + (f" and {len(rows) - 5} more" if len(rows) > 5 else "")
        raise ValueError(f"y has {len(rows)} missing label(s) (None or NaN) at positions {shown}; "
                         f"{name} needs a label for every row: drop those rows or fill them.")
