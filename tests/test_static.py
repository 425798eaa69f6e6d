"""`StaticEmbedder` (embedkit/representations/static.py), the representation behind Word2Vec,
FastText and GloVe: pooling values, OOV policies, sequence and id outputs, word queries and the
shared bundled store, checked through GloveEmbedder; values, not shapes. Each embedder's own
training is in `test_word2vec.py`, `test_fasttext.py` and `test_glove.py`."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from _float32 import assert_float32_sums_close, mean_terms
from sklearn.base import clone

from embedkit import GloveEmbedder
from embedkit.sequences import Sequences, TokenIds
from embedkit.storage.resources import resource_path

DOCS = [
    "The cat sat on the mat.",
    "A dog chased the cat across the garden!",
    "Stocks fell sharply as markets reacted to the news.",
    "",
    "qqqzzx wwvvxx",
]


@pytest.fixture(scope="session")
def glove_raw():
    """The bundled GloVe read independently of embedkit (numpy + pyarrow)."""
    import pyarrow.parquet as pq

    folder = resource_path("glove-6b-50d")
    vectors = np.load(folder / "glove_6B_50d_emb.npy", mmap_mode="r")
    words = pq.read_table(folder / "glove_6B_index.parquet").column(0).to_pylist()
    return dict(zip(words, range(len(words)), strict=True)), vectors


@pytest.fixture(scope="session")
def glove():
    return GloveEmbedder().fit(DOCS)


# -- pooling values -------------------------------------------------------------------------


def test_mean_sum_max_pooling_match_numpy_reference(glove, glove_raw):
    index, vectors = glove_raw
    doc = DOCS[1]
    toks = glove.tokenizer_(doc)
    rows = np.stack([vectors[index[t]] for t in toks])
    # mean and sum: a sparse product and numpy add the rows in different orders, so they agree
    # up to the float32 rounding of n - 1 additions (plus the division for the mean) of rows
    # of this size; max selects, with no rounding
    n, size = len(rows), np.abs(rows.astype(np.float64)).mean(0)
    bounds = {"mean": {"terms": n + 1, "scale": size}, "sum": {"terms": n - 1, "scale": n * size}}
    for pooling, ref in (("mean", rows.mean(0)), ("sum", rows.sum(0)), ("max", rows.max(0))):
        out = clone(glove).set_params(pooling=pooling).fit(DOCS).transform([doc])[0]
        if pooling == "max":
            np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6, err_msg=pooling)
        else:
            assert_float32_sums_close(out, ref, **bounds[pooling], err_msg=pooling)


def test_tfidf_pooling_weights_on_toy_case(toy_vectors):
    path, vec = toy_vectors
    fit_docs = ["a b", "a c", "a"]
    emb = GloveEmbedder(vectors=str(path), pooling="tfidf").fit(fit_docs)
    n = 3
    idf = {w: np.log((1 + n) / (1 + df)) + 1 for w, df in {"a": 3, "b": 1, "c": 1}.items()}
    idf_unseen = np.log(1 + n) + 1  # "d" was never seen at fit
    out = emb.transform(["a a b d"])[0]
    weights = [idf["a"], idf["a"], idf["b"], idf_unseen]
    ref = (weights[0] * vec["a"] * 2 + weights[2] * vec["b"] + weights[3] * vec["d"]) / sum(weights)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_sif_weights_and_component_removal(toy_vectors):
    path, vec = toy_vectors
    fit_docs = ["a a a b", "a c", "b c"]
    a = 0.1
    emb = GloveEmbedder(vectors=str(path), pooling="sif", sif_a=a, sif_remove_pc=False).fit(fit_docs)
    p = {"a": 4 / 8, "b": 2 / 8, "c": 2 / 8}
    w = {k: a / (a + v) for k, v in p.items()}
    out = emb.transform(["a b d"])[0]
    ref = (w["a"] * vec["a"] + w["b"] * vec["b"] + 1.0 * vec["d"]) / 3  # unseen word: p = 0
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    # with removal: first right singular vector of the fit documents' SIF vectors is projected out
    full = GloveEmbedder(vectors=str(path), pooling="sif", sif_a=a).fit(fit_docs)
    raw = emb.transform(fit_docs)
    u = np.linalg.svd(raw.astype(np.float64))[2][0]
    np.testing.assert_allclose(np.abs(full.sif_component_), np.abs(u), rtol=1e-5)
    removed = full.transform(["a b d"])[0]
    np.testing.assert_allclose(removed, ref - (ref @ u) * u, rtol=1e-4, atol=1e-6)


def test_oov_policies_and_rates(toy_vectors):
    path, vec = toy_vectors
    fit_docs = ["a a b", "c zz"]
    doc = ["a zz yy"]
    skip = GloveEmbedder(vectors=str(path), oov="skip").fit(fit_docs)
    assert skip.oov_rate_fit_ == pytest.approx(1 / 5)
    np.testing.assert_allclose(skip.transform(doc)[0], vec["a"])
    assert skip.oov_rate_ == pytest.approx(2 / 3)
    zero = GloveEmbedder(vectors=str(path), oov="zero").fit(fit_docs)
    np.testing.assert_allclose(zero.transform(doc)[0], vec["a"] / 3, rtol=1e-6)
    unk = GloveEmbedder(vectors=str(path), oov="unk").fit(fit_docs)
    expected_unk = (2 * vec["a"] + vec["b"] + vec["c"]) / 4  # frequency-weighted mean at fit
    np.testing.assert_allclose(unk.unk_vector_, expected_unk, rtol=1e-6)
    np.testing.assert_allclose(unk.transform(doc)[0], (vec["a"] + 2 * expected_unk) / 3, rtol=1e-6)
    with pytest.raises(ValueError, match="subword"):
        GloveEmbedder(vectors=str(path), oov="subword").fit(fit_docs)
    with pytest.raises(ValueError, match="oov='nope'"):
        GloveEmbedder(vectors=str(path), oov="nope").fit(fit_docs)


@pytest.mark.parametrize("pooling", ["mean", "sum", "max", "tfidf", "sif"])
@pytest.mark.parametrize("oov", ["skip", "zero", "unk"])
def test_empty_and_unknown_documents_are_finite_zero(glove, pooling, oov):
    emb = clone(glove).set_params(pooling=pooling, oov=oov).fit(DOCS)
    out = emb.transform(["", "qqqzzx", "the cat"])
    assert np.isfinite(out).all()
    np.testing.assert_array_equal(out[0], 0)
    if oov == "skip":
        np.testing.assert_array_equal(out[1], 0)
    assert np.abs(out[2]).sum() > 0


# -- sequence and ids outputs -----------------------------------------------------------------


def test_sequence_output_consistent_with_pooled(glove):
    pooled = glove.transform(DOCS)
    seq = clone(glove).set_params(output="sequence", oov="skip").fit(DOCS).transform(DOCS)
    assert isinstance(seq, Sequences)
    # numpy's masked mean and the sparse product add the word vectors in different orders
    terms, scale, _ = mean_terms([v[:n] for v, n in zip(seq.values, seq.lengths, strict=True)],
                                 seq.dim)
    assert_float32_sums_close(seq.pool("mean"), pooled, terms=terms, scale=scale)
    assert seq.tokens[0] == ["the", "cat", "sat", "on", "the", "mat", "."]
    assert seq.lengths.tolist() == [7, 9, 10, 0, 0]  # unknown words skipped
    # the default (oov="auto") keeps them in sequences, as the shared unknown vector
    kept = clone(glove).set_params(output="sequence").fit(DOCS).transform(DOCS)
    assert kept.lengths.tolist() == [7, 9, 10, 0, 2]
    short = clone(glove).set_params(output="sequence", max_length=3).fit(DOCS).transform(DOCS)
    assert short.lengths.tolist() == [3, 3, 3, 0, 2]
    np.testing.assert_allclose(short.values[:3], seq.values[:3, :3])


def test_ids_output_restricted_vocabulary_and_vectors(glove, glove_raw):
    index, vectors = glove_raw
    emb = clone(glove).set_params(output="ids", oov="zero").fit(DOCS)
    ids = emb.transform(DOCS + ["the elephant cat"])
    assert isinstance(ids, TokenIds)
    vocab = ids.vocabulary
    assert vocab[:2] == ["<pad>", "<unk>"] and vocab[2] == "the"  # most frequent first
    assert "elephant" not in vocab and "qqqzzx" not in vocab
    assert ids.vectors.shape == (len(vocab), 50)
    np.testing.assert_array_equal(ids.vectors[:2], 0)
    for i, w in enumerate(vocab[2:], start=2):
        np.testing.assert_array_equal(ids.vectors[i], vectors[index[w]])
    # unseen-at-fit word -> <unk>; unknown words -> <unk> under oov="zero"
    assert ids.ids[5, :3].tolist() == [vocab.index("the"), 1, vocab.index("cat")]
    assert ids.ids[4, :2].tolist() == [1, 1]
    # embedding the ids and averaging reproduces pooled output on the fit documents
    pooled = clone(glove).set_params(oov="zero").fit(DOCS).transform(DOCS)
    emb_vals = ids.vectors[ids.ids[:5]] * ids.mask[:5, :, None]
    means = emb_vals.sum(1) / np.maximum(ids.lengths[:5, None], 1)
    # numpy's sum and the sparse product add the word vectors in different orders
    terms, scale, _ = mean_terms([v[:n] for v, n in zip(emb_vals, ids.lengths[:5], strict=True)],
                                 emb_vals.shape[2])
    assert_float32_sums_close(means, pooled, terms=terms, scale=scale)


def test_lookup_contract(glove, glove_raw):
    index, vectors = glove_raw
    vecs, found = glove.lookup(["King", "qqqzzx", "queen"])
    assert vecs.dtype == np.float32 and found.tolist() == [True, False, True]
    np.testing.assert_array_equal(vecs[0], vectors[index["king"]])
    np.testing.assert_array_equal(vecs[1], 0)


# -- bundled GloVe: sharing, pickling, utilities -------------------------------------------------


def test_bundled_glove_is_memory_mapped_shared_and_pickles_by_name(glove):
    assert isinstance(glove.word_vectors_.vectors, np.memmap)
    other = clone(glove).fit(["another corpus"])
    assert other.word_vectors_ is glove.word_vectors_  # one matrix per process
    blob = pickle.dumps(glove)
    assert len(blob) < 200_000  # the 80 MB matrix is referenced by name, not embedded
    back = pickle.loads(blob)
    assert back.word_vectors_ is glove.word_vectors_
    np.testing.assert_array_equal(back.transform(DOCS), glove.transform(DOCS))


def test_analogy_ranks_queen_first_and_similarity(glove):
    best = glove.analogy("man", "king", "woman", topn=3)
    assert best[0][0] == "queen"
    assert glove.similarity("cat", "dog") > glove.similarity("cat", "stock")
    near = [w for w, _ in glove.most_similar("france", topn=10, exclude=["belgium"])]
    assert "france" not in near and "belgium" not in near and "spain" in near
    vec, _ = glove.lookup(["paris"])
    assert glove.most_similar(vec[0], topn=1)[0][0] == "paris"

