"""Doc2VecEmbedder: real gensim training on a slice of BBC News, seeded and deterministic."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.pipeline import FeatureUnion

from embedkit import Doc2VecEmbedder, load_dataset

ROOT = Path(__file__).resolve().parents[1]
SMALL = dict(vector_size=16, epochs=40, min_count=2, random_state=3)


@pytest.fixture(scope="module")
def docs() -> list[str]:
    df = load_dataset("bbc-news", quick=False)
    # 40 articles per topic, first 600 characters each: a real corpus that trains in a second
    sample = df.groupby("label", sort=True).head(40)
    return [t[:600] for t in sample.text]


@pytest.fixture(scope="module")
def fitted(docs):
    emb = Doc2VecEmbedder(dm=0, **SMALL)
    trained = emb.fit_transform(docs)
    return emb, trained


def test_fit_transform_returns_the_trained_vectors(docs, fitted):
    emb, trained = fitted
    assert trained.dtype == np.float32 and trained.shape == (len(docs), 16)
    np.testing.assert_array_equal(trained, emb.model_.dv.vectors)
    # transform infers, also for the training documents: close to, but not the trained vectors
    inferred = emb.transform(docs)
    assert not np.allclose(inferred, trained)
    # the inferred vector of a training document finds its own trained vector among all of them
    def unit(m):
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    nearest = (unit(inferred) @ unit(trained).T).argmax(axis=1)
    assert (nearest == np.arange(len(docs))).mean() > 0.9  # measured 0.99 (gensim infer_vector: 0.995)


def test_transform_does_not_leak_trained_vectors_for_other_docs(docs, fitted):
    emb, trained = fitted
    # same documents, another order: inferred vectors follow the documents, not positions
    shuffled = emb.transform(docs[::-1])
    np.testing.assert_array_equal(shuffled[::-1], emb.transform(docs))
    assert not np.allclose(shuffled[0], trained[0])


def test_same_seed_same_vectors_in_process(docs, fitted):
    emb, trained = fitted
    again = clone(emb)
    np.testing.assert_array_equal(again.fit_transform(docs), trained)
    np.testing.assert_array_equal(again.transform(docs[:5]), emb.transform(docs[:5]))
    # a document's inferred vector does not depend on its batch or on what was inferred before
    np.testing.assert_array_equal(emb.transform([docs[3]])[0], emb.transform(docs[:5])[3])
    other = clone(emb).set_params(random_state=4)
    assert not np.allclose(other.fit_transform(docs), trained)


_SCRIPT = """
import hashlib, sys
import numpy as np
from embedkit import Doc2VecEmbedder, load_dataset
df = load_dataset("bbc-news", quick=False)
docs = [t[:600] for t in df.groupby("label", sort=True).head(40).text]
for dm in (0, 1):
    emb = Doc2VecEmbedder(dm=dm, vector_size=16, epochs=8, min_count=2, random_state=3)
    trained = emb.fit_transform(docs)
    inferred = emb.transform(docs[:20] + ["an unseen sentence about the economy"])
    words = "an unseen sentence about the economy".split()
    plain = emb.model_.infer_vector(words, epochs=8)  # gensim's own, seeded by Python's hash()
    for a in (trained, inferred, plain):
        print(hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest())
"""


def test_same_seed_same_vectors_across_processes():
    runs = []
    for hashseed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hashseed, PYTHONPATH=str(ROOT))
        out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, cwd=ROOT,
                             capture_output=True, text=True, check=True, timeout=180)
        runs.append(np.array(out.stdout.split()).reshape(2, 3))
    for dm in (0, 1):
        (trained1, inferred1, plain1), (trained2, inferred2, plain2) = runs[0][dm], runs[1][dm]
        assert trained1 == trained2, f"dm={dm}: trained vectors differ across processes"
        assert inferred1 == inferred2, f"dm={dm}: inferred vectors differ across processes"
        # the control: gensim's infer_vector alone changes with PYTHONHASHSEED
        assert plain1 != plain2


def test_new_documents_get_finite_inferred_vectors(fitted):
    emb, _ = fitted
    new = ["Shares rose sharply after the bank reported record profits.",
           "", "zzzz qqqq xxxx", "!!!"]
    out = emb.transform(new)
    assert out.shape == (4, 16) and out.dtype == np.float32 and np.isfinite(out).all()
    # empty and all-unknown documents keep their small seeded starting vector
    assert np.abs(out[1]).max() < 1 / 16 and np.abs(out[2]).max() < 1 / 16
    # a real sentence moves away from the start
    assert np.linalg.norm(out[0]) > 5 * np.linalg.norm(out[1])


def test_infer_epochs_is_used(docs, fitted):
    emb, _ = fitted
    few = clone(emb).set_params(infer_epochs=2).fit(docs)
    assert not np.allclose(few.transform(docs[:3]), emb.transform(docs[:3]))


@pytest.mark.parametrize("params", [dict(dm=1), dict(dm=1, dm_mean=True),
                                    dict(dm=1, dm_concat=True, window=2), dict(dm=0, dbow_words=True)])
def test_variants_train_and_infer(docs, params):
    emb = Doc2VecEmbedder(**{**SMALL, "epochs": 3, **params})
    trained = emb.fit_transform(docs[:60])
    inferred = emb.transform(docs[:2] + [""])
    assert trained.shape == (60, 16) and inferred.shape == (3, 16)
    assert np.isfinite(trained).all() and np.isfinite(inferred).all()
    if params.get("dm_concat"):
        assert emb.model_.layer1_size == 16 * (1 + 2 * 2)


def test_refit_through_fit_transform_with_the_cache_serves_the_new_model(docs):
    """fit_transform resets the cache key as fit does: after a refit on other documents (or
    with another seed), a cached transform gives the new model's vectors, not the old ones."""
    small = {**SMALL, "epochs": 5}
    queries = docs[:2] + ["an unseen sentence about the economy"]
    emb = Doc2VecEmbedder(cache="memory", **small)
    emb.fit(docs[:60])
    old = emb.transform(queries)  # now in the cache
    for params, train in (({}, docs[60:120]), ({"random_state": 4}, docs[60:120])):
        trained = emb.set_params(**params).fit_transform(train)
        fresh = Doc2VecEmbedder(**{**small, **params})
        np.testing.assert_array_equal(trained, fresh.fit_transform(train))
        new = emb.transform(queries)
        np.testing.assert_array_equal(new, fresh.transform(queries))
        assert not np.allclose(new, old)


def test_pickle_round_trip_gives_identical_output(docs, fitted):
    emb, _ = fitted
    loaded = pickle.loads(pickle.dumps(emb))
    np.testing.assert_array_equal(loaded.transform(docs[:4]), emb.transform(docs[:4]))


def test_feature_union_concatenates_pv_dm_and_pv_dbow(docs):
    dm = Doc2VecEmbedder(dm=1, **{**SMALL, "epochs": 3})
    dbow = Doc2VecEmbedder(dm=0, **{**SMALL, "epochs": 3})
    both = FeatureUnion([("dm", dm), ("dbow", dbow)]).fit_transform(docs[:60])
    np.testing.assert_array_equal(both[:, :16], clone(dm).fit_transform(docs[:60]))
    np.testing.assert_array_equal(both[:, 16:], clone(dbow).fit_transform(docs[:60]))


def test_sequence_output_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="no sequence form.*TokenIndexer"):
        Doc2VecEmbedder(output="sequence").fit(["a cat", "a dog"])


def test_empty_vocabulary_after_min_count_is_a_clear_error():
    with pytest.raises(ValueError, match=r"min_count=3\) kept no words.*seen 2 time"):
        Doc2VecEmbedder(min_count=3).fit(["the cat", "the dog", ""])


@pytest.mark.parametrize("params, match", [(dict(dm=2), "dm=2"), (dict(vector_size=0), "vector_size=0"),
                                           (dict(negative=0), "negative=0"),
                                           (dict(infer_epochs=0), "infer_epochs=0")])
def test_bad_params_name_the_parameter(params, match):
    with pytest.raises(ValueError, match=match):
        Doc2VecEmbedder(**params).fit(["the cat sat", "the dog sat"])


def test_empty_training_documents_are_legal():
    emb = Doc2VecEmbedder(vector_size=8, epochs=2)
    out = emb.fit_transform(["the cat sat", "", "the dog sat"])
    assert np.isfinite(out).all() and out.shape == (3, 8)
