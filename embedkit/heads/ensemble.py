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

from .._params import SEED, Interval, StrOptions, validate_params, validate_steps
from ..base import CheckedKeywords, store_params
from ..documents import validate_documents
from ._base import encode_class_labels

__all__ = ["EnsembleClassifier"]


class Members(_Constraint):
    """At least two member pipelines, with distinct names: registry pairs
    ``"representation:head"`` and/or ``(name, estimator)`` pairs."""

    #: values at and past the edges, for the test suites (`embedkit._params.edge_values`)
    edge_examples = (("tfidf:logreg", "bow:logreg"),)
    invalid_examples = ("tfidf:logreg", ("tfidf:logreg",), ("tfidf:logreg", "tfidf:logreg"),
                        ("tfidf:nope", "bow:logreg"), ("tfidf:logreg", 3))

    def is_satisfied_by(self, val):
        return self.explain(val) is None

    def explain(self, val) -> str | None:
        from .. import registry

        if not isinstance(val, (list, tuple)) or len(val) < 2:
            return ("members must be a list of at least two pipelines, e.g. "
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
        return "a list of at least two registry pairs 'representation:head' or (name, estimator) pairs"


class EnsembleClassifier(CheckedKeywords, ClassifierMixin, BaseEstimator):
    """Stack (or average) the class probabilities of several text pipelines.

    Parameters
    ----------
    members : tuple, default=("nbsvm:logreg-cv", "minilm:logreg-cv")
        The member pipelines: registry pairs ``"representation:head"`` (each built as
        ``embedkit.registry.make_pipeline(representation, head)``) and/or ``(name, estimator)``
        pairs whose estimator takes raw documents. At least two.
    method : {"stack", "vote"}, default="stack"
        ``"stack"``: scikit-learn's `StackingClassifier`; a logistic regression learns how much
        to trust each member from its out-of-fold class probabilities (``cv`` folds), then every
        member is refitted on all the rows, so each member is fitted ``cv + 1`` times.
        ``"vote"``: scikit-learn's `VotingClassifier` with soft voting, the mean of the members'
        class probabilities; each member is fitted once.
    cv : int, default=5
        Stratified folds (shuffled with ``random_state``) for ``method="stack"``.
    C : float, default=1.0
        Inverse regularisation of the stacking logistic regression.
    random_state : int, default=0
        Seeds the folds.

    Attributes
    ----------
    model_ : StackingClassifier or VotingClassifier
        The fitted scikit-learn ensemble.
    classes_ : ndarray
        The labels seen at fit.

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
        "random_state": [None, SEED],
    }

    def __init__(self, members=("nbsvm:logreg-cv", "minilm:logreg-cv"), method: str = "stack",
                 cv: int = 5, C: float = 1.0, random_state: int = 0):
        store_params(self, locals())

    def _estimators(self) -> list[tuple[str, object]]:
        from sklearn.base import clone

        from .. import registry

        out = []
        for member in self.members:  # checked by the table (Members) at the start of fit
            if isinstance(member, str):
                rep, _, head = member.partition(":")
                out.append((f"{rep}+{head}", registry.make_pipeline(rep, head)))
            else:
                out.append((str(member[0]), clone(member[1])))
        return out

    @staticmethod
    def _documents(X) -> np.ndarray:
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
        from sklearn.model_selection import StratifiedKFold

        validate_params(self)
        docs = self._documents(X)
        if not len(docs):
            raise ValueError(f"{type(self).__name__}.fit received no rows: X is empty; fit needs "
                             "training data.")
        encode_class_labels(y, type(self).__name__)  # missing labels named, two classes or more
        estimators = self._estimators()
        for _, member in estimators:  # every member's parameters, before the first one trains
            validate_steps(member)
        if self.method == "stack":
            folds = StratifiedKFold(int(self.cv), shuffle=True, random_state=self.random_state)
            model = StackingClassifier(estimators, cv=folds, stack_method="predict_proba",
                                       final_estimator=LogisticRegression(C=float(self.C),
                                                                          max_iter=1000))
        else:
            model = VotingClassifier(estimators, voting="soft")
        self.model_ = model.fit(docs, np.asarray(y))
        self.classes_ = self.model_.classes_
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, columns in ``classes_`` order."""
        check_is_fitted(self, "model_")
        docs = self._documents(X)
        if not len(docs):  # scikit-learn's ensembles refuse zero rows
            return np.zeros((0, len(self.classes_)))
        return self.model_.predict_proba(docs)

    def predict(self, X) -> np.ndarray:
        """The most probable class of each document."""
        proba = self.predict_proba(X)  # before classes_: unfitted is a NotFittedError
        return self.classes_[proba.argmax(axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        return tags
