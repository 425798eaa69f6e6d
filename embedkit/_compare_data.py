"""What the data asks of a comparison (`embedkit.compare`): the target's kind (a number: every
head as its regressor; label sets: the indicator target and per-label heads) and a table's
columns (the steps that read one: `embedkit.representations.table.on_table`,
`embedkit.representations.table.text_only`)."""

from __future__ import annotations

import pandas as pd

from .data.datasets import is_multilabel
from .registry import for_task

__all__ = ["as_regression", "multilabel_target", "table_roles"]


def multilabel_target(df: pd.DataFrame, heads: dict):
    """For a multi-label dataset (a list of labels per row): the 0/1 indicator matrix of its
    labels (scikit-learn's ``MultiLabelBinarizer``, so every fold and scorer sees one column per
    label) and ``heads`` as label sets need them (`embedkit.registry.for_task`: a single-label
    classifier in ``OneVsRestClassifier``); None where the dataset has one label per row."""
    from sklearn.preprocessing import MultiLabelBinarizer

    if not is_multilabel(df["label"]):
        return None
    y = MultiLabelBinarizer().fit_transform(df["label"])
    return y, {name: for_task(head, "multilabel") for name, head in heads.items()}


def as_regression(rows_wanted, heads: dict, by_classes=frozenset()):
    """The rows and heads of a numeric target: each head as its regressor
    (`embedkit.registry.for_task`), the baselines' named for what they are (the mean, plain Ridge),
    the heads without a regressor and the representations in ``by_classes`` (they learn from
    classes) left out with a note each."""
    renamed = {"majority-class": "mean-value", "plain-lr": "plain-ridge"}
    converted = {renamed.get(n, n): for_task(h, "regression") for n, h in heads.items()}
    missing = sorted(n for n, h in converted.items() if h is None)
    notes = [f"{', '.join(missing)}: no regression form (an ensemble of classifiers or SetFit); "
             "left out on this numeric target."] if missing else []
    if by_classes:
        notes.append(f"{', '.join(sorted(by_classes))}: learns from classes (NB log-count ratios); "
                     "left out on this numeric target.")
    rows = [(kind, rep, renamed.get(h, h)) for kind, rep, h in rows_wanted
            if converted[renamed.get(h, h)] is not None and rep not in by_classes]
    if not rows:
        raise ValueError("none of the pairs chosen can learn a number (their heads have no "
                         "regression form, or their representations learn from classes); choose "
                         "e.g. -r tfidf with -H logreg (Ridge on a numeric target) or -H mlp.")
    return rows, {n: h for n, h in converted.items() if h is not None}, notes


def table_roles(df: pd.DataFrame, text_columns, categorical=None, numeric=None):
    """The roles of a table's columns (`embedkit.data.columns.infer_columns`: the ones named keep
    theirs), or None for a frame of one ``text`` column."""
    features = [c for c in df.columns if c not in ("label", "split")]
    if features == ["text"] and text_columns in (None, ["text"], ("text",)):
        return None
    from .data.columns import infer_columns

    return infer_columns(df[features], text=text_columns or df.attrs.get("text_columns"),
                         categorical=categorical, numeric=numeric)
