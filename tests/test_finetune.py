"""TransformerClassifier / TransformerRegressor: real fine-tuning of the packaged MiniLM on a
few dozen sentences (small, but every number comes from real training)."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.pipeline import Pipeline

from embedkit.heads.finetune import TransformerClassifier, TransformerRegressor
from embedkit.sequences import Sequences, masked_pool

SPORT = ["the striker scored a late goal", "the team won the cup final", "a great match in the league",
         "the coach praised his players", "fans cheered the winning goal", "the keeper saved a penalty",
         "the club signed a new forward", "they lost the match on penalties", "the runner broke the record",
         "a tennis player won the open", "the referee showed a red card", "the season ends with a derby"]
FOOD = ["bake the bread for an hour", "add salt and pepper to the soup", "chop the onions and garlic",
        "the cake needs more sugar", "simmer the sauce until thick", "roast the chicken with lemon",
        "whisk the eggs with butter", "a recipe for tomato pasta", "fry the potatoes in oil",
        "stir the rice into the broth", "serve the salad with bread", "grill the fish with herbs"]
DOCS = SPORT + FOOD
LABELS = ["sport"] * len(SPORT) + ["food"] * len(FOOD)
TEST_DOCS = ["the goalkeeper made a great save", "the team scored twice in the final",
             "boil the pasta in salted water", "mix flour, butter and sugar"]
TEST_LABELS = ["sport", "sport", "food", "food"]
SMALL = {"max_length": 32, "batch_size": 8, "random_state": 0, "device": "cpu"}


@pytest.fixture(scope="session")
def fitted():
    """Full fine-tuning, 2 epochs, str labels, inside a Pipeline behind 'passthrough'."""
    clf = TransformerClassifier(epochs=2, lr=1e-4, head_lr=3e-3, **SMALL)
    pipe = Pipeline([("features", "passthrough"), ("head", clf)]).fit(DOCS, LABELS)
    return pipe


@pytest.fixture(scope="session")
def untrained():
    """Same seed, frozen encoder and learning rates too small to move the head (a rate must be
    > 0): the untrained head on raw MiniLM; pandas categorical labels."""
    y = pd.Series(pd.Categorical(LABELS))
    return TransformerClassifier(fine_tune="none", epochs=1, lr=1e-12, head_lr=1e-12,
                                 **SMALL).fit(DOCS, y)


@pytest.fixture(scope="session")
def last_k_pair():
    """Two identical fits (top block only, int labels, accumulation, mlp head, cls pooling)."""
    y = np.array([0 if lab == "sport" else 7 for lab in LABELS])
    params = dict(fine_tune="last_k", k=1, head="mlp", pooling="cls", epochs=1,
                  gradient_accumulation=2, class_weight="balanced", lr=1e-3, early_stopping=True,
                  validation_fraction=0.34, **SMALL)
    return [TransformerClassifier(**params).fit(DOCS[::2], y[::2]) for _ in range(2)]


def _accuracy(model, docs, labels):
    return float(np.mean(np.asarray(model.predict(docs)) == np.asarray(labels)))


def test_fine_tuning_learns_and_changes_predictions(fitted, untrained):
    clf = fitted.named_steps["head"]
    losses = [h["train_loss"] for h in clf.history_]
    assert len(losses) == 2 and losses[1] < losses[0]
    assert _accuracy(fitted, DOCS, LABELS) >= 0.9
    assert _accuracy(fitted, TEST_DOCS, TEST_LABELS) >= 0.75
    before = untrained.predict_proba(TEST_DOCS)
    after = clf.predict_proba(TEST_DOCS)
    assert np.abs(after - before).max() > 0.1
    np.testing.assert_allclose(after.sum(axis=1), 1.0, rtol=1e-5)
    assert list(clf.classes_) == ["food", "sport"]
    assert fitted.predict(TEST_DOCS).dtype == np.asarray(LABELS).dtype


def test_frozen_encoder_features_equal_plain_minilm(untrained):
    """fine_tune='none' leaves MiniLM untouched: transform == masked mean of its token vectors."""
    from embedkit.storage.resources import load_transformer

    tokenizer, encoder, _ = load_transformer("all-minilm-l6-v2")
    batch = tokenizer(TEST_DOCS, padding=True, truncation=True, max_length=32, return_tensors="pt")
    with torch.inference_mode():
        hidden = encoder(**batch).last_hidden_state
    expected = masked_pool(hidden, batch["attention_mask"].bool(), "mean").numpy()
    got = untrained.transform(TEST_DOCS)
    assert got.dtype == np.float32 and got.shape == (4, 384)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    # categorical labels come back as the original category values
    assert set(untrained.predict(DOCS)) <= set(LABELS)
    assert list(untrained.classes_) == ["food", "sport"]


def test_transform_features_and_sequences(fitted, untrained):
    clf = fitted.named_steps["head"]
    pooled = clf.transform(TEST_DOCS)
    assert pooled.shape == (4, 384) and pooled.dtype == np.float32 and np.isfinite(pooled).all()
    try:
        s = clf.set_params(output="sequence").transform(TEST_DOCS)
    finally:
        clf.set_params(output="pooled")
    assert isinstance(s, Sequences) and s.dim == 384
    assert s.tokens[2][:3] == ["[CLS]", "boil", "the"] and s.tokens[2][-1] == "[SEP]"
    assert list(s.lengths) == [len(t) for t in s.tokens]
    assert np.all(s.values[~s.mask] == 0)
    # the pooled features are the masked mean of the sequence (mean pooling)
    np.testing.assert_allclose(s.pool("mean"), pooled, atol=1e-5)
    empty = clf.transform(["", "ok"])
    assert np.isfinite(empty).all() and set(clf.predict(["", "ok"])) <= set(LABELS)
    # features are the fine-tuned encoder's, not the pretrained one's
    assert np.abs(pooled - untrained.transform(TEST_DOCS)).max() > 1e-2
    assert clf.get_feature_names_out()[0] == "transformerclassifier_dim0"


def test_last_k_keeps_lower_layers_bit_identical(last_k_pair):
    from embedkit.storage.resources import load_transformer

    _, original, _ = load_transformer("all-minilm-l6-v2")
    before = original.state_dict()
    after = last_k_pair[0].module_.encoder.state_dict()
    lower = [k for k in before if k.startswith("embeddings.") or
             any(k.startswith(f"encoder.layer.{i}.") for i in range(5))]
    top = [k for k in before if k.startswith("encoder.layer.5.")]
    assert len(lower) > 80 and len(top) == 16
    assert all(torch.equal(before[k], after[k]) for k in lower)
    assert any(not torch.equal(before[k], after[k]) for k in top)


def test_two_fits_are_identical_on_cpu(last_k_pair):
    a, b = last_k_pair
    sa, sb = a.module_.state_dict(), b.module_.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    np.testing.assert_array_equal(a.predict_proba(TEST_DOCS), b.predict_proba(TEST_DOCS))
    assert a.predict(TEST_DOCS).dtype.kind == "i" and set(a.classes_) == {0, 7}
    assert [h["train_loss"] for h in a.history_] == [h["train_loss"] for h in b.history_]
    assert 0.0 <= a.history_[0]["valid_acc"] <= 1.0 and np.isfinite(a.history_[0]["valid_loss"])


def test_pickle_round_trip_gives_identical_predictions(fitted):
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.predict_proba(TEST_DOCS), fitted.predict_proba(TEST_DOCS))
    np.testing.assert_array_equal(again.predict(TEST_DOCS), fitted.predict(TEST_DOCS))


def test_save_pretrained_and_load(last_k_pair, tmp_path):
    from transformers import AutoModel

    clf = last_k_pair[0]
    folder = clf.save_pretrained(tmp_path / "model")
    names = {p.name for p in folder.iterdir()}
    assert {"model.safetensors", "config.json", "embedkit.json", "embedkit_head.safetensors"} <= names
    assert not any(n.endswith((".bin", ".pkl", ".pt")) for n in names)
    back = TransformerClassifier.load(folder, device="cpu")
    np.testing.assert_array_equal(back.predict_proba(TEST_DOCS), clf.predict_proba(TEST_DOCS))
    assert back.classes_.dtype == clf.classes_.dtype and list(back.classes_) == [0, 7]
    assert back.get_params()["head"] == "mlp" and back.get_params()["class_weight"] == "balanced"
    # a plain Hugging Face load gets the fine-tuned encoder
    encoder = AutoModel.from_pretrained(folder)
    sd, ours = encoder.state_dict(), clf.module_.encoder.state_dict()
    assert all(torch.equal(sd[k], ours[k]) for k in ours)
    with pytest.raises(ValueError, match="TransformerClassifier.load"):
        TransformerRegressor.load(folder)
    with pytest.raises(FileNotFoundError, match="save_pretrained"):
        TransformerClassifier.load(tmp_path)


def test_steps_are_counted_and_max_seconds_ends_the_training_with_the_weights_it_reached(
        fitted, tmp_path):
    """Every optimizer step of the training is counted (2 epochs of 3 batches); a limit that
    has passed by the first batch's end stops there, not as a Ctrl-C: the head is fitted on
    that one step, predicts, and says it ran out of time, also once saved and loaded."""
    head = fitted.named_steps["head"]
    assert head.n_steps_ == 6 and not head.out_of_time_ and head.max_seconds is None
    cut = TransformerClassifier(epochs=5, lr=1e-4, head_lr=3e-3, max_seconds=1e-3,
                                **SMALL).fit(DOCS, LABELS)
    assert cut.out_of_time_ and cut.n_steps_ == 1 and cut.n_epochs_ == 1
    assert cut.predict_proba(TEST_DOCS).shape == (4, 2)
    assert not np.allclose(cut.predict_proba(TEST_DOCS), head.predict_proba(TEST_DOCS))
    back = TransformerClassifier.load(cut.save_pretrained(tmp_path / "cut"), device="cpu")
    assert back.out_of_time_ and back.n_steps_ == 1 and back.max_seconds == 1e-3
    with pytest.raises(ValueError, match="max_seconds"):
        TransformerClassifier(max_seconds=0).fit(DOCS, LABELS)


def test_plot_history(fitted, tmp_path):
    clf = fitted.named_steps["head"]
    fig = clf.plot_history(tmp_path / "history.png")
    assert (tmp_path / "history.png").stat().st_size > 1000
    line = fig.axes[0].lines[0]
    np.testing.assert_allclose(line.get_ydata(), [h["train_loss"] for h in clf.history_])


def test_regressor_with_early_stopping_history():
    docs = ["tiny", "very small", "small", "medium sized", "big", "large", "huge", "enormous"] * 2
    y = np.array([0, 0.5, 1, 2, 3, 3.2, 4, 4.5] * 2, dtype=float)
    reg = TransformerRegressor(fine_tune="none", head="attention", epochs=8, head_lr=3e-2,
                               early_stopping=True, validation_fraction=0.25,
                               **{**SMALL, "batch_size": 4}).fit(docs, y)
    assert all(np.isfinite([h["valid_loss"], h["valid_r2"]]).all() for h in reg.history_)
    assert reg.history_[-1]["train_loss"] < reg.history_[0]["train_loss"] / 4
    assert reg.history_[-1]["valid_r2"] > 0.3
    pred = reg.predict(["tiny", "small", "huge", "enormous"])
    assert pred.shape == (4,) and pred.dtype == np.float64  # as every scikit-learn regressor
    assert pred[0] < pred[2] and pred[1] < pred[3]


def test_single_class_y_is_rejected():
    with pytest.raises(ValueError, match="only one class"):
        TransformerClassifier(**SMALL).fit(DOCS[:4], ["sport"] * 4)


@pytest.mark.parametrize("params, match", [
    ({"fine_tune": "top"}, "fine_tune='top'"),
    ({"head": "cnn"}, "head='cnn'"),
    ({"pooling": "max"}, "pooling='max'"),
    ({"epochs": 0}, "epochs=0"),
    ({"warmup_ratio": 1.0}, "warmup_ratio"),
    ({"device": "tpu"}, "device='tpu'.*'cpu'"),
])
def test_bad_params_are_named(params, match):
    with pytest.raises(ValueError, match=match):
        TransformerClassifier(**params).fit(DOCS[:4], LABELS[:2] + LABELS[-2:])


def test_bad_input_is_named(fitted):
    clf = fitted.named_steps["head"]
    with pytest.raises(ValueError, match="passthrough"):
        clf.predict(np.zeros((2, 384), dtype=np.float32))
    with pytest.raises(ValueError, match="positions 1"):
        clf.predict(["fine", None])
    with pytest.raises(ValueError, match="k=9"):
        TransformerClassifier(fine_tune="last_k", k=9, **SMALL).fit(DOCS[:4], LABELS[:2] + LABELS[-2:])
    with pytest.raises(ValueError, match="max_length=9999"):
        TransformerClassifier(max_length=9999).fit(DOCS[:4], LABELS[:2] + LABELS[-2:])


def test_schedule_warms_up_then_decays_per_weight_update():
    """8 batches an epoch, 2 accumulated per update, 2 epochs: 8 updates, 2 of them warm-up."""
    clf = TransformerClassifier(epochs=2, gradient_accumulation=2, warmup_ratio=0.25)
    [(name, schedule)] = clf._callbacks(batches_per_epoch=8)
    assert name == "lr_schedule" and schedule.step_every == "batch"
    np.testing.assert_allclose(schedule.simulate(8, 1.0), [0, 0.5, 1, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6])


def test_length_grouped_batches_cover_every_row_once_per_epoch():
    from embedkit.heads.finetune._data import LengthGroupedBatches

    lengths = np.random.default_rng(0).integers(1, 40, size=103)
    sampler = LengthGroupedBatches(lengths, 8, torch.Generator().manual_seed(0), window=4)
    first, second = list(sampler), list(sampler)
    assert len(first) == len(sampler) == 13
    for epoch in (first, second):
        assert sorted(i for batch in epoch for i in batch) == list(range(103))
    assert first != second  # reshuffled every epoch
    # inside a window rows are sorted longest first, so a batch spans a narrow length range
    spread = np.mean([np.ptp(lengths[b]) for b in first])
    assert spread < np.ptp(lengths) / 2
    again = LengthGroupedBatches(lengths, 8, torch.Generator().manual_seed(0), window=4)
    assert list(again) == first  # seeded by its generator


def test_multilabel_validation_f1_reads_the_logits():
    """skorch's ``predict`` turns BCE logits into (n, 2, n_labels) probabilities; the epoch's
    validation micro-F1 must score the labels whose logit is positive, as ``predict`` does."""
    from sklearn.metrics import f1_score
    from skorch import NeuralNet

    from embedkit.heads.finetune._training import valid_f1_micro

    torch.manual_seed(0)
    net = NeuralNet(torch.nn.Linear(4, 3), criterion=torch.nn.BCEWithLogitsLoss).initialize()
    X = np.random.default_rng(0).normal(size=(40, 4)).astype(np.float32)
    y = (np.random.default_rng(1).random((40, 3)) > 0.5).astype(np.float32)
    logits = net.module_(torch.from_numpy(X)).detach().numpy()
    expected = f1_score(y, logits > 0, average="micro")
    assert 0 < expected < 1 and valid_f1_micro(net, X, y) == pytest.approx(expected)


def _alone(clf, docs):
    """The fitted module on each document alone (no padding, no batching): (logits, pooled,
    hidden states) per document, computed here without the package's encode loop."""
    out = []
    with torch.inference_mode():
        for doc in docs:
            ids = torch.tensor([clf.tokenizer_(doc, truncation=True, max_length=clf.max_length)
                                ["input_ids"]])
            mask = torch.ones_like(ids)
            hidden, pooled, _ = clf.module_.features(input_ids=ids, attention_mask=mask)
            logits = clf.module_(input_ids=ids, attention_mask=mask)
            out.append((logits[0].numpy(), pooled[0].numpy(), hidden[0].numpy()))
    return out


def test_inference_runs_the_shared_encode_loop_on_the_fit_device(fitted, monkeypatch):
    """Predictions, features and sequences come from `run_batches` (length-sorted, padded
    batches) on ``device_``: the values of each document run alone, and no device is resolved."""
    from embedkit import _batching, machine
    from embedkit.heads import _base
    from embedkit.heads.finetune import _persist

    clf = fitted.named_steps["head"]
    assert clf.device_ == "cpu"
    docs = TEST_DOCS + ["", "a much longer sentence about the goalkeeper and the final match"]
    alone = _alone(clf, docs)

    def refuse(device):
        raise AssertionError("the device was resolved again after fit")

    calls = []
    real = _batching.run_batches
    monkeypatch.setattr(machine, "resolve_device", refuse)
    monkeypatch.setattr(_base, "resolve_device", refuse)
    monkeypatch.setattr(_persist, "resolve_device", refuse)
    monkeypatch.setattr("embedkit.heads.finetune._estimator.run_batches",
                        lambda *a, **k: calls.append(k["device"]) or real(*a, **k))
    logits = np.log(clf.predict_proba(docs))
    logits -= logits.mean(axis=1, keepdims=True)
    want = np.stack([a[0] for a in alone])
    np.testing.assert_allclose(logits, want - want.mean(axis=1, keepdims=True), atol=1e-5)
    np.testing.assert_allclose(clf.transform(docs), np.stack([a[1] for a in alone]), atol=1e-5)
    try:
        s = clf.set_params(output="sequence").transform(docs)
    finally:
        clf.set_params(output="pooled")
    for i, (_, _, hidden) in enumerate(alone):
        assert s.lengths[i] == len(hidden)
        np.testing.assert_allclose(s.values[i, : len(hidden)], hidden, atol=1e-5)
    assert calls == ["cpu"] * 3


def test_a_model_pickled_before_device_was_stored_still_predicts(fitted):
    clf = pickle.loads(pickle.dumps(fitted.named_steps["head"]))
    del clf.device_  # what a model pickled by an older embedkit holds
    np.testing.assert_array_equal(clf.predict_proba(TEST_DOCS), fitted.predict_proba(TEST_DOCS))
    np.testing.assert_array_equal(clf.transform(TEST_DOCS),
                                  fitted.named_steps["head"].transform(TEST_DOCS))
    assert "device_" not in vars(clf)  # resolved for the call, not stored by prediction


def test_loading_a_folder_resolves_the_device_on_this_machine(fitted, tmp_path):
    from embedkit import load, save
    from embedkit.machine import resolve_device

    clf = pickle.loads(pickle.dumps(fitted.named_steps["head"]))
    clf.device_ = "cuda"  # as if fitted on a GPU machine: not this one's device
    back = TransformerClassifier.load(clf.save_pretrained(tmp_path / "model"))
    assert back.device_ == resolve_device("auto")
    np.testing.assert_array_equal(back.predict_proba(TEST_DOCS), fitted.predict_proba(TEST_DOCS))
    again = load(save(Pipeline([("features", "passthrough"), ("head", clf)]), tmp_path / "pipe"))
    assert again.named_steps["head"].device_ == "cpu"  # the parameter, resolved here
    np.testing.assert_array_equal(again.predict_proba(TEST_DOCS), fitted.predict_proba(TEST_DOCS))


def test_precision_auto_is_fp32_off_cuda_and_bf16_runs_under_autocast(fitted):
    clf = fitted.named_steps["head"]
    assert clf.precision == "auto" and clf.precision_ == "fp32" == clf.module_.precision
    half = TransformerClassifier(epochs=2, lr=1e-4, head_lr=3e-3, precision="bf16",
                                 **SMALL).fit(DOCS, LABELS)
    assert half.precision_ == "bf16"
    seen = []
    hook = half.module_.head.register_forward_pre_hook(
        lambda module, args: seen.append(torch.is_autocast_enabled("cpu")))
    try:
        proba = half.predict_proba(TEST_DOCS)
    finally:
        hook.remove()
    assert seen and all(seen)  # bf16 autocast on the CPU too, when asked for
    assert np.isfinite(proba).all()
    assert _accuracy(half, TEST_DOCS, TEST_LABELS) == _accuracy(fitted, TEST_DOCS, TEST_LABELS)
    # a module pickled before ``precision`` existed keeps its CUDA-only ``autocast`` flag
    old = pickle.loads(pickle.dumps(clf))
    del old.module_.precision
    old.module_.autocast = True
    np.testing.assert_allclose(old.predict_proba(TEST_DOCS), clf.predict_proba(TEST_DOCS),
                               atol=1e-6)


def test_gpu_batches_are_padded_to_a_multiple_of_8_tokens():
    from embedkit.heads.finetune._data import collate_token_ids

    items = [(np.array([5, 6, 7]), 0), (np.array([8]), 1)]
    plain, _ = collate_token_ids(items, pad_id=0)
    eight, y = collate_token_ids(items, pad_id=0, multiple=8)
    assert plain["input_ids"].shape == (2, 3) and eight["input_ids"].shape == (2, 8)
    assert eight["attention_mask"].sum(1).tolist() == [3, 1] and y.tolist() == [0, 1]
    assert eight["input_ids"][:, :3].tolist() == plain["input_ids"].tolist()
