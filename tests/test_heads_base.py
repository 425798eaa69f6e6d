"""The head contract itself (`embedkit.heads._base`, `embedkit.heads._data`): one training
assembly for every head, batching of its inputs, training history charts, and the layering
that keeps `embedkit.base` free of the heads."""

from __future__ import annotations

import ast
import inspect

import numpy as np
import pytest
import scipy.sparse as sp

import embedkit.base
import embedkit.heads
from embedkit.heads import ConvClassifier, MLPClassifier
from embedkit.heads._base import NeuralHead
from embedkit.heads._data import HeadDataset, HeadInput, collate
from embedkit.plots import history_chart
from embedkit.sequences import Sequences

# the neural heads; EnsembleClassifier combines whole pipelines and trains none itself,
# SetFitClassifier trains with sentence-transformers' trainer (pairs, not labelled rows), and
# LogisticRegressionHead is scikit-learn's solver with an inner cross-validation (and
# NBLogisticRegression one of those per class)
#: the neural heads (the others wrap a scikit-learn or SetFit learner and train as it does)
HEADS = [getattr(embedkit.heads, n) for n in embedkit.heads.__all__
         if n not in ("EnsembleClassifier", "SetFitClassifier", "LogisticRegressionHead",
                      "LinearSGDClassifier", "LinearSGDRegressor", "NBLogisticRegression")]


def test_base_module_imports_nothing_from_heads():
    """The shared contract module sits below the heads: no import of them, not even lazily."""
    tree = ast.parse(inspect.getsource(embedkit.base))
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
    assert imported and not [m for m in imported if "heads" in m.split(".")]


@pytest.mark.parametrize("cls", HEADS, ids=lambda c: c.__name__)
def test_every_head_trains_through_the_one_template(cls):
    """Heads customise hooks; none re-implements `fit` around the shared assembly."""
    assert issubclass(cls, NeuralHead) and cls.fit is NeuralHead.fit


def test_sparse_batches_densify_only_the_batch():
    X = sp.random(50, 1000, density=0.01, format="csr", random_state=0, dtype=np.float32)
    data = HeadDataset(HeadInput("pooled", X, 1000))
    assert sp.issparse(data[0][0]) and len(data) == 50
    batch, _ = collate([data[i] for i in (3, 7)])
    assert batch["x"].shape == (2, 1000)
    np.testing.assert_allclose(batch["x"].numpy(), X[[3, 7]].toarray())


def test_sequence_rows_are_padded_to_the_longest_of_the_batch():
    s = Sequences(np.arange(2 * 4 * 1, dtype=np.float32).reshape(2, 4, 1) + 1, [2, 1])
    data = HeadDataset(HeadInput("sequence", s, 1), np.array([0, 1]))
    batch, y = collate([data[0], data[1]])
    assert batch["x"].shape == (2, 2, 1) and batch["lengths"].tolist() == [2, 1]
    assert batch["x"][:, :, 0].tolist() == [[1.0, 2.0], [5.0, 0.0]] and y.tolist() == [0, 1]


def test_plot_history_draws_every_head_s_losses(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    mlp = MLPClassifier(epochs=4, early_stopping=True, validation_fraction=0.25).fit(X, y)
    fig = mlp.plot_history(tmp_path / "mlp.png")
    assert (tmp_path / "mlp.png").stat().st_size > 1000
    train, valid = fig.axes[0].lines
    np.testing.assert_allclose(train.get_ydata(), [h["train_loss"] for h in mlp.history_])
    np.testing.assert_allclose(valid.get_ydata(), [h["valid_loss"] for h in mlp.history_])
    assert fig.axes[0].get_title() == "MLPClassifier"

    seqs = Sequences(rng.normal(size=(12, 5, 3)), lengths=[5, 3, 4, 2] * 3)
    conv = ConvClassifier(kernel_sizes=(2,), filters=4, epochs=3).fit(seqs, [0, 1] * 6)
    ax = fig.axes[0].figure.add_subplot(2, 1, 2)  # draws into the Axes it is given
    assert conv.plot_history(ax=ax, title="conv") is fig
    assert [len(line.get_ydata()) for line in ax.lines] == [3] and ax.get_title() == "conv"


def test_history_chart_puts_the_validation_metric_on_a_second_axis():
    history = [{"epoch": 1, "train_loss": 0.9, "valid_loss": 1.0, "valid_acc": 0.5},
               {"epoch": 2, "train_loss": 0.5, "valid_loss": 0.7, "valid_acc": 0.75}]
    fig = history_chart(history, title="run")
    loss, metric = fig.axes
    assert [line.get_label() for line in loss.lines] == ["train_loss", "valid_loss"]
    assert metric.lines[0].get_ydata().tolist() == [0.5, 0.75] and metric.get_ylabel() == "valid_acc"
    with pytest.raises(ValueError, match="history is empty"):
        history_chart([])


@pytest.mark.parametrize(("verbose", "tty", "bar"), [(1, False, False), (1, True, True), (2, False, True)])
def test_progress_bars_only_on_a_terminal_or_when_asked(verbose, tty, bar, capsys, monkeypatch):
    """verbose=1 in a log or notebook prints one plain line per epoch, no bar redraws."""
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)).astype(np.float32)
    MLPClassifier(epochs=3, batch_size=8, verbose=verbose).fit(X, (X[:, 0] > 0).astype(int))
    out, err = capsys.readouterr()
    epochs = [line for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [line.split()[0] for line in epochs] == ["1", "2", "3"]
    assert ("it/s" in err or "batch" in err.lower()) is bar


def test_the_device_is_resolved_once_at_fit_and_again_when_a_folder_loads(tmp_path, monkeypatch):
    from embedkit import load, machine, save
    from embedkit.heads import _base

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)).astype(np.float32), np.arange(40) % 2
    asked = []
    monkeypatch.setattr(_base, "resolve_device", lambda d: asked.append(d) or machine.resolve_device(d))
    clf = MLPClassifier(epochs=2, device="auto").fit(X, y)
    assert clf.device_ == machine.resolve_device("auto") and asked == ["auto"]
    proba = clf.predict_proba(X)
    clf.predict(X)
    assert asked == ["auto"]  # prediction runs where fit put the net
    # a model from before device_ existed (an old pickle) still predicts
    del clf.device_
    np.testing.assert_array_equal(clf.predict_proba(X), proba)
    assert clf._device() == machine.resolve_device("auto") and "device_" not in vars(clf)
    # a model folder written on a GPU machine loads on this one: the device is resolved here
    clf.device_ = "cuda"
    back = load(save(clf, tmp_path / "model"))
    assert back.device_ == machine.resolve_device("auto")
    np.testing.assert_array_equal(back.predict_proba(X), proba)
