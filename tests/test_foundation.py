"""Behaviour of the foundation: inputs, containers, TF-IDF, datasets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.utils import _safe_indexing

from embedkit import TfidfEmbedder
from embedkit.documents import Tokenizer, validate_documents
from embedkit.sequences import Sequences, TokenIds, masked_pool


# ---------------------------------------------------------------- documents
def test_validate_documents_forms():
    assert validate_documents(np.array(["a", "b"])) == ["a", "b"]
    assert validate_documents(pd.Series(["x", "y"], index=[5, 2])) == ["x", "y"]
    assert validate_documents(pd.DataFrame({"t": ["x"]})) == ["x"]
    assert validate_documents(iter(["g"])) == ["g"]
    assert type(validate_documents(np.array(["a"]))[0]) is str


def test_validate_documents_names_many_rows():
    docs = ["ok"] + [None] * 7
    with pytest.raises(ValueError, match=r"7 row\(s\).*1 \(None\).*and 2 more.*fillna"):
        validate_documents(docs)
    with pytest.raises(ValueError, match="one text column"):
        validate_documents(pd.DataFrame({"a": ["x"], "b": ["y"]}))
    with pytest.raises(ValueError, match="1-D array"):
        validate_documents(np.array([["a", "b"], ["c", "d"]]))


def test_tokenizer():
    tok = Tokenizer()
    assert tok("Don't panic, it's E-mail!") == ["don't", "panic", ",", "it's", "e-mail", "!"]
    assert Tokenizer(lowercase=False)("New York") == ["New", "York"]
    assert tok.tokenize_all(["a b", ""]) == [["a", "b"], []]
    import pickle

    assert pickle.loads(pickle.dumps(tok))("A B") == ["a", "b"]


# ---------------------------------------------------------------- sequences
def _seq():
    values = np.arange(4 * 3 * 2, dtype=np.float32).reshape(4, 3, 2) + 1
    lengths = np.array([3, 1, 0, 2])
    values[np.arange(3)[None, :] >= lengths[:, None]] = 0
    return Sequences(values, lengths, tokens=[["a", "b", "c"], ["d"], [], ["e", "f"]])


def test_sequences_indexing_and_mask():
    s = _seq()
    assert len(s) == 4 and s.shape == (4, 3, 2)
    assert s.mask.tolist()[1] == [True, False, False]
    one = s[3]
    assert one.shape == (1, 2, 2) and one.tokens[0] == ["e", "f"]  # trimmed to its length
    assert s[1:3].lengths.tolist() == [1, 0]
    assert s[np.array([True, False, False, True])].lengths.tolist() == [3, 2]
    assert s[[3, 0]].lengths.tolist() == [2, 3]
    picked = _safe_indexing(s, np.array([2, 0]))  # how scikit-learn's CV splits it
    assert isinstance(picked, Sequences) and picked.lengths.tolist() == [0, 3]
    with pytest.raises(IndexError):
        s[4]
    with pytest.raises(ValueError, match="lengths must lie"):
        Sequences(np.zeros((1, 2, 1)), [3])


def test_masked_pool_values_numpy_and_torch():
    import torch
    s = _seq()
    mean = s.pool("mean")
    np.testing.assert_allclose(mean[0], s.values[0].mean(axis=0))
    np.testing.assert_allclose(mean[1], s.values[1, 0])
    np.testing.assert_array_equal(mean[2], 0)  # empty row -> zeros, not NaN
    mx = s.pool("max")
    np.testing.assert_allclose(mx[3], s.values[3, :2].max(axis=0))
    np.testing.assert_array_equal(mx[2], 0)
    np.testing.assert_allclose(s.pool("sum")[0], s.values[0].sum(axis=0))
    for how in ("mean", "max", "sum"):
        t = masked_pool(torch.from_numpy(s.values), torch.from_numpy(s.mask), how).numpy()
        np.testing.assert_allclose(t, s.pool(how), rtol=1e-6)
    with pytest.raises(ValueError, match="pooling='median'"):
        s.pool("median")


def test_token_ids_container():
    t = TokenIds([[2, 3, 0], [4, 0, 0]], lengths=[2, 1], vocabulary=["<pad>", "<unk>", "a", "b", "c"],
                 vectors=np.ones((5, 3)))
    assert t[1].ids.tolist() == [[4]] and t[1].vectors.shape == (5, 3)
    with pytest.raises(ValueError, match="ids must lie"):
        TokenIds([[9]], [1], ["<pad>", "<unk>"])
    with pytest.raises(ValueError, match="vectors has 2 rows"):
        TokenIds([[1]], [1], ["<pad>", "<unk>", "a"], vectors=np.ones((2, 3)))


# ---------------------------------------------------------------- TF-IDF
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


# ---------------------------------------------------------------- datasets
def test_builtin_datasets(bbc):
    from embedkit.datasets import list_datasets, load_dataset

    assert bbc.shape == (2225, 2)
    assert bbc.label.value_counts().to_dict() == {"sports": 511, "business": 510, "politics": 417,
                                                  "tech": 401, "entertainment": 386}
    trec = load_dataset("trec")
    assert trec.split.value_counts().to_dict() == {"train": 5452, "test": 500}
    assert trec.query("split == 'test'").label.value_counts()["ABBR"] == 9
    assert trec.text[0] == "How did serfdom develop in and then leave Russia ?" and trec.label[0] == "DESC"
    spam = load_dataset("sms-spam")
    assert len(spam) == 4837 and set(spam.label) == {"ham", "spam"}
    assert set(list_datasets().name) >= {"bbc-news", "trec", "sms-spam"}  # + tests/test_datasets.py
    quick = load_dataset("trec", quick=True)
    assert quick.split.value_counts().to_dict() == {"train": 300, "test": 300}
    with pytest.raises(ValueError, match="unknown dataset 'imdb'.*load_texts"):
        load_dataset("imdb")


def test_unknown_resource_lists_known():
    from embedkit.resources import ResourceNotFound, resource_path

    with pytest.raises(ResourceNotFound, match="unknown resource 'glove-xl'.*glove-6b-50d"):
        resource_path("glove-xl")


def test_import_embedkit_is_light():
    import subprocess
    import sys

    code = ("import sys, embedkit; embedkit.TfidfEmbedder; "
            "print(sorted(m for m in ('torch','gensim','transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
