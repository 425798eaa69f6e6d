"""The word-vector store (`embedkit.vectors`): queries, file formats, the shared cache, evaluation."""

from __future__ import annotations

import bz2
import gzip
import os
import pickle

import numpy as np
import pytest
from _float32 import assert_float32_sums_close, mean_terms

from embedkit import GloveEmbedder
from embedkit.vectors import (
    WordVectors,
    evaluate_analogies,
    evaluate_similarity,
    load_word_vectors,
)

#: man : king :: woman : queen holds exactly (king - man + woman == queen)
TOY = {"man": [1, 0, 0], "woman": [0, 1, 0], "king": [1, 0, 1], "queen": [0, 1, 1],
       "apple": [0, 0, -1]}


@pytest.fixture(scope="module")
def toy():
    return WordVectors(list(TOY), np.array(list(TOY.values()), dtype=np.float32))


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


@pytest.fixture(scope="module")
def glove():
    return GloveEmbedder().fit(["the cat sat"])


# -- queries ------------------------------------------------------------------------------------


def test_queries_rank_by_cosine(toy):
    assert toy.similarity("man", "king") == pytest.approx(1 / np.sqrt(2))
    assert toy.similarity("man", "woman") == pytest.approx(0.0)
    near = toy.most_similar("king", topn=4)
    assert [w for w, _ in near] == ["man", "queen", "woman", "apple"]
    np.testing.assert_allclose([s for _, s in near], [1 / np.sqrt(2), 0.5, 0, -1 / np.sqrt(2)],
                               atol=1e-6)
    assert [w for w, _ in toy.most_similar("king", topn=2, exclude=["man"])] == ["queen", "woman"]
    # a vector query keeps the word itself
    assert toy.most_similar(np.array([1, 0, 1]), topn=1)[0] == ("king", pytest.approx(1.0))
    # analogy: cosine of b - a + c (unit vectors) with the answer, inputs excluded
    (word, score), = toy.analogy("man", "king", "woman")
    expected = _unit(_unit(TOY["king"]) - _unit(TOY["man"]) + _unit(TOY["woman"])) @ _unit(TOY["queen"])
    assert word == "queen" and score == pytest.approx(expected, rel=1e-6)


def test_query_errors_name_the_problem(toy):
    with pytest.raises(ValueError, match=r"not in the vocabulary: \['King', 'zz'\]"):
        toy.analogy("King", "queen", "zz")
    with pytest.raises(ValueError, match="query vector has 2 values, the vectors have 3"):
        toy.most_similar(np.ones(2))


def test_lookup_with_and_without_subwords(sentences):
    from gensim.models import FastText
    from gensim.models.fasttext import ft_ngram_hashes

    model = FastText([s.split() for s in sentences], vector_size=8, min_count=1, bucket=1000,
                     epochs=1, seed=0, workers=1)
    kv = model.wv
    wv = WordVectors(list(kv.index_to_key), kv.vectors, subwords=kv)
    words = ["cat", "catt", "garden"]
    plain, found = wv.lookup(words, subwords=False)
    assert found.tolist() == [True, False, True]
    np.testing.assert_array_equal(plain[1], 0)
    np.testing.assert_array_equal(plain[[0, 2]], kv.vectors[[kv.key_to_index["cat"],
                                                             kv.key_to_index["garden"]]])
    sub, found = wv.lookup(words)
    assert found.all()
    # our n-gram mean and gensim's add the same n-gram vectors in different orders
    rows = [kv.vectors_ngrams[ft_ngram_hashes("catt", kv.min_n, kv.max_n, kv.bucket)]]
    terms, scale, _ = mean_terms(rows, kv.vector_size)
    assert_float32_sums_close(sub[1:2], kv.get_vector("catt")[None], terms=terms, scale=scale)
    # n-gram vectors make unseen words queryable
    assert wv.most_similar("catt", topn=3)[0][0] in kv.index_to_key


def test_embedder_queries_lowercase_then_ask_the_store(glove):
    store = glove.word_vectors_
    assert glove.most_similar("France", topn=5, exclude=["Belgium"]) == \
        store.most_similar("france", topn=5, exclude=["belgium"])
    assert glove.analogy("Man", "King", "Woman", topn=2) == store.analogy("man", "king", "woman", topn=2)
    assert glove.similarity("Cat", "DOG") == store.similarity("cat", "dog")
    vecs, _ = glove.lookup(["King"])
    np.testing.assert_array_equal(vecs[0], store.vectors[store.index["king"]])
    cased = GloveEmbedder(lowercase=False).fit(["x"])
    assert cased.word_vectors_ is store  # one matrix per process
    with pytest.raises(ValueError, match=r"not in the vocabulary: \['France'\]"):
        cased.most_similar("France")
    assert not cased.lookup(["France"])[1][0]


# -- loading, sharing, pickling -----------------------------------------------------------------


def test_loaded_store_is_shared_until_the_file_changes(tmp_path, write_glove_text):
    path = write_glove_text(tmp_path / "v.txt", ["a", "b"], np.eye(2))
    first = load_word_vectors(str(path))
    assert load_word_vectors(path) is first and first.source == (str(path.resolve()), "auto")
    # a file-backed store pickles as its source and comes back as the same object
    assert pickle.loads(pickle.dumps(first)) is first
    write_glove_text(path, ["a", "b"], 2 * np.eye(2))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    second = load_word_vectors(path)
    assert second is not first
    np.testing.assert_array_equal(second.vectors, 2 * np.eye(2))
    # an in-memory store pickles its data
    mine = WordVectors(["x", "y"], np.arange(4, dtype=np.float32).reshape(2, 2))
    back = pickle.loads(pickle.dumps(mine))
    assert back.words == ["x", "y"] and back.index == {"x": 0, "y": 1}
    np.testing.assert_array_equal(back.vectors, mine.vectors)


def test_bundled_glove_pickles_by_name(glove):
    store = load_word_vectors("glove-6b-50d")
    assert isinstance(store.vectors, np.memmap) and store.vectors.shape == (400_000, 50)
    assert store is glove.word_vectors_ and store.source == ("glove-6b-50d", "auto")
    blob = pickle.dumps(store)
    assert len(blob) < 1_000 and pickle.loads(blob) is store
    with pytest.raises(ValueError, match="never unpickled"):
        load_word_vectors("glove-6b-50d", "keyedvectors")
    with pytest.raises(ValueError, match="vectors_format='bogus'"):
        load_word_vectors("glove-6b-50d", "bogus")


def test_file_formats_read_the_same_vectors(tmp_path, toy_vectors, write_glove_text):
    _, vec = toy_vectors
    words, vectors = list(vec), np.stack(list(vec.values()))
    from gensim.models import KeyedVectors

    kv = KeyedVectors(2)
    kv.add_vectors(words, vectors)
    kv.save_word2vec_format(str(tmp_path / "w2v.txt"))
    kv.save_word2vec_format(str(tmp_path / "w2v.bin"), binary=True)
    kv.save(str(tmp_path / "mine.kv"))
    paths = [write_glove_text(tmp_path / name, words, vectors, opener)
             for name, opener in (("v.txt.gz", gzip.open), ("v.txt.bz2", bz2.open))]
    paths += [tmp_path / name for name in ("w2v.txt", "w2v.bin", "mine.kv")]
    for path in paths:
        wv = load_word_vectors(path)
        assert wv.words == words and wv.subwords is None, path.name
        np.testing.assert_allclose(wv.vectors, vectors, rtol=1e-6, err_msg=path.name)
    np.save(tmp_path / "m.npy", vectors)
    (tmp_path / "m_vocab.txt").write_text("\n".join(words))
    folder = load_word_vectors(tmp_path / "m.npy")
    assert folder.words == words and isinstance(folder.vectors, np.memmap)
    with pytest.raises(ValueError, match="expected a word2vec '<count> <dim>' header"):
        load_word_vectors(paths[0], "word2vec")
    with pytest.raises(ValueError, match="not a valid fastText .bin file"):
        load_word_vectors(tmp_path / "w2v.bin", "facebook")


@pytest.mark.parametrize("content, line, what", [
    ("a 1.0 2.0\nb 1.0\nc 3.0 4.0\n", 2, "too few values"),
    ("a 1.0 2.0\nb 1.0 2.0 3.0\n", 2, "mismatched dimensions"),
    ("a 1.0 2.0\nb 1.0 2.0\nc 1.0 oops\n", 3, "'oops' is not a finite number"),
    ("2 3\na 1.0 2.0\nb 1.0 2.0\n", 2, "mismatched dimensions"),
    ("3 2\na 1.0 2.0\nb 1.0 2.0\n", 1, "announces 3 words but the file has 2"),
])
def test_bad_vectors_file_names_file_and_line(tmp_path, content, line, what):
    path = tmp_path / "bad.txt"
    path.write_text(content)
    with pytest.raises(ValueError, match=f"bad.txt: line {line}:") as err:
        load_word_vectors(path)
    assert what in str(err.value)


def test_a_repeated_word_keeps_its_first_vector_with_a_warning(tmp_path):
    """Formerly the last line won, silently. Now, as gensim does, the first wins and a warning
    names the file and both lines; text files and .npy folders alike."""
    path = tmp_path / "dup.txt"
    path.write_text("a 1.0 2.0\nb 3.0 4.0\na 5.0 6.0\nc 7.0 8.0\nb 0.0 0.0\n")
    with pytest.warns(UserWarning, match=r"dup.txt: 2 word\(s\) appear more than once, e.g. 'a' on "
                                         r"line 3 \(first on line 1\); kept the first"):
        wv = load_word_vectors(path)
    assert wv.words == ["a", "b", "c"]
    np.testing.assert_array_equal(wv.vectors, [[1, 2], [3, 4], [7, 8]])
    np.save(tmp_path / "m.npy", np.arange(6, dtype=np.float32).reshape(3, 2))
    (tmp_path / "m_vocab.txt").write_text("x\ny\nx\n")
    with pytest.warns(UserWarning, match=r"'x' on line 3 \(first on line 1\)"):
        folder = load_word_vectors(tmp_path / "m.npy")
    assert folder.words == ["x", "y"] and folder.vectors.tolist() == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="1 word\\(s\\) appear more than once, e.g. 'a'"):
        WordVectors(["a", "b", "a"], np.zeros((3, 2)))


@pytest.mark.parametrize("opener, suffix", [(gzip.open, ".gz"), (bz2.open, ".bz2")])
def test_truncated_compressed_file_names_the_file(tmp_path, write_glove_text, opener, suffix):
    words = [f"w{i}" for i in range(3000)]
    vectors = np.random.default_rng(0).normal(size=(3000, 8))
    full = write_glove_text(tmp_path / f"full.txt{suffix}", words, vectors, opener)
    cut = tmp_path / f"cut.txt{suffix}"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    with pytest.raises(ValueError, match=rf"cut.txt\{suffix}: the file is truncated or damaged "
                                         r"\(EOFError"):
        load_word_vectors(cut)


def test_unknown_resource_and_missing_file_errors():
    with pytest.raises(ValueError, match="glove-6b-50d.*pip install"):
        load_word_vectors("glove-840b")
    with pytest.raises(ValueError, match="not a word-vector resource"):
        load_word_vectors("wikitext-2-train")


def test_mismatched_npy_folder_dimensions(tmp_path):
    np.save(tmp_path / "v.npy", np.zeros((3, 4), dtype=np.float32))
    (tmp_path / "v_vocab.txt").write_text("a\nb\n")
    with pytest.raises(ValueError, match="mismatched dimensions"):
        load_word_vectors(tmp_path)
    with pytest.raises(ValueError, match="mismatched dimensions"):
        WordVectors(["a"], np.zeros((2, 3)))


# -- intrinsic evaluation -------------------------------------------------------------------------


def test_intrinsic_evaluation_on_gensim_sets(glove):
    res = evaluate_similarity(glove, "wordsim353")
    assert 0.4 < res["spearman"] < 0.7 and res["oov"] < 0.05
    assert evaluate_similarity(glove.word_vectors_, "wordsim353") == res
    # questions among the 3,000 most frequent words: GloVe 6B-50d answers about two thirds
    res = evaluate_analogies(glove, restrict_vocab=3_000)
    assert 1_000 < res["total"] and 0.6 < res["accuracy"] < 0.75
    assert res["accuracy"] == pytest.approx(res["correct"] / res["total"])
    with pytest.raises(ValueError, match="no fitted word vectors"):
        evaluate_similarity(object())
