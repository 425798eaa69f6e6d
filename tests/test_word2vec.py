"""Word2VecEmbedder: gensim's vectors, seeded; what it learns; the empty-vocabulary error."""

from __future__ import annotations

import numpy as np
import pytest

from embedkit import GloveEmbedder, Word2VecEmbedder


def test_word2vec_deterministic_with_seed_and_one_worker(corpus):
    params = dict(vector_size=16, epochs=3, workers=1)
    a = Word2VecEmbedder(**params, random_state=1).fit(corpus)
    b = Word2VecEmbedder(**params, random_state=1).fit(corpus)
    c = Word2VecEmbedder(**params, random_state=2).fit(corpus)
    np.testing.assert_array_equal(a.transform(corpus[:5]), b.transform(corpus[:5]))
    assert not np.allclose(a.transform(corpus[:5]), c.transform(corpus[:5]))
    # the same vectors as raw gensim with the same parameters, seed and tokens
    from gensim.models import Word2Vec

    raw = Word2Vec(sentences=[d.split() for d in corpus], seed=1, **params)
    assert raw.wv.index_to_key == a.word_vectors_.words
    np.testing.assert_array_equal(raw.wv.vectors, a.word_vectors_.vectors)
    # fitted state keeps gensim's vectors for exactly the training vocabulary, no gensim model
    assert set(a.word_vectors_.words) == set(" ".join(corpus).split())
    assert not hasattr(a, "model_")


def test_word2vec_learns_topics(corpus):
    emb = Word2VecEmbedder(vector_size=16, window=3, epochs=20, sg=1, random_state=0).fit(corpus)
    assert emb.similarity("cat", "dog") > emb.similarity("cat", "stock")


def test_empty_vocabulary_after_min_count_is_a_clear_error():
    with pytest.raises(ValueError, match="empty vocabulary after min_count=5"):
        Word2VecEmbedder(min_count=5).fit(["one two", "three four"])
    with pytest.raises(ValueError, match="empty vocabulary after min_count=5"):
        GloveEmbedder(train=True).fit(["one two", "three four"])
