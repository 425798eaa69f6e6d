"""The ONNX Runtime backend of TransformerEmbedder, on the real packaged all-MiniLM-L6-v2."""

from __future__ import annotations

import json
import os
import pickle
import shutil

import numpy as np
import pytest
from sklearn.base import clone

from embedkit import TransformerEmbedder
from embedkit.representations import _onnx

pytest.importorskip("onnxruntime", reason="the ONNX backend needs the onnx extra")

DOCS = ["A man is playing a guitar.", "", "Cats sleep most of the day, and dogs bark at night.",
        "¿Dónde está la biblioteca?", "ok"]


def cos_rows(a, b):
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


@pytest.fixture(scope="session")
def pair():
    """The same settings on both backends (the export is cached in the embedkit home)."""
    onnx = TransformerEmbedder(backend="onnx").fit(["x"])
    torch = TransformerEmbedder(backend="torch").fit(["x"])
    return onnx, torch


@pytest.fixture(scope="session")
def long_text():
    return " ".join(["the quick brown fox jumps over the lazy dog and keeps running"] * 34)


def test_auto_takes_onnx_on_cpu_and_torch_elsewhere(pair):
    onnx, torch = pair
    assert onnx.backend_ == "onnx" and torch.backend_ == "torch"
    assert TransformerEmbedder().fit(["x"]).backend_ == "onnx"
    assert _onnx.resolve_backend("auto", "cpu", "bfloat16") == "torch"
    assert _onnx.resolve_backend("auto", "cuda", "float32") == "torch"


def test_pooled_vectors_match_torch_with_padding_and_windows(pair, long_text):
    onnx, torch = pair
    docs = DOCS + [long_text]
    got, want = onnx.transform(docs), torch.transform(docs)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert cos_rows(got, want).min() >= 0.9999
    np.testing.assert_allclose(got, want, atol=1e-4)
    # padding never changes an ONNX vector: one by one gives the batched rows
    alone = np.vstack([onnx.transform([d]) for d in docs[:3]])
    np.testing.assert_allclose(alone, got[:3], atol=2e-5)
    for params in ({"long_documents": "window", "max_length": 64, "stride": 8},
                   {"pooling": "max"}, {"pooling": "cls", "normalize": True}):
        a = clone(onnx).set_params(**params).fit(["x"]).transform(docs)
        b = clone(torch).set_params(**params).fit(["x"]).transform(docs)
        assert cos_rows(a, b).min() >= 0.9999, params


def test_sequence_output_matches_torch(pair, long_text):
    onnx, torch = pair
    params = {"output": "sequence", "long_documents": "window", "max_length": 48, "stride": 8}
    a = clone(onnx).set_params(**params).fit(["x"]).transform(DOCS + [long_text])
    b = clone(torch).set_params(**params).fit(["x"]).transform(DOCS + [long_text])
    assert [list(t) for t in a.tokens] == [list(t) for t in b.tokens]
    assert (a.lengths == b.lengths).all()
    mask = a.mask
    assert cos_rows(a.values[mask], b.values[mask]).min() >= 0.9999
    assert (a.values[~mask] == 0).all()  # padding rows stay zero
    words = clone(onnx).set_params(output="sequence", word_pooling="mean").fit(["x"])
    w = words.transform(DOCS[:1])
    assert list(w.tokens[0]) == ["A", "man", "is", "playing", "a", "guitar", "."]


def test_layers_are_averaged_inside_the_exported_graph(pair):
    onnx, torch = pair
    a = clone(onnx).set_params(layers=[0, 3, -1]).fit(["x"])
    b = clone(torch).set_params(layers=[0, 3, -1]).fit(["x"])
    assert a.backend_ == "onnx"
    va, vb = a.transform(DOCS), b.transform(DOCS)
    assert cos_rows(va, vb).min() >= 0.9999
    assert cos_rows(va, onnx.transform(DOCS)).max() < 0.99  # not the last layer
    # the embedding layer alone: its graph has no attention_mask input (the exporter drops it)
    a = clone(onnx).set_params(layers=[0]).fit(["x"])
    b = clone(torch).set_params(layers=[0]).fit(["x"])
    assert a.backend_ == "onnx" and cos_rows(a.transform(DOCS), b.transform(DOCS)).min() >= 0.9999


def test_export_is_reused_and_a_corrupt_file_is_rebuilt(pair, tmp_path, monkeypatch):
    onnx, _ = pair
    exported = onnx._runner.path.parent
    home = tmp_path / "home"
    shutil.copytree(exported, home / "onnx" / exported.name)  # a cache that already holds it
    monkeypatch.setenv("EMBEDKIT_HOME", str(home))
    calls = []
    real = _onnx._export
    monkeypatch.setattr(_onnx, "_export", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = clone(onnx).fit(["x"])
    assert calls == [] and first._runner.path.parent == home / "onnx" / exported.name
    expected = first.transform(DOCS)
    graph = first._runner.path
    data = bytearray(graph.read_bytes())
    data[len(data) // 2: len(data) // 2 + 64] = b"\0" * 64  # silent damage in the weights
    graph.write_bytes(bytes(data))
    _onnx._open_session.cache_clear()
    with pytest.warns(RuntimeWarning, match="corrupt"):
        again = clone(onnx).fit(["x"])
    assert calls == [1]
    np.testing.assert_allclose(again.transform(DOCS), expected, atol=1e-5)
    manifest = json.loads((graph.parent / "manifest.json").read_text())
    assert manifest["fused"] and manifest["cosine"] >= _onnx.FUSED_MIN_COSINE
    truncated = graph.read_bytes()[:1000]  # a partial file (a killed copy)
    graph.write_bytes(truncated)
    with pytest.warns(RuntimeWarning, match="corrupt"):
        clone(onnx).fit(["x"])
    assert calls == [1, 1] and graph.stat().st_size == manifest["size"]
    # no temporary or stale folder is left behind
    assert sorted(p.name for p in (home / "onnx").iterdir()) == [exported.name]


def test_backend_errors_are_clear(monkeypatch):
    with pytest.raises(ValueError, match=r"backend='gpu'\): backend must be one of 'auto', 'onnx', 'torch'"):
        TransformerEmbedder(backend="gpu").fit(["x"])
    with pytest.raises(ValueError, match="int8 runs on ONNX Runtime only"):
        TransformerEmbedder(dtype="int8", backend="torch").fit(["x"])
    with pytest.raises(ValueError, match="bfloat16"):
        TransformerEmbedder(dtype="bfloat16", backend="onnx").fit(["x"])
    with pytest.raises(ValueError, match="device='cpu'"):
        _onnx.resolve_backend("onnx", "cuda", "float32")
    # what needs the resolved device stays here: device="auto" may turn out to be a GPU
    with pytest.raises(ValueError, match=r"dtype='int8', device='cuda:1'\): int8 runs .* CPU only"):
        _onnx.resolve_backend("auto", "cuda:1", "int8")
    assert _onnx.resolve_backend("auto", "cpu", "int8") == "onnx"
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    with pytest.raises(ImportError, match=r"pip install 'embedkit\[onnx\]'"):
        TransformerEmbedder(backend="onnx").fit(["x"])
    assert TransformerEmbedder().fit(["x"]).backend_ == "torch"  # auto without onnxruntime


def test_a_failed_export_falls_back_under_auto_only(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDKIT_HOME", str(tmp_path))

    def broken(*args, **kwargs):
        raise RuntimeError("simulated exporter failure")

    monkeypatch.setattr(_onnx, "_export", broken)
    with pytest.warns(RuntimeWarning, match="simulated exporter failure.*backend='torch'"):
        auto = TransformerEmbedder().fit(["x"])
    assert auto.backend_ == "torch" and auto.transform(["hi"]).shape == (1, 384)
    with pytest.raises(RuntimeError, match="exporting .* failed .*simulated.*backend='torch'"):
        TransformerEmbedder(backend="onnx").fit(["x"])
    assert [p.name for p in (tmp_path / "onnx").iterdir()] == []  # no half-built folder


def test_pickle_and_clone_never_carry_the_session(pair):
    onnx, _ = pair
    blob = pickle.dumps(onnx)
    assert len(blob) < 50_000
    back = pickle.loads(blob)
    assert getattr(back, "_runner", None) is None and back.backend_ == "onnx"
    np.testing.assert_array_equal(back.transform(DOCS), onnx.transform(DOCS))
    assert type(back._runner).__name__ == "EncoderRunner"
    runner = pickle.loads(pickle.dumps(onnx._runner))
    assert runner.path == onnx._runner.path
    fresh = clone(onnx)
    assert not hasattr(fresh, "_runner") and not hasattr(fresh, "backend_")


def test_sessions_are_shared_and_the_most_recent_kept(pair):
    onnx, _ = pair
    path = onnx._runner.path
    _onnx._open_session.cache_clear()
    first = _onnx._session(path, 1)
    assert _onnx._session(path, 1) is first  # shared by every runner of the process
    assert _onnx._session(path, 2) is not first  # another thread count, another session
    for threads in range(3, 3 + _onnx._SESSIONS_KEEP):
        _onnx._session(path, threads)
    assert _onnx._open_session.cache_info().currsize == _onnx._SESSIONS_KEEP
    assert _onnx._session(path, 1) is not first  # the least recently used was closed
    last = _onnx._session(path, 2 + _onnx._SESSIONS_KEEP)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1000))  # as a rebuilt file
    try:
        assert _onnx._session(path, 2 + _onnx._SESSIONS_KEEP) is not last  # opened anew
    finally:
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_runner_exports_a_loaded_encoder_by_content():
    """The fine-tuning head's path: an encoder module in memory (e.g. trained), not a folder."""
    import torch

    from embedkit.storage.resources import load_transformer

    _, encoder, _ = load_transformer("all-minilm-l6-v2")
    before = encoder.config._attn_implementation
    run = _onnx.encoder_runner(encoder)
    assert encoder.config._attn_implementation == before  # exported from a copy
    manifest = json.loads((run.path.parent / "manifest.json").read_text())
    assert manifest["settings"]["identity"] == _onnx.module_identity(encoder)
    assert manifest["settings"]["identity"].startswith("module-sha256:")
    ids = torch.tensor([[101, 7592, 2088, 102, 0], [101, 2748, 102, 0, 0]])
    mask = (ids > 0).long()
    with torch.inference_mode():
        want = encoder(input_ids=ids, attention_mask=mask).last_hidden_state.numpy()
    got = run(ids.numpy(), mask.numpy())
    keep = mask.numpy().astype(bool)
    assert got.dtype == np.float32 and cos_rows(got[keep], want[keep]).min() >= 0.9999
    with torch.no_grad():
        encoder.embeddings.word_embeddings.weight[0, 0] += 1.0  # other weights, other export
    assert _onnx.module_identity(encoder) != manifest["settings"]["identity"]


def test_int8_is_opt_in_and_close(pair):
    onnx, _ = pair
    q = clone(onnx).set_params(dtype="int8", backend="auto").fit(["x"])
    assert q.backend_ == "onnx" and q._runner.path != onnx._runner.path
    got, ref = q.transform(DOCS), onnx.transform(DOCS)
    assert got.dtype == np.float32 and np.isfinite(got).all()
    assert 0.95 < cos_rows(got, ref).min() < 0.99999  # quantized: close, not equal
