"""MLPClassifier / MLPRegressor: dense, sparse, sequence and token-id input, standardizing,
labels, class weights, early stopping, regression, and inside scikit-learn pipelines."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from _float32 import EPS32
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from embedkit import MLPClassifier, MLPRegressor, TfidfEmbedder
from embedkit.sequences import Sequences, TokenIds


def _seq():
    values = np.arange(4 * 3 * 2, dtype=np.float32).reshape(4, 3, 2) + 1
    lengths = np.array([3, 1, 0, 2])
    values[np.arange(3)[None, :] >= lengths[:, None]] = 0
    return Sequences(values, lengths, tokens=[["a", "b", "c"], ["d"], [], ["e", "f"]])


def _blobs(n=120, d=6, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d)).astype(np.float32) + y[:, None] * 1.5
    return X, y


def test_mlp_deterministic_and_sparse_equals_dense():
    X, y = _blobs()
    a = MLPClassifier(epochs=5, standardize=False).fit(X, y).predict_proba(X)
    b = MLPClassifier(epochs=5, standardize=False).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    c = MLPClassifier(epochs=5).fit(sp.csr_matrix(X), y).predict_proba(sp.csr_matrix(X))
    np.testing.assert_allclose(a, c, atol=1e-6)  # sparse input is never standardized
    d = MLPClassifier(epochs=5, random_state=1, standardize=False).fit(X, y).predict_proba(X)
    assert not np.allclose(a, d)


def test_mlp_standardizes_dense_input_with_training_statistics():
    X, y = _blobs()
    a = MLPClassifier(epochs=5).fit(X, y)
    # a per-feature affine change of the input is undone by the stored mean and scale
    shifted = X * np.array([100, 0.01, 1, 5, 2, 3], dtype=np.float32) + 7
    b = MLPClassifier(epochs=5).fit(shifted, y)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(shifted), atol=1e-4)
    module = a.net_.module_
    # against float64 statistics, not numpy's float32 sums (whose rounding follows their order):
    # the stored float32 values are within half a float32 ulp (rtol) of them, plus what float64
    # summation in another order can change (atol: n additions of |x|; rtol: the two-pass std)
    X64, eps64 = X.astype(np.float64), np.finfo(np.float64).eps
    np.testing.assert_allclose(module.mean.numpy(), X64.mean(0), rtol=EPS32 / 2,
                               atol=2 * len(X) * eps64 * np.abs(X64).max())
    np.testing.assert_allclose(module.scale.numpy(), X64.std(0),
                               rtol=EPS32 / 2 + 2 * (len(X) + 5) * eps64)
    # without standardizing, the same change alters the fit
    c = MLPClassifier(epochs=5, standardize=False).fit(shifted, y)
    assert not np.allclose(a.predict_proba(X), c.predict_proba(shifted), atol=1e-2)


def test_mlp_labels_history_class_weight_and_errors():
    X, y = _blobs()
    labels = np.array(["ant", "bee", "cat"])[y]
    clf = MLPClassifier(epochs=30, class_weight="balanced").fit(X, labels)
    assert set(clf.predict(X)) <= set(labels) and list(clf.classes_) == ["ant", "bee", "cat"]
    assert (clf.predict(X) == labels).mean() > 0.85
    assert len(clf.history_) == 30 and clf.history_[-1]["train_loss"] < clf.history_[0]["train_loss"]
    with pytest.raises(ValueError, match="only one class"):
        MLPClassifier().fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="optimizer='lbfgs'"):
        MLPClassifier(optimizer="lbfgs").fit(X, y)
    with pytest.raises(ValueError, match="received raw text.*TfidfEmbedder"):
        MLPClassifier().fit(["some text"] * 4, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="class_weight names classes"):
        MLPClassifier(class_weight={"zebra": 2.0}).fit(X, labels)


def test_mlp_early_stopping_restores_best():
    X, y = _blobs(n=300)
    clf = MLPClassifier(epochs=200, early_stopping=True, patience=2, lr=1e-2).fit(X, y)
    assert clf.n_epochs_ < 200
    assert "valid_loss" in clf.history_[0]


def test_mlp_on_sequences_and_ids_pools_with_mask():
    s = _seq()
    y = np.array([0, 1, 0, 1])
    clf = MLPClassifier(epochs=3).fit(s, y)
    padded = Sequences(np.concatenate([s.values, np.zeros((4, 5, 2), np.float32)], axis=1), s.lengths)
    np.testing.assert_allclose(clf.predict_proba(padded), clf.predict_proba(s), atol=1e-6)
    with pytest.raises(ValueError, match="dimension 2"):
        clf.predict(Sequences(np.zeros((1, 2, 3)), [1]))
    ids = TokenIds([[2, 3], [4, 0], [3, 3], [2, 0]], [2, 1, 2, 1], ["<pad>", "<unk>", "a", "b", "c"])
    dan = MLPClassifier(epochs=3, embedding_dim=8).fit(ids, y)
    assert dan.net_.module_.sequence.embedding.weight.shape == (5, 8)
    frozen = TokenIds(ids.ids, ids.lengths, ids.vocabulary, vectors=np.eye(5, 4))
    fz = MLPClassifier(epochs=3, freeze=True).fit(frozen, y)
    np.testing.assert_array_equal(fz.net_.module_.sequence.embedding.weight.detach().numpy(), np.eye(5, 4))


def test_mlp_regressor_single_and_multi_output():
    X, _ = _blobs()
    target = X[:, 0] * 2.0 - X[:, 1]
    reg = MLPRegressor(epochs=60, lr=1e-2).fit(X, target)
    pred = reg.predict(X)
    assert pred.shape == (len(X),) and pred.dtype == np.float64
    assert reg.score(X, target) > 0.8
    two = MLPRegressor(epochs=5).fit(X, np.c_[target, -target]).predict(X)
    assert two.shape == (len(X), 2)


def test_grid_search_tfidf_mlp_n_jobs_2(bbc):
    small = bbc.groupby("label").head(24)
    pipe = Pipeline([("features", TfidfEmbedder(min_df=2)), ("head", MLPClassifier(epochs=10, lr=1e-2))])
    search = GridSearchCV(pipe, {"head__hidden_layer_sizes": [(), (32,)]}, cv=2, n_jobs=2)
    search.fit(pd.Series(small.text.to_numpy(), index=np.arange(len(small)) * 7 + 3), small.label)
    assert search.best_score_ > 0.6
    assert search.cv_results_["mean_test_score"].shape == (2,)


@pytest.mark.slow
def test_tfidf_mlp_reaches_95_percent_on_bbc_news(bbc_split):
    """Trained on 100 articles per topic of the training split (500 of its 1,780), scored on all
    445 held-out articles: 98.2% here."""
    train, test = bbc_split
    train = train.groupby("label").head(100)
    pipe = Pipeline([("features", TfidfEmbedder(sublinear_tf=True, min_df=2)),
                     ("head", MLPClassifier(epochs=10))])
    pipe.fit(train.text, train.label)
    acc = (pipe.predict(test.text) == test.label.to_numpy()).mean()
    assert acc >= 0.95, acc
