"""Embedding cache: keys, hits, disk safety, grid search encoding each document once."""

from __future__ import annotations

import collections
import multiprocessing
import os
import pickle
import shutil
import sqlite3
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

import embedkit.cache
import embedkit.cache._disk
from embedkit import TfidfEmbedder, TransformerEmbedder
from embedkit.cache import DiskCache, MemoryCache, fingerprint, get_cache
from embedkit.representations._neural import NeuralEncoder

DOCS = ["the cat sat on the mat", "a dog barked at night", "stocks fell on monday",
        "rain is expected tomorrow", "", "the cat sat on the mat"]


@pytest.fixture(scope="module")
def minilm():
    return TransformerEmbedder(num_threads=2, max_length=32).fit(["x"])


@pytest.fixture()
def counts():
    NeuralEncoder.forward_counts = c = collections.Counter()
    yield c
    NeuralEncoder.forward_counts = None


def test_key_ignores_neutral_params_and_follows_the_others(minilm):
    key = fingerprint(minilm)
    for neutral in (dict(batch_size=3), dict(device="cpu"), dict(verbose=1), dict(cache="memory"),
                    dict(num_threads=1), dict(max_tokens_per_batch=None)):
        assert fingerprint(clone(minilm).set_params(**neutral).fit(["x"])) == key, neutral
    changed = {fingerprint(clone(minilm).set_params(**p).fit(["x"])) for p in (
        dict(pooling="cls"), dict(normalize=True), dict(max_length=64), dict(layers=[-2]),
        dict(output="sequence"), dict(long_documents="window"))}
    assert len(changed) == 6 and key not in changed
    # the weights are identified by content, not by how the model was named
    by_path = TransformerEmbedder(model=minilm.source_, max_length=32).fit(["x"])
    assert fingerprint(by_path) == key
    # a representation trained on data: the fitted state is part of the key
    a = TfidfEmbedder(n_components=2).fit(DOCS)
    b = TfidfEmbedder(n_components=2).fit(DOCS[::-1][:4])
    assert fingerprint(a) != fingerprint(b)
    assert fingerprint(a) == fingerprint(TfidfEmbedder(n_components=2, cache="memory").fit(DOCS))


def test_memory_cache_encodes_each_document_once(minilm, counts):
    plain = minilm.transform(DOCS)
    counts.clear()
    store = MemoryCache()
    emb = clone(minilm).set_params(cache=store).fit(["x"])
    first = emb.transform(DOCS)
    again = clone(emb).fit(["y"]).transform(DOCS[::-1])  # a clone shares the store
    np.testing.assert_allclose(first, plain, atol=1e-6)
    np.testing.assert_array_equal(again, first[::-1])
    assert set(counts.values()) == {1} and len(counts) == 5  # the duplicate too: once
    assert store.info()["entries"] == 5
    assert get_cache("memory") is get_cache("memory")


def test_disk_cache_survives_pickling_and_detects_corruption(minilm, counts, tmp_path):
    emb = clone(minilm).set_params(cache=str(tmp_path)).fit(["x"])
    first = emb.transform(DOCS)
    back = pickle.loads(pickle.dumps(emb))
    counts.clear()
    np.testing.assert_array_equal(back.transform(DOCS), first)
    assert not counts
    # corrupt one stored vector: it is detected, dropped and recomputed, never returned
    db = sqlite3.connect(tmp_path / "embeddings.sqlite")
    doc_key = db.execute("SELECT doc FROM entries LIMIT 1").fetchone()[0]
    db.execute("UPDATE entries SET value = substr(value, 1, length(value) - 8) || zeroblob(8) "
               "WHERE doc = ?", (doc_key,))
    db.commit()
    db.close()
    np.testing.assert_allclose(emb.transform(DOCS), first, atol=1e-5)
    assert sum(counts.values()) == 1


def test_sequences_are_cached_with_tokens(minilm, counts):
    emb = clone(minilm).set_params(output="sequence", cache=MemoryCache()).fit(["x"])
    direct = clone(emb).set_params(cache=None).fit(["x"]).transform(DOCS)
    emb.transform(DOCS[:3])
    counts.clear()
    mixed = emb.transform(DOCS)
    assert sum(counts.values()) == 2  # only the two documents not seen before
    np.testing.assert_array_equal(mixed.lengths, direct.lengths)
    np.testing.assert_allclose(mixed.values, direct.values, atol=1e-5)
    assert [list(t) for t in mixed.tokens] == [list(t) for t in direct.tokens]


def test_sparse_output_bypasses_the_cache():
    emb = TfidfEmbedder(cache="memory").fit(DOCS)
    out = emb.transform(DOCS)
    assert sp.issparse(out)
    np.testing.assert_array_equal(out.toarray(), TfidfEmbedder().fit(DOCS).transform(DOCS).toarray())
    dense = TfidfEmbedder(n_components=2, cache="memory").fit(DOCS)
    np.testing.assert_allclose(dense.transform(DOCS), dense.set_params(cache=None).transform(DOCS))


def test_disk_cache_is_bounded(tmp_path):
    store = DiskCache(tmp_path, max_bytes=2000)
    for i in range(20):
        store.put_many("rep", {f"d{i}": (np.full(64, i, np.float32), None)})
    info = store.info()
    assert 0 < info["bytes"] <= 2000 and info["entries"] < 20
    kept = store.get_many("rep", [f"d{i}" for i in range(20)])
    assert "d19" in kept and "d0" not in kept  # least recently used go first
    with pytest.raises(ValueError, match="directory"):
        get_cache(str(tmp_path / "embeddings.sqlite"))


def _search(minilm, cache, n_jobs=1, n_heads=4):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import Pipeline

    from embedkit import MLPClassifier

    texts = [f"{w} {topic} number {i}" for i in range(10)
             for w, topic in (("great", "film"), ("awful", "weather"))]
    y = np.array([0, 1] * 10)
    pipe = Pipeline([("features", clone(minilm).set_params(cache=cache)),
                     ("head", LogisticRegression())])
    heads = [LogisticRegression(C=0.1), LogisticRegression(C=10.0),
             MLPClassifier(hidden_layer_sizes=(8,), epochs=2), MLPClassifier(hidden_layer_sizes=(), epochs=2)]
    search = GridSearchCV(pipe, {"head": heads[:n_heads]}, cv=StratifiedKFold(5), n_jobs=n_jobs)
    return search.fit(texts, y), texts


def test_grid_search_encodes_each_document_once(minilm, counts, tmp_path):
    search, texts = _search(minilm, str(tmp_path / "c"))
    assert set(counts) == set(texts)
    assert set(counts.values()) == {1}  # 4 heads x 5 folds + refit: each text through MiniLM once
    assert search.best_score_ > 0.5


def test_grid_search_parallel_workers_share_the_disk_cache(minilm, tmp_path):
    search, texts = _search(minilm, str(tmp_path / "c"), n_jobs=2, n_heads=2)
    store = DiskCache(tmp_path / "c")
    assert store.info()["entries"] == len(texts)
    serial, _ = _search(minilm, str(tmp_path / "c"), n_heads=2)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               serial.cv_results_["mean_test_score"])


# ----------------------------------------------------------------------------------------------
# faults: a bare word, a corrupted database, a read-only cache
# ----------------------------------------------------------------------------------------------

def test_a_bare_word_is_a_typo_not_a_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"TfidfEmbedder\(cache='memroy'\): cache='memroy' is "
                                         r"neither 'memory', "
                                         r"'disk' nor a folder path\. Did you mean 'memory'\? To "
                                         r"use a folder of that name, pass './memroy'"):
        TfidfEmbedder(cache="memroy").fit(DOCS)
    with pytest.raises(ValueError, match="Did you mean 'disk'"):
        get_cache("dsik")
    assert not list(tmp_path.iterdir())  # no folder named after the typo
    for spec in ("./memroy", Path("memroy"), str(tmp_path / "c")):  # path-likes are folders
        assert isinstance(get_cache(spec), DiskCache)
        emb = TfidfEmbedder(n_components=2, cache=spec).fit(DOCS)
        np.testing.assert_allclose(emb.transform(DOCS), emb.set_params(cache=None).transform(DOCS))
    assert (tmp_path / "memroy" / DiskCache.FILENAME).exists()


def _new_process(monkeypatch):
    """What a new process sees: no open stores, no warning given yet."""
    monkeypatch.setattr(embedkit.cache, "_DISKS", {})
    monkeypatch.setattr(embedkit.cache._disk, "_WARNED", set())


def _corrupt(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    start = 0 if how == "header" else 100  # the whole file, or every page after the file header
    noise = np.random.default_rng(0).integers(0, 256, len(data) - start, dtype=np.uint8)
    data[start:] = noise.tobytes()
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["pages", "header"])
def test_corrupted_database_is_moved_aside_and_rebuilt(tmp_path, monkeypatch, how):
    docs = [f"document number {i} about {w}" for i in range(40) for w in ("cats", "stocks")]
    folder = tmp_path / "c"
    emb = TfidfEmbedder(n_components=3, cache=str(folder)).fit(docs)
    expected = emb.transform(docs)
    get_cache(str(folder)).close()
    _corrupt(folder / DiskCache.FILENAME, how)
    _new_process(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = emb.transform(docs)
        emb.transform(docs[:5])  # once: the second transform raises no second warning
    messages = [str(w.message) for w in caught if "embedkit cache" in str(w.message)]
    assert len(messages) == 1, messages
    assert str(folder / DiskCache.FILENAME) in messages[0] and "corrupted" in messages[0]
    np.testing.assert_allclose(got, expected, rtol=1e-6)  # results unaffected
    assert len(list(folder.glob(DiskCache.FILENAME + ".corrupt-*"))) == 1  # moved aside
    assert get_cache(str(folder)).info()["entries"] == len(docs)  # rebuilt
    np.testing.assert_allclose(emb.transform(docs), expected, rtol=1e-6)  # served by it


def test_clear_removes_a_corrupted_cache(tmp_path, monkeypatch):
    folder = tmp_path / "c"
    store = DiskCache(folder)
    store.put_many("rep", {f"d{i}": (np.full(64, i, np.float32), None) for i in range(50)})
    store.close()
    _corrupt(folder / DiskCache.FILENAME, "pages")
    assert DiskCache(folder).clear() == 0  # deleted whole: its entries cannot be counted
    assert not list(folder.glob("*.corrupt-*"))
    fresh = DiskCache(folder)
    assert fresh.info()["entries"] == 0
    fresh.put_many("rep", {"a": (np.ones(2, np.float32), None)})
    assert fresh.clear() == 1
    # through the command line: `embedkit cache clear` leaves no corrupted file behind
    from typer.testing import CliRunner

    from embedkit.cli import app

    fresh.put_many("rep", {"a": (np.ones(2, np.float32), None)})
    fresh.close()
    _corrupt(folder / DiskCache.FILENAME, "header")
    _new_process(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = CliRunner().invoke(app, ["cache", "clear", "--dir", str(folder), "--yes"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in folder.iterdir() if "corrupt" in p.name) == []
    assert DiskCache(folder).info()["entries"] == 0


def _read_only_probe(folder, conn):
    """In a child process: drop root (root ignores file permissions), then use the cache."""
    try:
        if os.geteuid() == 0:
            os.setgid(65534)
            os.setuid(65534)  # nobody
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            store = DiskCache(folder)
            hit = store.get_many("rep", ["a"])["a"][0].tolist()
            store.put_many("rep", {"b": (np.zeros(3, np.float32), None)})
            store.put_many("rep", {"c": (np.zeros(3, np.float32), None)})
            again = sorted(store.get_many("rep", ["a", "b", "c"]))
        conn.send((hit, again, store.readonly, [str(w.message) for w in caught]))
    except BaseException as err:  # noqa: BLE001 - report it, never leave the parent waiting
        conn.send(repr(err))


def test_read_only_cache_serves_hits_and_skips_writes():
    """A cache folder the process may not write to (permissions): hits are served, nothing new
    is stored, one warning. Root ignores permissions, so the probe runs as `nobody` then."""
    folder = Path(tempfile.mkdtemp(prefix="embedkit-ro-"))  # under /tmp: reachable by any user
    try:
        store = DiskCache(folder)
        store.put_many("rep", {"a": (np.arange(3, dtype=np.float32), None)})
        store.close()
        for path in folder.iterdir():
            path.chmod(0o444)
        folder.chmod(0o555)
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_read_only_probe, args=(folder, child))
        proc.start()
        assert parent.poll(120), "the probe did not answer"
        result = parent.recv()
        proc.join(30)
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)
    assert not isinstance(result, str), result
    hit, again, readonly, messages = result
    assert hit == [0.0, 1.0, 2.0] and again == ["a"] and readonly
    assert len(messages) == 1 and "is read-only" in messages[0] and str(folder) in messages[0]
