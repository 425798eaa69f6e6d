"""SetFitClassifier: the packaged MiniLM tuned on pairs of a real SMS slice, then LR.

One small fit per session (8 SMS per class, SetFit's default pairs: 128, eight steps) is shared;
the determinism test fits once more, the others briefly (one or four steps). The contract and
hostile-input suites cover the parameter table.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.dummy import DummyClassifier
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline

from embedkit import load, save
from embedkit.heads.pairs import count_pairs
from embedkit.heads.setfit import SetFitClassifier

PARAMS = {"max_length": 32, "random_state": 3}


def _sms(held_out: int) -> tuple:
    """8 SMS per class to train on, and ``held_out`` per class of the others."""
    from embedkit.data.datasets import load_dataset

    df = load_dataset("sms-spam")
    train = df.groupby("label").sample(8, random_state=0)
    test = df.drop(train.index).groupby("label").sample(held_out, random_state=0)
    return (train.text.tolist(), train.label.to_numpy(), test.text.tolist(),
            test.label.to_numpy())


@pytest.fixture(scope="module")
def sms():
    """8 SMS per class to train on, and a held-out slice of 30 per class."""
    return _sms(30)


@pytest.fixture(scope="module")
def fitted(sms):
    X, y, _, _ = sms
    return SetFitClassifier(**PARAMS).fit(X, y)


def test_beats_frozen_minilm_and_a_dummy_on_held_out_sms(sms, fitted):
    from sklearn.linear_model import LogisticRegression

    from embedkit import TransformerEmbedder

    X, y, X_test, y_test = sms
    dummy = DummyClassifier(strategy="most_frequent").fit(X, y).score(X_test, y_test)
    assert dummy == 0.5
    assert fitted.score(X_test, y_test) >= dummy + 0.2  # 46 of 60 here, the dummy 30
    # the encoder it starts from, frozen, + logistic regression, on 200 other SMS per class
    _, _, X_wide, y_wide = _sms(200)
    frozen = TransformerEmbedder(max_length=32).fit(X)
    plain = LogisticRegression(max_iter=3000).fit(frozen.transform(X), y)
    assert fitted.score(X_wide, y_wide) > plain.score(frozen.transform(X_wide), y_wide)  # 328, 321
    assert fitted.n_pairs_ == count_pairs([8, 8]) == 128 and fitted.dim_ == 384
    assert [e["step"] for e in fitted.history_][-1] == 8  # 128 pairs in batches of 16
    assert fitted.n_steps_ == 8 and not fitted.out_of_time_
    proba = fitted.predict_proba(X_test)
    assert proba.shape == (60, 2) and np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    vectors = fitted.transform(X_test[:3])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)  # MiniLM normalises


def test_max_seconds_ends_the_tuning_in_time_and_keeps_the_steps_it_reached(sms):
    """A fit that must end by a deadline (tune's refit): the tuning stops at the first step's end
    past ``max_seconds`` and the classifier is fitted on the encoder as tuned so far."""
    import time

    X, y, X_test, y_test = sms
    began = time.monotonic()
    cut = SetFitClassifier(**PARAMS, num_iterations=20, max_seconds=1.0).fit(X, y)
    assert time.monotonic() - began < 30  # its 40 steps take minutes on two cores
    assert cut.out_of_time_ and 1 <= cut.n_steps_ < 40 and cut.n_pairs_ == 640
    assert cut.score(X_test, y_test) >= 0.6  # a usable model, not a crash: 0.5 is chance
    assert cut.get_params()["max_seconds"] == 1.0


def test_deterministic_for_a_seed_and_leaves_global_random_state(sms, fitted):
    import random

    import torch

    X, y, X_test, _ = sms
    np.random.seed(123)
    random.seed(123)
    torch.manual_seed(123)
    expected = (np.random.random(), random.random(), torch.rand(1).item())
    np.random.seed(123)
    random.seed(123)
    torch.manual_seed(123)
    again = SetFitClassifier(**PARAMS).fit(X, y)
    assert (np.random.random(), random.random(), torch.rand(1).item()) == expected
    np.testing.assert_array_equal(again.predict_proba(X_test), fitted.predict_proba(X_test))
    np.testing.assert_array_equal(again.predict(X_test), fitted.predict(X_test))


def test_clone_and_pickle(sms, fitted):
    _, _, X_test, _ = sms
    fresh = clone(fitted)
    assert fresh.get_params() == fitted.get_params()
    assert not [k for k in vars(fresh) if k.endswith("_")]
    blob = pickle.dumps(SetFitClassifier(**PARAMS))
    assert len(blob) < 2000  # parameters only, no weights
    back = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(back.predict_proba(X_test), fitted.predict_proba(X_test))


def test_save_and_load_a_pipeline(sms, fitted, tmp_path):
    _, _, X_test, _ = sms
    pipe = Pipeline([("features", "passthrough"), ("head", fitted)])
    folder = save(pipe, tmp_path / "model")
    files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert any(f.endswith("model.safetensors") for f in files)
    assert any(f.endswith("modules.json") for f in files)  # a sentence-transformers folder
    assert not any(f.endswith((".pkl", ".bin", ".pt", ".joblib")) for f in files)
    back = load(folder)
    np.testing.assert_array_equal(back.predict_proba(X_test), pipe.predict_proba(X_test))
    np.testing.assert_array_equal(back.predict(X_test), pipe.predict(X_test))


def test_bad_input_errors(sms, fitted):
    X, y, _, _ = sms
    with pytest.raises(NotFittedError):
        SetFitClassifier().predict(["hello"])
    with pytest.raises(ValueError, match="passthrough"):
        SetFitClassifier(**PARAMS).fit(np.ones((16, 4)), y)
    with pytest.raises(ValueError, match="single str"):
        fitted.predict("one message")
    with pytest.raises(ValueError, match=r"positions 1 \(None\)"):
        fitted.predict(["fine", None])
    with pytest.raises(ValueError, match="X has 16 rows but y has 15"):
        SetFitClassifier(**PARAMS).fit(X, y[:-1])
    with pytest.raises(ValueError, match="only one class"):
        SetFitClassifier(**PARAMS).fit(X, ["ham"] * len(X))
    with pytest.raises(ValueError, match=r"max_length=1000\) exceeds the 512 positions"):
        SetFitClassifier(num_iterations=1, max_length=1000).fit(X, y)
    with pytest.raises(ValueError, match="not a named model"):
        SetFitClassifier(model="no-such-model").fit(X, y)
    assert fitted.predict([]).shape == (0,)
    assert fitted.predict_proba([]).shape == (0, 2)


def test_max_steps_draws_only_the_pairs_it_trains_on_and_epochs_repeat_the_pairs(sms):
    X, y, _, _ = sms
    capped = SetFitClassifier(**PARAMS, epochs=3, max_steps=1).fit(X, y)
    assert capped.n_pairs_ == 16 and [e["step"] for e in capped.history_][-1] == 1
    longer = SetFitClassifier(**PARAMS, num_iterations=1, epochs=2).fit(X, y)  # 2 epochs of 2 steps
    assert longer.n_pairs_ == 2 * 16 and [e["step"] for e in longer.history_][-1] == 4
    assert [e["epoch"] for e in longer.history_][-1] == 2


def test_a_budget_sizes_it_by_the_steps_its_fit_takes_never_below_the_least(sms, fitted):
    """What `embedkit.Tuner` reads: `fit_work` counts the steps a fit takes (two balanced
    classes' pairs, at most ``max_steps``) in fine-tuning's units (a step of 32 texts of 64 word
    pieces, every block trained) and the pass the regression reads; `sized_for` gives the most
    steps whose cost fits, on every row, never fewer than `LEAST_STEPS`; a probe is a fit on
    every row cut to a few steps."""
    from embedkit.heads.setfit import LEAST_STEPS

    X, y, _, _ = sms
    steps = [e["step"] for e in fitted.history_][-1]
    assert steps == fitted.n_pairs_ // 16 == clone(fitted)._steps(len(X)) == 8
    head = SetFitClassifier(max_length=64, max_steps=400)
    assert head.predict_work(100) == pytest.approx(0.4 * 7 * 0.5)  # 7 batches, half a unit each
    assert head.fit_work(32) == pytest.approx(512 / 16 + 0.4 * 2 * 0.5)
    assert head.fit_work(100) == pytest.approx(313 + 1.4)  # ceil(5,000 pairs / 16)
    assert head.fit_work(1000) == pytest.approx(400 + 0.4 * 63 * 0.5)  # max_steps binds

    def cost(work):  # half a second a unit
        return 0.5 * work

    assert head.sized_for(100, 400, cost) == ({"max_steps": 400}, 100)  # its own: 313 steps
    assert head.sized_for(100, 60, cost) == ({"max_steps": 118}, 100)  # 0.5 x (118 + 1.4) <= 60
    assert head.sized_for(100, 20, cost) is None  # 40 steps need 20.7 s
    assert LEAST_STEPS == 40 and head.least_work(100) == pytest.approx(41.4)
    assert head.least_said(100) == "40 steps of 16 pairs"
    # its probe: every row, cut to a few steps (no slice draws its pairs); none of 40 or more
    assert head.probe_recipe(6, 100) == ({"max_steps": 6}, 100) and head.probe_recipe(40, 100) is None
    assert head.gain_share({"max_steps": 118}, 100, 100, 2) == pytest.approx((119.4 / 314.4) ** 0.25)


def test_the_device_is_resolved_at_fit_and_when_a_folder_loads(sms, fitted, tmp_path, monkeypatch):
    from embedkit.heads import setfit
    from embedkit.machine import resolve_device

    _, _, X_test, _ = sms
    assert fitted.device_ == resolve_device("auto")
    want = fitted.predict_proba(X_test)

    def refuse(device):
        raise AssertionError("the device was resolved again after fit")

    with monkeypatch.context() as mp:
        mp.setattr(setfit, "resolve_device", refuse)
        np.testing.assert_array_equal(fitted.predict_proba(X_test), want)
    # a model folder written on a GPU machine: its encoder loads on this machine's device
    folder = tmp_path / "encoder"
    folder.mkdir()
    state = fitted._to_state(folder)
    state["device_"] = "cuda"
    back = SetFitClassifier._from_state(state, folder)
    assert back.device_ == resolve_device("auto")
    assert str(back.encoder_.device).split(":")[0] == back.device_
    np.testing.assert_array_equal(back.predict_proba(X_test), want)


def test_precision_resolves_for_the_device_and_bf16_reaches_the_trainer(sms, fitted, monkeypatch):
    from embedkit.heads import setfit

    assert fitted.precision == "auto" and fitted.precision_ == "fp32"  # no CUDA GPU here
    real = setfit._cardless_trainer()
    seen = []

    class Recording(real):
        def train(self, *args, **kwargs):
            seen.append(self.args.bf16)
            return super().train(*args, **kwargs)

    monkeypatch.setattr(setfit, "_cardless_trainer", lambda: Recording)
    X, y, X_test, _ = sms
    # one step of two pairs of 16 word pieces: bfloat16 is emulated, slowly, on most CPUs
    half = SetFitClassifier(**{**PARAMS, "device": "cpu", "max_length": 16}, max_steps=1, batch_size=2,
                            precision="bf16").fit(X, y)
    assert half.precision_ == "bf16" and seen == [True]
    assert np.isfinite(half.predict_proba(X_test[:4])).all()
