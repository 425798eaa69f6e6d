"""embedkit.base: what every estimator shares (keyword checking of constructors)."""

from __future__ import annotations

import inspect

import pytest
from sklearn.base import BaseEstimator, clone

import embedkit


def _estimators():
    for name in embedkit.__all__:
        value = getattr(embedkit, name)
        if inspect.isclass(value) and issubclass(value, BaseEstimator):
            yield value


@pytest.mark.parametrize("cls", list(_estimators()), ids=lambda c: c.__name__)
def test_a_misspelt_keyword_names_the_class_and_the_closest_parameter(cls):
    params = cls().get_params()
    target = max(params, key=len)  # the longest name survives a dropped letter best
    typo = target[:-2] + target[-1]
    with pytest.raises(TypeError) as caught:
        cls(**{typo: params[target]})
    message = str(caught.value)
    assert message.startswith(f"{cls.__name__} has no parameter {typo!r}. Did you mean {target!r}?")
    assert ", ".join(sorted(params)) in message
    # the wrapper keeps scikit-learn's view of the constructor
    assert sorted(clone(cls()).get_params()) == sorted(params)
    assert cls(**{target: params[target]}).get_params()[target] is params[target]


def test_a_keyword_far_from_every_parameter_gets_the_list_without_a_guess():
    with pytest.raises(TypeError, match=r"^MLPClassifier has no parameter 'zzz'\. Its parameters: "
                                        r"activation, batch_size, "):
        embedkit.MLPClassifier(zzz=1)
