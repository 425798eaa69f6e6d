"""GloveEmbedder: training GloVe (co-occurrences, quality, determinism) and the bundled vectors in
a scikit-learn pipeline. Pooling, OOV policies and outputs shared by every static embedder are
in `test_static.py`."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from embedkit import GloveEmbedder


def test_glove_training_cooccurrence_and_quality(corpus):
    from embedkit.representations.glove import cooccurrence_matrix

    X = cooccurrence_matrix([["a", "b", "c"], ["a", "x", "b"]], ["a", "b", "c"], window=2)
    # doc 1: a-b at 1, b-c at 1, a-c at 2; doc 2: "x" is dropped first, so a-b at 1
    np.testing.assert_allclose(X.toarray(), [[0, 2, 0.5], [2, 0, 1], [0.5, 1, 0]])
    params = dict(train=True, vector_size=16, window=4, min_count=1, epochs=30, random_state=0)
    emb = GloveEmbedder(**params).fit(corpus)
    assert emb.word_vectors_.words[0] in {"cat", "dog", "stock"} or len(emb.word_vectors_) == 20
    assert emb.similarity("cat", "dog") > emb.similarity("cat", "stock") + 0.2
    again = GloveEmbedder(**params).fit(corpus)
    np.testing.assert_array_equal(emb.word_vectors_.vectors, again.word_vectors_.vectors)
    blob = pickle.loads(pickle.dumps(emb))
    np.testing.assert_array_equal(blob.transform(corpus[:3]), emb.transform(corpus[:3]))
    # a huge learning rate takes bounded steps (accumulated before dividing): still finite
    wild = GloveEmbedder(**{**params, "learning_rate": 1e6}).fit(corpus)
    assert np.isfinite(wild.word_vectors_.vectors).all()
    from embedkit.representations.glove import train_glove

    with pytest.raises(ValueError, match="diverged.*lower it, e.g. learning_rate="):
        train_glove(sp.csr_matrix(np.array([[0, 3e38], [3e38, 0]], dtype=np.float32)) * 10, 4)


def test_end_to_end_bbc_news_pipeline():
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline

    from embedkit.data.datasets import load_dataset

    df = load_dataset("bbc-news").sample(400, random_state=0)
    tr, te = train_test_split(df, test_size=0.25, stratify=df["label"], random_state=0)
    pipe = make_pipeline(GloveEmbedder(), LogisticRegression(max_iter=2000, C=10))
    pipe.fit(tr["text"], tr["label"])
    assert (pipe.predict(te["text"]) == te["label"].to_numpy()).mean() > 0.85
