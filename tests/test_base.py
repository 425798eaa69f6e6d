"""embedkit.base: what every estimator shares (keyword checking of constructors)."""

from __future__ import annotations

import inspect

import numpy as np
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


# -- a document's cost is bounded (issue 49) ---------------------------------------------------
def test_a_document_beyond_a_representations_reach_is_read_to_its_reach(sentences):
    """A bag of words reads a document to `MAX_DOCUMENT_CHARS`; an encoder that reads
    ``max_length`` tokens to ``max_length * CHARS_PER_TOKEN`` characters: what is beyond never
    changes the vector, and is never tokenized (a 50 MB text took a minute and 7.8 GB)."""
    from embedkit import TfidfEmbedder, TransformerEmbedder
    from embedkit.data.documents import CHARS_PER_TOKEN, MAX_DOCUMENT_CHARS, within_reach

    words = " ".join(sentences)
    long = (words + " ") * (MAX_DOCUMENT_CHARS // len(words) + 40)  # past the reach
    assert len(long) > MAX_DOCUMENT_CHARS + 10_000
    tfidf = TfidfEmbedder().fit(sentences + [long])
    cut = TfidfEmbedder().fit(sentences + [long[:MAX_DOCUMENT_CHARS]])
    assert (abs(tfidf.transform([long]) - cut.transform([long[:MAX_DOCUMENT_CHARS]])) > 0).nnz == 0
    encoder = TransformerEmbedder(max_length=16).fit([])
    reach = 16 * CHARS_PER_TOKEN
    np.testing.assert_array_equal(encoder.transform([long]), encoder.transform([long[:reach]]))
    assert within_reach(["ab", "abcd"], 3) == ["ab", "abc"] and within_reach(["ab"], None) == ["ab"]
