"""The data of a search and how it is split (`Split`): the documents and targets, the task, the
scorer and the seed, the training and validation rows (or, below `CV_ROWS` documents, the
folds every row is predicted by), and what is asked of them: a model's rows, a stratified
subsample, a table's text, a score. The engine holds one (``Search.data``); the schedule, the
plans and the finish read it and never change it once split."""

from __future__ import annotations

import numpy as np

from ..data.columns import encoded_text, take
from ..representations.table import on_table
from . import _selection
from ._settings import CV_ROWS, FOLDS, VALID_ROWS

__all__ = ["Split"]


class Split:
    """``docs`` and ``y`` of a search of ``task`` ("classification", "regression": a number per
    document, ``classes`` None; "multilabel": a 0/1 row of labels per document, ``classes`` its
    columns), scored by ``scoring``, split by `split` (``validation``: the share held out, or
    "auto"), seeded by ``seed``. On a table (`embedkit.data.columns`) ``docs`` is a DataFrame
    whose columns have ``roles``, and ``texts`` the text an encoder reads of each row (what the
    encoder's pass caches)."""

    def __init__(self, docs, y: np.ndarray, *, task: str = "classification", roles=None,
                 scoring: str = "accuracy", validation="auto", seed: int = 0):
        self.docs, self.y, self.task, self.roles = docs, y, task, roles
        self.scoring, self.validation, self.seed = scoring, validation, seed
        self.texts = docs if roles is None else encoded_text(docs, roles)
        # under cross-validation (`split`): the fold of each row, and the fits a model's score takes
        self.folds: np.ndarray | None = None
        self.fits_each = 1
        self._order: np.ndarray | None = None
        self._firsts: np.ndarray | None = None

    def split(self) -> None:
        """Hold out the validation rows (``validation``: their share; "auto": 0.2, but below
        `CV_ROWS` documents, not label sets, none: every row is a validation row, predicted by
        the fit of the `FOLDS` that left it out)."""
        from sklearn.model_selection import train_test_split

        numbers, sets = self.task == "regression", self.task == "multilabel"
        n, n_classes = len(self.docs), 1 if numbers or sets else len(np.unique(self.y))
        key = None if numbers else _selection.strata(self.y)
        if self.validation == "auto" and n < CV_ROWS and not sets:
            self.folds, self.fits_each = _selection.fold_of(self.y, FOLDS, self.seed, key is not None), FOLDS
            return self._keep(np.arange(n), np.arange(n))
        # a share of the rows, at most `VALID_ROWS` (predicting them is part of every model's
        # cost), at least two of a class where they can be spared, never fewer than one of every
        # class (a stratified split needs it: 10,000 classes of 3 documents), two left to train
        share = 0.2 if self.validation == "auto" else self.validation
        size = int(min(max(round(share * n), 2 * n_classes, 20),
                       max(VALID_ROWS, n_classes), n - 2 * n_classes))
        if sets and np.unique(key, return_counts=True)[1].min() < 2:
            key = None  # a rarest label on one row: not stratifiable; `covering` keeps it in training
        train, valid = train_test_split(np.arange(n), test_size=size, stratify=key,
                                        random_state=self.seed)
        if sets:  # every label on some training row: a validation row of each moved to them
            moved = np.setdiff1d(_selection.covering(np.sort(train), self.y, valid), train)
            train, valid = np.union1d(train, moved), np.setdiff1d(valid, moved)
        self._keep(np.sort(train), np.sort(valid))

    def _keep(self, train: np.ndarray, valid: np.ndarray) -> None:
        """The training and validation rows (the same rows, all of them, under cross-validation),
        their documents and targets, and the classes."""
        numbers, sets = self.task == "regression", self.task == "multilabel"
        self.train, self.valid = train, valid
        self.X_train, self.y_train = take(self.docs, self.train), self.y[self.train]
        self.X_valid, self.y_valid = take(self.docs, self.valid), self.y[self.valid]
        # label sets: the label columns (the models fit the 0/1 matrix); a number: none
        self.classes = (None if numbers else np.arange(self.y.shape[1]) if sets
                        else np.unique(self.y))

    def score_proba(self, proba: np.ndarray) -> float:
        """The scorer's value for validation probabilities (columns in ``classes`` order)."""
        return _selection.score(self.scoring, proba, self.y_valid, self.classes)

    def sample_rows(self, m: int) -> np.ndarray:
        """``m`` training rows (positions into the training rows), stratified, seeded; the rows
        of a smaller ``m`` are among them (`embedkit.tuning._selection.stratified_order`); a row
        of every class or label the training rows hold among them (`covering`)."""
        if self._order is None:  # the order, and where each class first comes in it, once
            self._order = _selection.stratified_order(self.y_train, self.seed)
            self._firsts = (_selection.firsts_of(self.y_train, self._order)
                            if self.task == "classification" else None)
        return _selection.stratified_rows(self.y_train, int(m), self.seed, self._order, self._firsts)

    def read_texts(self, rows: np.ndarray, roles=None) -> np.ndarray:
        """The text a head that reads raw text gets for ``rows`` (positions into the training
        rows): the documents, or a table's columns (``roles``, else the search's) joined
        (`embedkit.representations.table.on_table`)."""
        if self.roles is None:
            return self.X_train[rows]
        return on_table("passthrough", roles or self.roles).fit_transform(take(self.X_train, rows))

    def n_rows(self, c) -> int:
        """The rows candidate ``c`` fits on (under cross-validation, those of a fold's fit)."""
        rows = len(self.train) if c.rows is None else len(c.rows)
        return rows if self.folds is None else round(rows * (self.fits_each - 1) / self.fits_each)

    def fit_rows(self, rows: int) -> int:
        """The rows a model's score fits on in all, on ``rows`` training rows: those, or under
        cross-validation the sum of its folds' fits'."""
        return rows if self.folds is None else rows * (self.fits_each - 1)
