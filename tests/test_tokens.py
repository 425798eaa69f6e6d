"""TokenIndexer: vocabulary, ids, truncation, pretrained alignment, and a DAN trained on ids."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pytest
from sklearn.model_selection import train_test_split

from embedkit import (
    GloveEmbedder,
    MLPClassifier,
    TfidfEmbedder,
    TokenIds,
    TokenIndexer,
    Word2VecEmbedder,
    load_dataset,
)
from embedkit.data.documents import Tokenizer


@pytest.fixture(scope="module")
def bbc():
    df = load_dataset("bbc-news", quick=False)
    sample = df.groupby("label", sort=True).head(120)  # 600 articles, 120 per topic
    return sample.text.tolist(), sample.label.to_numpy()


def _word2vec(min_count=3):
    """A real static embedder: Word2Vec trained (seeded, one worker) on the documents."""
    return Word2VecEmbedder(vector_size=16, min_count=min_count, epochs=2, random_state=0, workers=1)


def test_vocabulary_reserves_pad_and_unk_and_orders_by_frequency():
    idx = TokenIndexer().fit(["b a a", "c a b", "D"])
    assert idx.vocabulary_ == ["<pad>", "<unk>", "a", "b", "c", "d"]
    assert idx.vocab_size_ == 6 and idx.dim_ == 0 and idx.vectors_ is None and idx.coverage_ is None


def test_unknown_tokens_map_to_unk_and_padding_to_zero():
    idx = TokenIndexer().fit(["the cat sat", "the dog"])
    out = idx.transform(["The BIRD sat", "dog", "unseen words only"])
    assert isinstance(out, TokenIds) and out.vocabulary[:2] == ["<pad>", "<unk>"]
    words = idx.vocabulary_
    assert out.ids.tolist() == [[2, 1, words.index("sat")], [words.index("dog"), 0, 0], [1, 1, 1]]
    assert out.lengths.tolist() == [3, 1, 3]
    assert out.mask.tolist() == [[True] * 3, [True, False, False], [True] * 3]
    assert list(out.tokens[0]) == ["the", "bird", "sat"]


def test_ids_match_a_plain_dictionary_lookup_on_real_text(bbc):
    docs = bbc[0][:100]
    idx = TokenIndexer(min_count=2).fit(docs[:50])
    out = idx.transform(docs[50:])
    index = {w: i for i, w in enumerate(idx.vocabulary_)}
    for row, words in enumerate(Tokenizer().tokenize_all(docs[50:])):
        expected = [index.get(w, 1) for w in words]
        assert out.ids[row, : out.lengths[row]].tolist() == expected
        assert not out.ids[row, out.lengths[row]:].any()


def test_lowercase_false_keeps_case():
    idx = TokenIndexer(lowercase=False).fit(["Cat cat"])
    assert set(idx.vocabulary_[2:]) == {"Cat", "cat"}
    assert idx.transform(["CAT"]).ids.tolist() == [[1]]


def test_max_length_truncates_and_lengths_follow():
    idx = TokenIndexer(max_length=3).fit(["a b c d e", "a b"])
    out = idx.transform(["a b c d e", "e d", ""])
    assert out.shape == (3, 3)
    assert out.lengths.tolist() == [3, 2, 0]
    assert [list(t) for t in out.tokens] == [["a", "b", "c"], ["e", "d"], []]


def test_empty_documents_give_empty_rows():
    idx = TokenIndexer().fit(["", "a b", ""])
    out = idx.transform(["", ""])
    assert out.shape == (2, 1) and out.lengths.tolist() == [0, 0] and not out.ids.any()
    assert not out.mask.any()


def test_min_count_and_max_vocab_limit_the_vocabulary():
    docs = ["a a a b b c", "a b d"]
    assert TokenIndexer(min_count=2).fit(docs).vocabulary_[2:] == ["a", "b"]
    assert TokenIndexer(max_vocab=1).fit(docs).vocabulary_[2:] == ["a"]


def test_empty_vocabulary_after_min_count_is_a_clear_error():
    with pytest.raises(ValueError, match=r"min_count=5\) kept no words.*seen 2 time"):
        TokenIndexer(min_count=5).fit(["a b", "a c"])
    with pytest.raises(ValueError, match="kept no words"):
        TokenIndexer().fit(["", " "])


@pytest.mark.parametrize("params, match", [(dict(min_count=0), "min_count=0"),
                                           (dict(max_vocab=0), "max_vocab=0"),
                                           (dict(max_length=-1), "max_length=-1"),
                                           (dict(pretrained="glove-6b-500d"), "Did you mean 'glove-6b-50d'"),
                                           (dict(pretrained=7), "pretrained=7"),
                                           (dict(output="pooled"), "output='pooled'")])
def test_bad_params_name_the_parameter(params, match):
    with pytest.raises(ValueError, match=match):
        TokenIndexer(**params).fit(["a b", "b c"])


def test_pretrained_without_lookup_is_refused():
    with pytest.raises(ValueError, match="TfidfEmbedder has no lookup"):
        TokenIndexer(pretrained=TfidfEmbedder()).fit(["a b", "b c"])


def test_alignment_to_pretrained_vectors_and_coverage(bbc):
    docs = bbc[0][:100]
    stand_in = _word2vec(min_count=3)
    idx = TokenIndexer(pretrained=stand_in).fit(docs)
    assert not hasattr(stand_in, "dim_")  # a clone was fitted, not the given estimator
    counts = Counter(w for words in Tokenizer().tokenize_all(docs) for w in words)
    words = idx.vocabulary_[2:]
    expected_found = np.array([counts[w] >= 3 for w in words])
    assert idx.coverage_ == pytest.approx(expected_found.mean())
    assert 0.2 < idx.coverage_ < 0.6
    reference = _word2vec(min_count=3).fit(docs)
    found_words = [w for w, f in zip(words, expected_found, strict=True) if f]
    rows = [idx.vocabulary_.index(w) for w in found_words]
    np.testing.assert_array_equal(idx.vectors_[rows], reference.lookup(found_words)[0])
    assert idx.vectors_.shape == (idx.vocab_size_, 16) and idx.dim_ == 16
    assert not idx.vectors_[:2].any()  # <pad>, <unk>
    missing = idx.vectors_[2:][~expected_found]
    assert np.all(np.linalg.norm(missing, axis=1) > 0)  # seeded random, not zeros
    assert missing.std() == pytest.approx(idx.vectors_[rows].std(), rel=0.2)
    again = TokenIndexer(pretrained=_word2vec(min_count=3)).fit(docs)
    np.testing.assert_array_equal(again.vectors_, idx.vectors_)
    out = idx.transform(docs[:3])
    np.testing.assert_array_equal(out.vectors, idx.vectors_)


def test_pickle_round_trip_gives_identical_output(bbc):
    idx = TokenIndexer(min_count=2, max_length=50).fit(bbc[0][:40])
    loaded = pickle.loads(pickle.dumps(idx))
    a, b = idx.transform(bbc[0][40:50]), loaded.transform(bbc[0][40:50])
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.lengths, b.lengths)


def test_dan_learns_its_embedding_from_token_ids(bbc):
    """End to end: TokenIndexer ids -> MLPClassifier (a Deep Averaging Network) on BBC News."""
    docs, labels = bbc
    Xtr, Xte, ytr, yte = train_test_split(docs, labels, test_size=0.2, stratify=labels,
                                          random_state=0)
    idx = TokenIndexer(min_count=2, max_length=200)
    head = MLPClassifier(embedding_dim=32, hidden_layer_sizes=(32,), epochs=6, lr=1e-2,
                         early_stopping=False, random_state=0)
    head.fit(idx.fit_transform(Xtr), ytr)
    accuracy = (head.predict(idx.transform(Xte)) == yte).mean()
    assert accuracy > 0.8  # measured 0.875; chance is 0.2


def test_frozen_head_embedding_keeps_the_aligned_vectors(bbc):
    docs, labels = bbc[0][::6], bbc[1][::6]  # 100 articles from all five topics
    idx = TokenIndexer(pretrained=_word2vec(min_count=3))
    ids = idx.fit_transform(docs)
    head = MLPClassifier(freeze=True, hidden_layer_sizes=(), epochs=2, early_stopping=False)
    head.fit(ids, labels)
    weight = head.net_.module_.sequence.embedding.weight.detach().numpy()
    np.testing.assert_array_equal(weight, idx.vectors_)


def test_fine_tuning_the_head_leaves_the_indexer_vectors_alone(bbc):
    docs, labels = bbc[0][::6], bbc[1][::6]
    idx = TokenIndexer(pretrained=_word2vec(min_count=3))
    ids = idx.fit_transform(docs)
    before = idx.vectors_.copy()
    head = MLPClassifier(freeze=False, hidden_layer_sizes=(), epochs=2, lr=0.05,
                         early_stopping=False).fit(ids, labels)
    tuned = head.net_.module_.sequence.embedding.weight.detach().numpy()
    assert not np.allclose(tuned, before)  # the head fine-tuned its copy
    np.testing.assert_array_equal(idx.vectors_, before)
    np.testing.assert_array_equal(ids.vectors, before)


def test_alignment_to_the_bundled_glove(bbc):
    docs = bbc[0][:60]
    idx = TokenIndexer(pretrained="glove-6b-50d").fit(docs)
    assert idx.dim_ == 50 and idx.coverage_ > 0.9  # news English is almost all in GloVe's 400k
    glove = GloveEmbedder().fit(docs)
    rows = [idx.vocabulary_.index(w) for w in ("the", "government", "market")]
    np.testing.assert_array_equal(idx.vectors_[rows], glove.lookup(["the", "government", "market"])[0])
