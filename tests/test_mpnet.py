"""The base-size encoder by name in every Transformer path: frozen features (both backends),
fine-tuning, SetFit, distillation, saving, the registry and `compare`.

The registry entries and the errors need no weights and always run. The tests that load
all-mpnet-base-v2 (438 MB of weights, fetched once into ``$EMBEDKIT_HOME`` by the first of
them: `embedkit resources fetch all-mpnet-base-v2`) are marked ``large_download`` and left out
by default; ``pytest -m large_download tests/test_mpnet.py`` runs them (a few minutes on two
CPU cores). They fit on a few dozen short texts: each checks that a path works by name and
gives the values it should, not what the model learns.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

import embedkit
from embedkit.registry import (
    DEFAULT_HEADS,
    DEFAULT_REPRESENTATIONS,
    HEADS,
    REPRESENTATIONS,
    compatible,
    resolve,
)

MPNET = "all-mpnet-base-v2"


# -- no weights needed --------------------------------------------------------------------------
def test_registry_names_the_base_size_steps_and_keeps_the_defaults():
    frozen = REPRESENTATIONS["mpnet"].factory()
    assert isinstance(frozen, embedkit.TransformerEmbedder)
    assert frozen.get_params() == {**embedkit.TransformerEmbedder().get_params(), "model": MPNET,
                                   "normalize": True, "max_length": 384, "cache": "memory"}
    tuned = HEADS["finetune-mpnet"].factory()
    assert (tuned.model, tuned.fine_tune, tuned.k, tuned.batch_size, tuned.epochs,
            tuned.max_length) == (MPNET, "last_k", 12, 32, 2, 64)
    assert compatible(REPRESENTATIONS["mpnet"], HEADS["logreg"])
    assert compatible(REPRESENTATIONS["passthrough"], HEADS["finetune-mpnet"])
    assert not compatible(REPRESENTATIONS["mpnet"], HEADS["finetune-mpnet"])
    # costs: the base-size model's first encoding and fine-tuning cost more than MiniLM's
    assert REPRESENTATIONS["mpnet"].cost > REPRESENTATIONS["minilm"].cost
    assert HEADS["finetune-mpnet"].cost > HEADS["finetune-short"].cost
    # the defaults and the class-name aliases stay on MiniLM
    assert resolve("mpnet", "representation") == "mpnet"
    assert resolve("TransformerEmbedder", "representation") == "minilm"
    assert resolve("TransformerClassifier", "head") == "finetune"
    assert "mpnet" not in DEFAULT_REPRESENTATIONS and "finetune-mpnet" not in DEFAULT_HEADS
    for cls in (embedkit.TransformerEmbedder, embedkit.TransformerClassifier,
                embedkit.SetFitClassifier, embedkit.DistilledEmbedder):
        assert cls().model == "all-minilm-l6-v2"


@pytest.mark.parametrize("cls", ["SetFitClassifier", "DistilledEmbedder"])
def test_an_unknown_model_name_lists_both_named_models(cls):
    est = getattr(embedkit, cls)(model="all-mpnet-base")
    with pytest.raises(ValueError, match=f"all-minilm-l6-v2, {MPNET}"):
        est.fit(["a text", "another text"], [0, 1])


# -- all-mpnet-base-v2 itself (`pytest -m large_download`) ----------------------------------

@pytest.fixture(scope="module")
def folder():
    from embedkit.storage.resources import resource_path

    return resource_path(MPNET)  # fetched once (404 MB) into $EMBEDKIT_HOME if missing


@pytest.fixture(scope="module")
def questions():
    """24 TREC questions about people or places to fit on, 8 others to predict."""
    df = embedkit.load_dataset("trec")
    df = df[df.label.isin(["HUM", "LOC"])]
    train = df.groupby("label", group_keys=False)[["text", "label"]].apply(lambda g: g.iloc[:12])
    test = df.drop(train.index).sample(8, random_state=0)
    return train.text.tolist(), train.label.to_numpy(), test.text.tolist()


@pytest.fixture(scope="module")
def reference(folder, questions):
    """sentence-transformers' own vectors of the test questions (mean pooling, normalised)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu").encode(questions[2])


@pytest.mark.large_download
@pytest.mark.parametrize("backend", ["torch", "onnx"])
def test_frozen_features_by_name_match_sentence_transformers(folder, questions, reference, backend):
    emb = embedkit.TransformerEmbedder(model=MPNET, normalize=True, backend=backend)
    vectors = emb.fit(questions[0]).transform(questions[2])
    assert vectors.shape == (8, 768) and emb.backend_ == backend and emb.source_ == str(folder)
    np.testing.assert_allclose((vectors * reference).sum(1), 1.0, atol=1e-4)
    assert emb.weights_id_.startswith("sha256:")  # the folder's content names the cache entries


@pytest.mark.large_download
def test_frozen_features_take_512_tokens_at_most(folder):
    emb = embedkit.TransformerEmbedder(model=MPNET, max_length=600, backend="torch").fit([])
    assert emb.max_length_ == 512  # 514 positions, two of them reserved as in RoBERTa
    long = " ".join(["word"] * 1000)
    assert np.isfinite(emb.transform([long])).all() and emb.n_truncated_ == 1


@pytest.mark.large_download
def test_registry_pipeline_saves_the_model_by_name(folder, questions, tmp_path):
    X, y, docs = questions
    pipe = Pipeline([("features", REPRESENTATIONS["mpnet"].factory()),
                     ("head", HEADS["logreg"].factory())]).fit(X, y)
    saved = embedkit.save(pipe, tmp_path / "model")
    assert embedkit.storage.persist.folder_size(saved) < 2_000_000  # named, not a copy of 438 MB
    assert f'"{MPNET}"' in (saved / "manifest.json").read_text()
    loaded = embedkit.load(saved)
    np.testing.assert_array_equal(loaded.predict_proba(docs), pipe.predict_proba(docs))


@pytest.mark.large_download
def test_fine_tuning_by_name_trains_saves_and_loads(folder, questions, tmp_path):
    X, y, docs = questions
    head = embedkit.TransformerClassifier(model=MPNET, fine_tune="last_k", k=1, epochs=1,
                                          max_length=24, batch_size=8)
    pipe = Pipeline([("features", "passthrough"), ("head", head)]).fit(X, y)
    assert head.dim_ == 768 and head.transform(docs[:2]).shape == (2, 768)
    with pytest.raises(ValueError, match="exceeds the 512 positions"):
        embedkit.TransformerClassifier(model=MPNET, max_length=514).fit(X, y)
    restored = embedkit.load(embedkit.save(pipe, tmp_path / "ft"))
    np.testing.assert_allclose(restored.predict_proba(docs), pipe.predict_proba(docs), atol=1e-6)
    assert restored[-1].model == MPNET  # a refit starts from the named model again


@pytest.mark.large_download
def test_setfit_by_name(folder, questions):
    X, y, docs = questions
    clf = embedkit.SetFitClassifier(model=MPNET, num_iterations=1, max_steps=2, max_length=24,
                                    batch_size=8).fit(X, y)
    assert clf.dim_ == 768 and clf.predict_proba(docs).shape == (8, 2)


@pytest.mark.large_download
def test_distilled_static_table_by_name(folder, questions):
    from embedkit.storage.resources import weights_identity

    emb = embedkit.DistilledEmbedder(model=MPNET, max_vocabulary=2100, pca_dims=32)
    vectors = emb.fit(questions[0]).transform(questions[2])
    assert vectors.shape == (8, 32) and np.isfinite(vectors).all()
    assert emb.weights_id_ == weights_identity(str(folder))
    config = json.loads((Path(emb.table_path_) / "config.json").read_text())
    assert config["tokenizer_name"] == MPNET and config["weights"] == emb.weights_id_


@pytest.mark.large_download
def test_compare_runs_the_registry_names(folder, questions, tmp_path):
    import pandas as pd

    from embedkit.compare import run_compare

    X, y, _ = questions
    rows = run_compare(pd.DataFrame({"text": X, "label": y}), representations=["mpnet"],
                       heads=["logreg"], folds=2, output=tmp_path / "out", progress=False,
                       n_jobs=1, baselines=False)
    row = rows[rows["representation"] == "mpnet"].iloc[0]
    assert row["head"] == "logreg" and 0.5 <= row["accuracy_mean"] <= 1.0


@pytest.mark.large_download
def test_cost_benchmark_runs(folder, capsys):
    """`pipelines/benchmarks/bench_mpnet.py` on a few texts, so the script never rots."""
    from pipelines.benchmarks import bench_mpnet

    bench_mpnet.main(["--texts", "3", "--rounds", "1", "--steps", "1", "--batch", "3",
                      "--max-length", "16"])
    out = capsys.readouterr().out
    assert "mpnet takes" in out and out.count("fine-tuning step (") == 2
