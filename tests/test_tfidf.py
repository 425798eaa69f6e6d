"""TfidfEmbedder: scikit-learn's TF-IDF values, weightings, character n-grams, LSA, pandas output,
errors, and the NBSVM log-count-ratio features (issue 13)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import accuracy_score

from embedkit import TfidfEmbedder
from embedkit.configure import make_pipeline
from embedkit.data.documents import Tokenizer


def test_tfidf_matches_scikit_learn(sentences):
    ours = TfidfEmbedder().fit(sentences)
    ref = TfidfVectorizer(token_pattern=None, tokenizer=Tokenizer(lowercase=False)).fit(sentences)
    got = ours.transform(sentences[:6])
    assert sp.issparse(got) and got.dtype == np.float32
    np.testing.assert_allclose(got.toarray(), ref.transform(sentences[:6]).toarray(), rtol=1e-5)
    assert list(ours.get_feature_names_out()) == list(ref.get_feature_names_out())


def test_tfidf_weightings_chars_and_lsa(sentences):
    counts = TfidfEmbedder(weighting="count").fit(sentences).transform(["the the cat"])
    binary = TfidfEmbedder(weighting="binary").fit(sentences).transform(["the the cat"])
    assert counts.max() == 2 and binary.max() == 1
    words = TfidfEmbedder().fit(sentences)
    both = TfidfEmbedder(char_ngram_range=(2, 3)).fit(sentences)
    assert both.dim_ > words.dim_
    lsa = TfidfEmbedder(n_components=5).fit(sentences)
    out = lsa.transform(sentences[:3] + [""])
    assert isinstance(out, np.ndarray) and out.shape == (4, 5)
    np.testing.assert_allclose(np.linalg.norm(out[:3], axis=1), 1, rtol=1e-5)
    np.testing.assert_array_equal(out[3], 0)  # empty document: zero vector, finite
    frame = TfidfEmbedder(n_components=5).set_output(transform="pandas").fit_transform(sentences)
    assert list(frame.columns)[:2] == ["lsa0", "lsa1"]


def test_tfidf_pandas_output_dense_or_a_named_way_out(sentences):
    sparse = TfidfEmbedder().fit(sentences)
    dense = TfidfEmbedder(sparse_output=False).set_output(transform="pandas").fit(sentences)
    frame = dense.transform(sentences[:3])
    assert list(frame.columns) == list(sparse.get_feature_names_out())
    np.testing.assert_array_equal(frame.to_numpy(), sparse.transform(sentences[:3]).toarray())
    with pytest.raises(ValueError, match=r"TfidfEmbedder gives a scipy-sparse matrix.*"
                                         r"sparse_output=False.*n_components=300"):
        TfidfEmbedder().set_output(transform="pandas").fit_transform(sentences)


def test_tfidf_errors(sentences):
    with pytest.raises(ValueError, match="found no terms.*min_df"):
        TfidfEmbedder().fit(["", "  "])
    with pytest.raises(ValueError, match="n_components=500 must lie"):
        TfidfEmbedder(n_components=500).fit(sentences)
    with pytest.raises(ValueError, match="weighting='bm25'"):
        TfidfEmbedder(weighting="bm25").fit(sentences)
    with pytest.raises(ValueError, match="output='sequence'.*no sequence form"):
        TfidfEmbedder(output="sequence").fit(sentences)


TOY = ["good good fun", "good film", "bad film", "bad bad plot", "fun plot"]
TOY_Y = ["pos", "pos", "neg", "neg", "pos"]


def _hand_ratio(counts: np.ndarray, inside: np.ndarray, alpha: float) -> np.ndarray:
    p = counts[inside].sum(axis=0) + alpha
    q = counts[~inside].sum(axis=0) + alpha
    return np.log(p / p.sum()) - np.log(q / q.sum())


def test_nbsvm_binary_equals_hand_computation():
    emb = TfidfEmbedder(weighting="count", log_count_ratio=True, nb_alpha=0.5).fit(TOY, TOY_Y)
    vocab = emb.vectorizer_.vocabulary_
    counts = np.zeros((len(TOY), len(vocab)))
    for i, doc in enumerate(TOY):
        for word in doc.split():
            counts[i, vocab[word]] += 1
    r = _hand_ratio(counts, np.array(TOY_Y) == "pos", 0.5)
    assert emb.classes_.tolist() == ["neg", "pos"]
    np.testing.assert_allclose(emb.ratios_, r[None, :], rtol=1e-6)
    # "good" only in positive documents, "bad" only in negative ones
    assert emb.ratios_[0, vocab["good"]] > 0 > emb.ratios_[0, vocab["bad"]]
    out = emb.transform(["good bad bad", "unseen words"]).toarray()
    want = np.zeros((2, len(vocab)))
    want[0, vocab["good"]], want[0, vocab["bad"]] = r[vocab["good"]], 2 * r[vocab["bad"]]
    np.testing.assert_allclose(out, want, rtol=1e-6)
    assert emb.dim_ == len(vocab)
    assert emb.get_feature_names_out()[vocab["good"]] == "pos:good"


def test_nbsvm_multiclass_blocks_one_vs_rest():
    y = ["a", "b", "c", "a", "b"]
    emb = TfidfEmbedder(weighting="binary", log_count_ratio=True).fit(TOY, y)
    vocab = emb.vectorizer_.vocabulary_
    binary = np.zeros((len(TOY), len(vocab)))
    for i, doc in enumerate(TOY):
        for word in doc.split():
            binary[i, vocab[word]] = 1
    assert emb.ratios_.shape == (3, len(vocab)) and emb.dim_ == 3 * len(vocab)
    for k, label in enumerate("abc"):
        np.testing.assert_allclose(emb.ratios_[k], _hand_ratio(binary, np.array(y) == label, 1.0),
                                   rtol=1e-6)
    out = emb.transform(TOY[:1]).toarray().reshape(3, len(vocab))
    np.testing.assert_allclose(out, binary[:1] * emb.ratios_, rtol=1e-6)
    names = emb.get_feature_names_out()
    assert names[0].startswith("a:") and names[-1].startswith("c:")


@pytest.mark.parametrize("y, match", [(None, "supervised"), (["pos"] * 5, "two classes"),
                                      (["pos", "neg"], "one label per document")])
def test_nbsvm_needs_labels(y, match):
    with pytest.raises(ValueError, match=match):
        TfidfEmbedder(log_count_ratio=True).fit(TOY, y)


def test_nbsvm_rejects_bad_alpha():
    with pytest.raises(ValueError, match="nb_alpha"):
        TfidfEmbedder(log_count_ratio=True, nb_alpha=0).fit(TOY, TOY_Y)


def test_nbsvm_ratios_on_real_tweets(tweets):
    X, y, X_test, y_test = tweets
    emb = TfidfEmbedder(ngram_range=(1, 2), sublinear_tf=True, log_count_ratio=True).fit(X, y)
    assert emb.classes_.tolist() == ["negative", "positive"]
    ratio = dict(zip(emb.vectorizer_.get_feature_names_out(), emb.ratios_[0], strict=True))
    assert min(ratio["love"], ratio["great"], ratio["happy"]) > 0
    assert max(ratio["hate"], ratio["sad"], ratio["worst"]) < 0
    # the registry pair runs as a Pipeline that passes y to the representation
    pipe = make_pipeline("nbsvm", "logreg-cv").fit(X, y)
    assert accuracy_score(y_test, pipe.predict(X_test)) > 0.75
