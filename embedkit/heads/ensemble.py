"""Ensembles of whole text pipelines: stacking or soft voting over members that read raw text.

Each member is a complete pipeline (representation + head), named by its registry pair
``"representation:head"`` (`embedkit.registry`) or given as a ``(name, estimator)`` pair, so
diverse views of the same documents (sparse n-grams, frozen sentence vectors, a fine-tuned
encoder) are combined by scikit-learn's `StackingClassifier` or `VotingClassifier`. The
ensemble takes raw text: in a `Pipeline` it follows a ``"passthrough"`` features step.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import _Constraint
from sklearn.utils.validation import check_is_fitted

from .._params import SEED, Interval, Rule, StrOptions, validate_params, validate_steps
from ..base import CheckedKeywords, store_params
from ..data.documents import validate_documents
from ..data.targets import multilabel_decisions

__all__ = ["EnsembleClassifier"]


class Members(_Constraint):
    """Member pipelines (two or more to stack), with distinct names: registry pairs
    ``"representation:head"`` and/or ``(name, estimator)`` pairs."""

    #: values at and past the edges, for the test suites (`embedkit._params.edge_values`)
    edge_examples = (("tfidf:logreg", "bow:logreg"), ("tfidf:logreg",))
    invalid_examples = ("tfidf:logreg", (), ("tfidf:logreg", "tfidf:logreg"),
                        ("tfidf:nope", "bow:logreg"), ("tfidf:logreg", 3))

    def is_satisfied_by(self, val):
        return self.explain(val) is None

    def explain(self, val) -> str | None:
        from .. import registry

        if not isinstance(val, (list, tuple)) or not val:
            return ("members must be a list of pipelines (two or more to stack), e.g. "
                    "('nbsvm:logreg-cv', 'minilm:logreg-cv').")
        names = []
        for member in val:
            if isinstance(member, str):
                rep, sep, head = member.partition(":")
                if not sep or rep not in registry.REPRESENTATIONS or head not in registry.HEADS:
                    return (f"member {member!r} is not a registry pair 'representation:head': "
                            f"the representation must be one of {sorted(registry.REPRESENTATIONS)}"
                            f" and the head one of {sorted(registry.HEADS)}.")
                names.append(f"{rep}+{head}")
            elif isinstance(member, (list, tuple)) and len(member) == 2 and hasattr(member[1], "fit"):
                names.append(str(member[0]))
            else:
                return (f"member {member!r} must be a registry pair such as 'tfidf:logreg' or a "
                        "(name, estimator) pair.")
        if len(set(names)) != len(names):
            return f"members {names} repeat a name; each must be distinct."
        return None

    def __str__(self):
        return "a list of registry pairs 'representation:head' or (name, estimator) pairs"


class EnsembleClassifier(CheckedKeywords, ClassifierMixin, BaseEstimator):
    """Stack (or average) the class probabilities of several text pipelines.

    Parameters
    ----------
    members : tuple, default=("nbsvm:logreg-cv", "minilm:logreg-cv")
        The member pipelines: registry pairs ``"representation:head"`` (each built as
        ``Pipeline([("features", REPRESENTATIONS[representation].factory()), ("head",
        HEADS[head].factory())])`` from `embedkit.registry`) and/or ``(name, estimator)``
        pairs whose estimator takes raw documents. At least two to stack; a vote of one is that
        member's probabilities (`embedkit.Tuner` keeps a label-set pick so, with its threshold).
    method : {"stack", "vote"}, default="stack"
        ``"stack"``: scikit-learn's `StackingClassifier`; a logistic regression learns how much
        to trust each member from its out-of-fold class probabilities (``cv`` folds), then every
        member is refitted on all the rows, so each member is fitted ``cv + 1`` times.
        ``"vote"``: scikit-learn's `VotingClassifier` with soft voting, the mean of the members'
        class probabilities; each member is fitted once. On label sets, the (weighted) mean of
        the members' label probabilities, thresholded.
    cv : int, default=5
        Stratified folds (shuffled with ``random_state``) for ``method="stack"``.
    C : float, default=1.0
        Inverse regularisation of the stacking logistic regression.
    weights : list of float or None, default=None
        ``method="vote"`` only: each member's weight in the mean of the probabilities (None:
        equal weights), as scikit-learn's `VotingClassifier` takes them. `embedkit.Tuner`
        writes the weights its ensemble selection chose here. A member given as
        ``(name, FrozenEstimator(fitted))`` (`sklearn.frozen`) is used as it is, not refitted.
    random_state : int, default=0
        Seeds the folds.
    threshold : float in (0, 1), default=0.5
        Multi-label targets only: a label is predicted where its stacked (or voted) probability
        exceeds this.

    Attributes
    ----------
    model_ : StackingClassifier or VotingClassifier
        The fitted scikit-learn ensemble.
    classes_ : ndarray
        The labels seen at fit (for multi-label targets the label names, or
        ``arange(n_labels)`` for an indicator matrix).
    multilabel_ : bool
        Whether ``y`` was multi-label (a 0/1 indicator matrix or a list of label lists). Then
        ``method="stack"`` uses scikit-learn's multi-label stacking: shuffled `KFold` folds
        (stratifying needs one label per row), every member must take multi-label targets
        (the registry's ``logreg``, ``logreg-cv`` and the neural heads do; ``sgd`` does not), and the
        combiner is one logistic regression per label (`MultiOutputClassifier`) over the
        members' out-of-fold label probabilities. ``method="vote"`` averages the members' label
        probabilities (scikit-learn's `VotingClassifier` does not take multi-label targets;
        ``model_`` is then the list of fitted ``(name, member)`` pairs).

    Notes
    -----
    Members that share a representation with a cache (the registry's ``minilm`` caches in
    memory) encode each document once for all folds; the other members recompute their
    features per fold. Fitting time is that of every member times ``cv + 1`` for stacking.

    Examples
    --------
    >>> from sklearn.pipeline import Pipeline
    >>> docs = ["a great film", "loved it", "awful plot", "boring and bad"] * 5
    >>> y = ["pos", "pos", "neg", "neg"] * 5
    >>> ens = EnsembleClassifier(members=("tfidf:logreg", "bow:logreg"), cv=2)
    >>> pipe = Pipeline([("features", "passthrough"), ("head", ens)]).fit(docs, y)
    >>> pipe.predict(["a great plot"]).tolist()
    ['pos']
    """

    _accepts = ("text",)
    _parameter_constraints: ClassVar[dict] = {
        "members": [Members()],
        "method": [StrOptions({"stack", "vote"})],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "C": [Interval(Real, 0, None, closed="neither")],
        "weights": [None, "array-like"],
        "random_state": [None, SEED],
        "threshold": [Interval(Real, 0, 1, closed="neither")],
    }
    _parameter_rules = (
        Rule(("weights", "members", "method"), lambda weights, members, method: weights is None or (
            method == "vote" and isinstance(members, (list, tuple)) and len(weights) == len(members)
            and all(isinstance(w, Real) and w >= 0 for w in weights) and sum(weights) > 0),
             "weights must be None, or with method='vote' one non-negative number per member "
             "(not all zero)", bad={"weights": [1.0], "method": "vote"}),
        Rule(("members", "method"), lambda members, method: method != "stack" or not isinstance(
            members, (list, tuple)) or len(members) >= 2,
             "members must hold at least two pipelines with method='stack' (a vote may have one)",
             bad={"members": ("tfidf:logreg",), "method": "stack"}),
    )

    def __init__(self, members=("nbsvm:logreg-cv", "minilm:logreg-cv"), method: str = "stack",
                 cv: int = 5, C: float = 1.0, weights=None, random_state: int = 0,
                 threshold: float = 0.5):
        store_params(self, locals())

    def _estimators(self) -> list[tuple[str, object]]:
        from sklearn.base import clone

        from ..registry import HEADS, REPRESENTATIONS, pair_pipeline

        out = []
        for member in self.members:  # checked by the table (Members) at the start of fit
            if isinstance(member, str):
                rep, _, head = member.partition(":")
                out.append((f"{rep}+{head}", pair_pipeline(REPRESENTATIONS[rep].factory(),
                                                           HEADS[head].factory())))
            else:
                out.append((str(member[0]), clone(member[1])))
        return out

    @staticmethod
    def _documents(X):
        """The documents, checked; a table (a DataFrame of several columns) as it is, for
        members that read one (`embedkit.TableEmbedder`)."""
        import pandas as pd

        if isinstance(X, pd.DataFrame) and X.shape[1] > 1:
            return X
        if hasattr(X, "tocsr") or (hasattr(X, "dtype") and getattr(X, "ndim", 1) == 2
                                   and X.dtype.kind in "fiub"):
            raise ValueError(
                f"EnsembleClassifier takes raw documents (each member owns its representation) but "
                f"received {type(X).__name__} features. In a Pipeline put it after a 'passthrough' "
                "features step: Pipeline([('features', 'passthrough'), ('head', "
                "EnsembleClassifier())]).")
        return np.asarray(validate_documents(X), dtype=object)

    def fit(self, X, y):
        """Fit every member (and, for stacking, the combiner on out-of-fold probabilities)."""
        from sklearn.ensemble import StackingClassifier, VotingClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import KFold, StratifiedKFold
        from sklearn.multioutput import MultiOutputClassifier
        from sklearn.utils import get_tags

        from ._targets import encode_targets

        validate_params(self)
        name = type(self).__name__
        docs = self._documents(X)
        if hasattr(docs, "columns"):  # a table: its members read these columns by name
            self.feature_names_in_ = np.asarray(docs.columns, dtype=object)
        if not len(docs):
            raise ValueError(f"{name}.fit received no rows: X is empty; fit needs training data.")
        # missing labels named, two classes or more; multi-label targets recognised
        classes, encoded, self.multilabel_ = encode_targets(y, name)
        estimators = self._estimators()
        for _, member in estimators:  # every member's parameters, before the first one trains
            validate_steps(member)
        combiner = LogisticRegression(C=float(self.C), max_iter=1000)
        if self.multilabel_:
            from sklearn.frozen import FrozenEstimator

            single = [n for n, m in estimators if not isinstance(m, FrozenEstimator)  # fitted
                      and not get_tags(m).classifier_tags.multi_label]
            if single:
                raise ValueError(f"{name}: members {single} cannot take multi-label targets; use "
                                 "members whose head does, e.g. ('tfidf:logreg', 'minilm:mlp').")
            folds = KFold(int(self.cv), shuffle=True, random_state=self.random_state)
            combiner, y = MultiOutputClassifier(combiner), encoded.astype(np.int64)
        else:
            folds = StratifiedKFold(int(self.cv), shuffle=True, random_state=self.random_state)
            y = classes[encoded]
        if self.multilabel_ and self.method == "vote":  # the mean of label probabilities
            self.model_ = [(n, m.fit(docs, y)) for n, m in estimators]
            self.classes_, self.threshold_ = classes, float(self.threshold)
            return self
        if self.method == "stack":
            model = StackingClassifier(estimators, cv=folds, stack_method="predict_proba",
                                       final_estimator=combiner)
        else:
            model = VotingClassifier(estimators, voting="soft",
                                     weights=None if self.weights is None else list(self.weights))
        self.model_ = model.fit(docs, y)
        self.classes_ = classes if self.multilabel_ else self.model_.classes_
        if self.multilabel_:
            self.threshold_ = float(self.threshold)
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, columns in ``classes_`` order."""
        check_is_fitted(self, "model_")
        docs = self._documents(X)
        if not len(docs):  # scikit-learn's ensembles refuse zero rows
            return np.zeros((0, len(self.classes_)))
        if self.multilabel_ and self.method == "vote":
            weights = np.ones(len(self.model_)) if self.weights is None else np.asarray(self.weights, float)
            return sum(w * np.asarray(m.predict_proba(docs), dtype=np.float64)
                       for w, (_, m) in zip(weights, self.model_, strict=True)) / weights.sum()
        if self.multilabel_:  # each label's combiner: the probability of its class 1
            per_label = self.model_.final_estimator_.predict_proba(self.model_.transform(docs))
            return np.column_stack([p[:, 1] for p in per_label])
        if self.method == "vote":  # the weighted mean, each member's columns in classes_ order
            return np.average([self._columns(m, docs) for m in self.model_.estimators_], axis=0,
                              weights=self.weights)
        return self.model_.predict_proba(docs)

    def _columns(self, member, docs) -> np.ndarray:
        """``member``'s probabilities with a column per class of ``classes_``: a prefit member
        that never saw a class gives it 0 (scikit-learn's vote needs every member's width)."""
        from ..data.targets import in_classes

        proba = np.asarray(member.predict_proba(docs), dtype=np.float64)
        if proba.shape[1] == len(self.classes_):  # every class, in the vote's order
            return proba
        known = set(self.classes_)
        unknown = [c for c in member.classes_ if c not in known]
        if unknown:
            raise ValueError(f"{type(self).__name__}: a member predicts classes {unknown[:5]} the "
                             "ensemble was not fitted on; fit it on labels that hold them.")
        return in_classes(proba, member.classes_, self.classes_)

    def predict(self, X) -> np.ndarray:
        """The most probable class of each document; for multi-label targets the int 0/1
        indicator matrix of the labels whose probability exceeds ``threshold``."""
        proba = self.predict_proba(X)  # before classes_: unfitted is a NotFittedError
        if self.multilabel_:
            return multilabel_decisions(proba, self.threshold_)
        return self.classes_[proba.argmax(axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.classifier_tags.multi_label = True
        return tags
