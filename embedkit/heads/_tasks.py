"""The task side of a head: `NeuralClassifierMixin` (probabilities, labels, the multi-label
threshold parameter every classifier gains) and `NeuralRegressorMixin` (values on the target's
own scale), and `ReadsText`, the tags of the heads that read raw text. `embedkit.heads._base`
holds the training every head shares; a head class is one of these mixins on `NeuralHead`.
"""

from __future__ import annotations

import inspect

import numpy as np

from .._params import THRESHOLD
from ..data.targets import multilabel_decisions

__all__ = ["NeuralClassifierMixin", "NeuralRegressorMixin", "ReadsText"]


class ReadsText:
    """Mixin of the heads that read raw text (after a ``"passthrough"`` features step): their
    scikit-learn tags say strings in, no 2-D arrays, no sparse input, deterministic for a seed."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.input_tags.sparse = False
        tags.non_deterministic = False
        return tags


class NeuralClassifierMixin:
    """predict / predict_proba for classification heads, single- and multi-label.

    A classifier's constructor is its head's plus ``threshold`` (keyword, default "tune"): each
    subclass that inherits its ``__init__`` gets that one parameter added to the signature and
    to ``_parameter_constraints`` here, so the classifier and regressor of a head share one
    parameter list.
    """

    _task = "classification"
    _estimator_type = "classifier"

    def __init_subclass__(cls, **kwargs):
        init = cls.__init__
        if "__init__" not in cls.__dict__ and "threshold" not in inspect.signature(init).parameters:
            cls.__init__ = _with_threshold(init)
            cls._parameter_constraints = {**cls._parameter_constraints, "threshold": THRESHOLD}
        super().__init_subclass__(**kwargs)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, columns ordered as ``classes_`` (rows sum to 1); for a
        multi-label target each label's own probability (its sigmoid), shape (n, n_labels)."""
        logits = self._forward(X)
        if getattr(self, "multilabel_", False):
            from scipy.special import expit

            return expit(logits)
        logits = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """Most probable class per row; for a multi-label target the int 0/1 indicator matrix
        (n, n_labels) of the labels whose probability exceeds ``threshold_``."""
        if getattr(self, "multilabel_", False):
            return multilabel_decisions(self.predict_proba(X), self.threshold_)
        scores = self._forward(X)
        return self.classes_[scores.argmax(axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        return tags


def _with_threshold(init):
    """``init`` with a keyword parameter ``threshold="tune"`` appended (see NeuralClassifierMixin)."""
    signature = inspect.signature(init)
    extra = inspect.Parameter("threshold", inspect.Parameter.KEYWORD_ONLY, default="tune")

    def __init__(self, *args, threshold="tune", **kwargs):
        init(self, *args, **kwargs)
        self.threshold = threshold

    __init__.__signature__ = signature.replace(parameters=[*signature.parameters.values(), extra])
    __init__.__doc__ = init.__doc__
    return __init__


class NeuralRegressorMixin:
    """predict for regression heads."""

    _task = "regression"
    _estimator_type = "regressor"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def predict(self, X) -> np.ndarray:
        """Predicted values, shaped like the ``y`` seen at fit."""
        out = self._forward(X).astype(np.float64)
        mean = getattr(self, "target_mean_", 0.0)  # a head saved before targets were scaled
        out = out * getattr(self, "target_scale_", 1.0) + mean
        return out.ravel() if self._y_ndim == 1 else out
