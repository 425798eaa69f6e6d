"""What a target asks of a head, one mechanism for every head (`for_task`).

For a number, a classifier step becomes its regression counterpart: an embedkit head
``XClassifier`` its ``XRegressor`` with the same parameters, the `LogisticRegressionHead` (C by
inner cross-validation) scikit-learn's `RidgeCV` (alpha by inner 3-fold cross-validation), a
plain ``LogisticRegression`` a plain ``Ridge`` and the majority class the mean. A step with no
counterpart (an ensemble of classifiers, SetFit) is None, and the caller leaves its pair out and
says so. For label sets, a step that takes them is itself, any other one of it per label.

The catalog names it for its users: `embedkit.registry.for_task`.
"""

from __future__ import annotations

__all__ = ["for_task"]


def _regressor_of(step):
    """The regression counterpart of one classifier step, or None (see `for_task`)."""
    from sklearn.base import is_classifier
    from sklearn.dummy import DummyClassifier, DummyRegressor
    from sklearn.linear_model import LogisticRegression, LogisticRegressionCV, Ridge, RidgeCV

    import embedkit

    if not is_classifier(step):
        return step
    name = type(step).__name__
    if isinstance(step, DummyClassifier):
        return DummyRegressor(strategy="mean")
    if isinstance(step, LogisticRegressionCV) or name == "LogisticRegressionHead":
        # alpha by inner 3-fold CV, as the head chooses C: scikit-learn's leave-one-out form
        # eigendecomposes an n x n (or p x p) matrix, hours on 45,000 rows of sparse TF-IDF
        import numpy as np

        return RidgeCV(alphas=np.logspace(-3, 3, 13), cv=3)
    if isinstance(step, LogisticRegression):
        return Ridge()
    ours = type(step).__module__.startswith("embedkit.") and name.endswith("Classifier")
    counterpart = getattr(embedkit, name.replace("Classifier", "Regressor"), None) if ours else None
    if counterpart is None:
        return None
    params = step.get_params(deep=False)
    keep = counterpart().get_params(deep=False)
    # a value the regressor does not take (a classifier's loss) keeps the regressor's default
    return counterpart(**{k: v for k, v in params.items() if k in keep and _takes(counterpart, k, v)})


def _takes(cls, name: str, value) -> bool:
    """Whether ``cls``'s parameter table allows ``value`` for ``name``."""
    from ._params import validate_params

    try:
        validate_params(cls(**{name: value}), only=(name,))
    except (TypeError, ValueError):
        return False
    return True


def _multilabel_of(step):
    """``step`` where it takes label sets (its tags say so), else in scikit-learn's
    ``OneVsRestClassifier`` (the plain LogisticRegression, the majority class)."""
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.utils import get_tags

    return step if get_tags(step).classifier_tags.multi_label else OneVsRestClassifier(step)


def for_task(step, task: str):
    """``step`` (a head, or a `Pipeline` ending in one) as ``task`` needs it: itself for a class,
    its regression counterpart for a number (None where it has none), for a label set itself
    where it takes them, else one of it per label (``OneVsRestClassifier``).

    Examples
    --------
    >>> from embedkit import MLPClassifier
    >>> for_task(MLPClassifier(epochs=3), "regression")
    MLPRegressor(epochs=3)
    """
    if task == "classification" or isinstance(step, str):
        return step
    from sklearn.pipeline import Pipeline

    form = _regressor_of if task == "regression" else _multilabel_of
    if isinstance(step, Pipeline):
        last = form(step.steps[-1][1])
        if last is None:
            return None
        return Pipeline([*step.steps[:-1], (step.steps[-1][0], last)])
    return form(step)
