"""DistilledEmbedder: static token vectors distilled from the packaged MiniLM (model2vec method).

The default distils MiniLM's whole vocabulary (minutes on 2 cores, once per machine);
these tests distil its first 2,100 token ids (1,101 tokens after BERT's placeholder and
special tokens: single characters and the ~100 most frequent words), into a cache folder of
their own, so a run starts cold and the cache behaviour is observable.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import numpy as np
import pytest
from _float32 import assert_float32_sums_close, mean_terms

import embedkit
from embedkit import DistilledEmbedder, TransformerEmbedder
from embedkit.representations import distilled

SMALL = {"max_vocabulary": 2100, "pca_dims": 32}
DOCS = ["the cat sat on the mat", "he was in the house and it was his", "", "   ",
        "😀🎉", "zzqx xylophonist", "of " * 700, "The AND he"]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A cache folder of this module's own, set for every test of the module."""
    folder = tmp_path_factory.mktemp("embedkit-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EMBEDKIT_HOME", str(folder))
        yield folder


@pytest.fixture(scope="module")
def calls(home):
    """Counts of the two costly steps (the encoder pass, PCA + weighting) while the module runs."""
    counts = {"raw": 0, "finish": 0}
    raw, finish = DistilledEmbedder._raw, DistilledEmbedder._finish

    def counted_raw(self, *args):
        counts["raw"] += 1
        return raw(self, *args)

    def counted_finish(self, *args):
        counts["finish"] += 1
        return finish(self, *args)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DistilledEmbedder, "_raw", counted_raw)
        mp.setattr(DistilledEmbedder, "_finish", counted_finish)
        yield counts


@pytest.fixture(scope="module")
def small(calls):
    return DistilledEmbedder(**SMALL).fit([])


def test_defaults_are_the_full_recipe():
    """What users get: the whole vocabulary, PCA to 256, SIF 1e-4, normalised, model2vec's
    512-token cap."""
    params = DistilledEmbedder().get_params()
    assert params["max_vocabulary"] is None and params["pca_dims"] == 256
    assert params["sif_coefficient"] == 1e-4 and params["normalize"] is True
    assert params["max_length"] == 512 and params["model"] == "all-minilm-l6-v2"


def test_vectors_are_finite_unit_or_zero(small):
    X = small.transform(DOCS)
    assert X.dtype == np.float32 and X.shape == (len(DOCS), 32) and np.isfinite(X).all()
    norms = np.linalg.norm(X, axis=1)
    # empty, whitespace and emoji-only ([UNK], dropped) documents get the zero vector
    np.testing.assert_allclose(norms, [1, 1, 0, 0, 0, 1, 1, 1], atol=1e-6)
    assert small.n_distilled_ == 1101 and small.dim_ == 32
    # the tokenizer lower-cases: "The AND he" is "the and he"
    np.testing.assert_allclose(X[7], small.transform(["the and he"])[0], atol=1e-7)


def test_the_table_is_the_encoder_on_each_token_alone(calls, small):
    """Without PCA and weighting, a token's row is the encoder's mean-pooled vector of the
    token between [CLS] and [SEP]: what TransformerEmbedder gives for a one-token text."""
    raw = DistilledEmbedder(**{**SMALL, "pca_dims": None, "sif_coefficient": None}).fit([])
    seq = raw.set_params(output="sequence").transform(["the and he"])
    assert seq.tokens[0] == ["the", "and", "he"]
    want = TransformerEmbedder(pooling="mean", backend="torch").fit([]).transform(
        ["the", "and", "he"])
    np.testing.assert_allclose(seq.values[0], want, atol=2e-5)
    # the weights: a / (a + p(rank)), Zipf p over the rank among the distilled tokens
    weighted = DistilledEmbedder(**{**SMALL, "pca_dims": None}).fit([])
    table = distilled.read_model2vec(weighted.table_path_)[0]
    plain = distilled.read_model2vec(raw.table_path_)[0]
    ids = np.flatnonzero(np.abs(plain).sum(axis=1))
    assert len(ids) == small.n_distilled_
    p = 1.0 / np.arange(2, len(ids) + 2)
    p /= p.sum()
    np.testing.assert_allclose(table[ids], plain[ids] * (1e-4 / (1e-4 + p))[:, None], rtol=1e-5,
                               atol=1e-7)
    # PCA is fitted on the distilled rows: centred, decorrelated, ordered by variance
    pca = distilled.read_model2vec(
        DistilledEmbedder(**{**SMALL, "sif_coefficient": None}).fit([]).table_path_)[0][ids]
    np.testing.assert_allclose(pca.mean(axis=0), 0, atol=1e-4)
    var = pca.var(axis=0)
    assert (np.diff(var) <= 1e-6).all()
    assert calls["raw"] == 1  # every setting above reused one encoder pass


def test_second_fit_reads_the_cache(calls, small, home):
    before = dict(calls)
    stamp = (home / "distilled" / small.table_id_ / "model.safetensors").stat().st_mtime_ns
    again = DistilledEmbedder(**SMALL).fit(["other documents do not matter"])
    assert calls == before  # neither the encoder pass nor PCA ran again
    assert again.table_path_ == small.table_path_
    assert (home / "distilled" / small.table_id_ / "model.safetensors").stat().st_mtime_ns == stamp
    np.testing.assert_array_equal(again.transform(DOCS), small.transform(DOCS))
    # a damaged table is thrown away and rebuilt from the cached encoder pass, not re-distilled
    table = home / "distilled" / small.table_id_ / "model.safetensors"
    table.write_bytes(table.read_bytes()[:-100])
    rebuilt = DistilledEmbedder(**SMALL).fit([])
    assert calls == {"raw": before["raw"], "finish": before["finish"] + 1}
    np.testing.assert_allclose(rebuilt.transform(DOCS), small.transform(DOCS), atol=1e-6)


def test_model2vec_reads_the_folder_and_agrees(small, tmp_path):
    model2vec = pytest.importorskip("model2vec", reason="model2vec (the `distill` extra) reads "
                                                        "the folders; pip install model2vec")
    static = model2vec.StaticModel.from_pretrained(small.table_path_)
    # the same means of the same table rows, summed in another order (model2vec: numpy's mean;
    # ours: a sparse product; either order differs between CPUs): equal up to the float32
    # rounding that tests/_float32.py bounds for every order, from the rows model2vec averages
    # (its tokens, 512-token cap, unknown token dropped) and their number
    rows = static.encode_as_sequence(DOCS, max_length=static.max_length)
    terms, scale, exact = mean_terms(rows, static.dim)
    assert terms.max() == 512 + 1
    assert_float32_sums_close(static.encode(DOCS), small.transform(DOCS), terms=terms,
                              scale=scale, exact=exact)
    # a folder written with this embedder's own settings: raw means, no 512-token cap
    loose = DistilledEmbedder(**SMALL, normalize=False, max_length=None).fit([])
    folder = loose.save_model2vec(tmp_path / "m2v")
    config = json.loads((folder / "config.json").read_text())
    assert config["normalize"] is False and config["max_length"] is None
    static = model2vec.StaticModel.from_pretrained(folder)
    terms, scale, _ = mean_terms(static.encode_as_sequence(DOCS), static.dim)
    assert terms.max() == 700 + 1
    assert_float32_sums_close(static.encode(DOCS), loose.transform(DOCS), terms=terms,
                              scale=scale)


def test_sequence_output_pools_to_the_document_vector(small):
    seq = DistilledEmbedder(**SMALL, output="sequence", normalize=False).fit([]).transform(DOCS)
    assert seq.tokens[0] == ["the", "cat", "sat", "on", "the", "mat"]
    assert seq.lengths.tolist()[2:5] == [0, 0, 0] and seq.lengths[6] == 512  # max_length
    pooled = DistilledEmbedder(**SMALL, normalize=False).fit([]).transform(DOCS)
    # numpy's masked mean and the sparse product add the rows in different orders
    terms, scale, _ = mean_terms([v[:n] for v, n in zip(seq.values, seq.lengths, strict=True)], seq.dim)
    assert_float32_sums_close(seq.pool("mean"), pooled, terms=terms, scale=scale)


def test_save_load_and_a_fresh_process_give_identical_vectors(small, tmp_path):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    docs = ["the cat sat on the mat", "he was in the house", "it was his and her", "of the"] * 3
    y = [0, 1, 1, 0] * 3
    pipe = make_pipeline(DistilledEmbedder(**SMALL), LogisticRegression()).fit(docs, y)
    folder = embedkit.save(pipe, tmp_path / "model")
    loaded = embedkit.load(folder)
    want = pipe[0].transform(DOCS)
    np.testing.assert_array_equal(loaded[0].transform(DOCS), want)
    np.testing.assert_array_equal(loaded.predict_proba(DOCS), pipe.predict_proba(DOCS))
    # the table travels in the folder (model2vec format): no cache, no encoder needed to load
    (tmp_path / "elsewhere").mkdir()
    code = ("import sys, numpy as np, embedkit; m = embedkit.load(sys.argv[1]); "
            f"np.save(sys.argv[2], m[0].transform({DOCS!r})); embedkit.save(m, sys.argv[3])")
    env = {"EMBEDKIT_HOME": str(tmp_path / "elsewhere"), "PATH": "", "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-c", code, str(folder), str(tmp_path / "v.npy"),
                    str(tmp_path / "again")], check=True, env=env)
    np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), want)
    assert not any((tmp_path / "elsewhere").iterdir())  # nothing distilled nor cached there
    # saved again from the loaded copy (no cache behind it): the same table
    np.testing.assert_array_equal(embedkit.load(tmp_path / "again")[0].transform(DOCS), want)
    # pickling keeps no table: the copy reads it from the cache again
    assert len(pickle.dumps(small)) < 10_000
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(small)).transform(DOCS),
                                  small.transform(DOCS))


@pytest.mark.parametrize("params, message", [
    ({"model": "/no/such/folder"}, r"model='/no/such/folder'\): not a named model"),
    ({"pca_dims": 500}, r"pca_dims=500\): the encoder has 384 dimensions; use pca_dims <= 384"),
    ({"max_vocabulary": 1100, "pca_dims": 256},
     r"needs more than 256 distilled tokens, and there are 101\. Raise max_vocabulary"),
])
def test_bad_settings_are_named(calls, params, message):
    with pytest.raises(ValueError, match=message):
        DistilledEmbedder(**params).fit([])


def test_registry_entry_runs_in_compare(small, home, tmp_path):
    from typer.testing import CliRunner

    from embedkit.cli import app
    from embedkit.configure import make_representation
    from embedkit.registry import sampled_settings

    assert isinstance(make_representation("minilm-static"), DistilledEmbedder)
    # tune tries the default and the other PCA size (another PCA costs seconds: the raw cache)
    assert sampled_settings("minilm-static", "logreg", 4, seed=0) == [{"features__pca_dims": 128}]
    out = tmp_path / "report"
    # the test's small setting (-p) and one job, so the module's cache folder serves it
    result = CliRunner().invoke(app, ["compare", "-r", "minilm-static", "-H", "logreg", "--quick",
                                      "-p", "max_vocabulary=2100", "-p", "pca_dims=32", "-j", "1",
                                      "--no-baselines", "-o", str(out)])
    assert result.exit_code == 0, result.output
    import pandas as pd

    table = pd.read_csv(out / "results.csv")
    assert table.representation.tolist() == ["minilm-static"]
    assert table.accuracy_mean.iloc[0] > 0.5  # 5 BBC topics: a fifth by chance


def test_the_distillation_runs_the_shared_loop_on_the_fit_device(home, monkeypatch):
    """The encoder pass is `run_batches` (the package's one encode loop) on ``device_``."""
    from embedkit import _batching

    devices = []
    real = _batching.run_batches
    monkeypatch.setattr(_batching, "run_batches",
                        lambda *a, **k: devices.append(k["device"]) or real(*a, **k))
    emb = DistilledEmbedder(max_vocabulary=1010, pca_dims=None, device="cpu").fit([])
    assert emb.device_ == "cpu" and devices == ["cpu"]
    assert emb.n_distilled_ > 0 and np.isfinite(emb.transform(DOCS)).all()
