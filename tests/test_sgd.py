"""The linear SGD heads (`embedkit.heads.sgd`, the registry's ``sgd``): what they learn on real
text, the strength they choose, probabilities for every loss, chunks, numbers, label sets,
model folders and the errors of bad parameters."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from embedkit import load_dataset
from embedkit.data.targets import expected_calibration_error, log_loss
from embedkit.heads import LinearSGDClassifier, LinearSGDRegressor
from embedkit.heads.sgd import ALPHAS
from embedkit.registry import HEADS, for_task


@pytest.fixture(scope="module")
def trec():
    """TREC's official split (5,452 training and 500 test questions, 6 classes) as the
    FLAML runner's TF-IDF sees it (word 1-2 grams, min_df=2, sublinear tf)."""
    df = load_dataset("trec")
    train, test = df[df["split"] == "train"], df[df["split"] == "test"]
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
    return (vectorizer.fit_transform(train["text"]), train["label"].to_numpy(),
            vectorizer.transform(test["text"]), test["label"].to_numpy())


@pytest.fixture(scope="module")
def fitted(trec):
    X, y, _, _ = trec
    return LinearSGDClassifier().fit(X, y)


def test_learns_trec_with_probabilities_that_mean_what_they_say(trec, fitted):
    """Held out: 0.888 accuracy, log-loss 0.31, ECE 0.023 when written (the lbfgs
    `LogisticRegressionHead` scores 0.89 there in ten times the seconds)."""
    _, _, X_test, y_test = trec
    proba = fitted.predict_proba(X_test)
    assert (fitted.predict(X_test) == y_test).mean() >= 0.87
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert (fitted.classes_[proba.argmax(axis=1)] == fitted.predict(X_test)).all()
    assert log_loss(y_test, proba, fitted.classes_) < 0.36
    assert expected_calibration_error(y_test, proba, fitted.classes_) < 0.05


@pytest.mark.parametrize("loss", ["modified_huber", "hinge"])
def test_every_loss_gives_usable_probabilities(trec, loss):
    """Hinge has no probabilities of its own and modified Huber's are often exactly 0: the
    head's tempered softmax gives both finite log-losses near log-loss's own."""
    X, y, X_test, y_test = trec
    head = LinearSGDClassifier(loss=loss).fit(X, y)
    proba = head.predict_proba(X_test)
    assert (proba > 0).all() and np.allclose(proba.sum(axis=1), 1.0)
    assert (head.predict(X_test) == y_test).mean() >= 0.86
    assert log_loss(y_test, proba, head.classes_) < 0.40


def test_alpha_is_the_lowest_held_out_loss_of_a_short_walk(trec, fitted):
    X, y, _, _ = trec
    scores = fitted.validation_scores_
    best = min(scores, key=scores.get)
    grid = sorted(ALPHAS)
    at = grid.index(best)
    for near in (at - 1, at + 1):  # both neighbours of the choice were tried and lost
        if 0 <= near < len(grid):
            assert scores[grid[near]] > scores[best]
    assert len(scores) < len(grid)  # cheaper than the whole grid
    # refitted on every row, the held-out tenth included: alpha scaled by (0.9) ** 0.5
    assert best * 0.94 < fitted.alpha_ < best * 0.96
    fixed = LinearSGDClassifier(alpha=1e-4).fit(X[:2000], y[:2000])
    assert list(fixed.validation_scores_) == [1e-4]


def test_above_selection_rows_alpha_is_chosen_on_a_sample_and_scaled(trec):
    X, y, X_test, y_test = trec
    head = LinearSGDClassifier(selection_rows=1000).fit(X, y)
    best = min(head.validation_scores_, key=head.validation_scores_.get)
    train_rows = X.shape[0] - round(0.1 * X.shape[0])
    assert head.alpha_ == pytest.approx(best * (1000 / train_rows) ** 0.5, rel=0.01)
    assert (head.predict(X_test) == y_test).mean() >= 0.86


def _stream(X, y, chunks: int, classes=None) -> tuple[LinearSGDClassifier, list[float]]:
    head, temperatures = LinearSGDClassifier(), []
    for rows in np.array_split(np.random.default_rng(0).permutation(X.shape[0]), chunks):
        head.partial_fit(X[rows], y[rows], classes=classes)
        temperatures.append(head.temperature_)
    return head, temperatures


def test_partial_fit_over_chunks_approaches_fit(trec, fitted):
    """Two halves: 0.882 held out when written, fit 0.890. Each later chunk is one SGD pass
    (scikit-learn's partial_fit), so many small chunks of a small set learn less (four
    quarters: 0.844); a stream of many rows is the use."""
    X, y, X_test, y_test = trec
    whole = (fitted.predict(X_test) == y_test).mean()
    halves, _ = _stream(X, y, 2, classes=np.unique(y))
    assert (halves.predict(X_test) == y_test).mean() >= whole - 0.02
    quarters, temperatures = _stream(X, y, 4, classes=np.unique(y))
    assert (quarters.predict(X_test) == y_test).mean() >= whole - 0.07
    assert len(set(temperatures)) == 4  # refitted on each new chunk before it is learnt
    assert log_loss(y_test, quarters.predict_proba(X_test), quarters.classes_) < 0.5
    # a first chunk that lacks a class of the stream: every class keeps its column
    chunks = np.array_split(np.arange(X.shape[0]), 4)
    stream = LinearSGDClassifier()
    lacking = chunks[0][y[chunks[0]] != "ABBR"]
    stream.partial_fit(X[lacking], y[lacking], classes=np.unique(y))
    assert stream.predict_proba(X_test).shape == (len(y_test), 6)
    for rows in chunks[1:]:
        stream.partial_fit(X[rows], y[rows])
    assert "ABBR" in set(stream.predict(X_test))
    with pytest.raises(ValueError, match=r"\['NEW'\] on rows \[0, 1\], not among the classes"):
        stream.partial_fit(X[:2], ["NEW", "NEW"])


def test_the_regressor_matches_ridge_on_crowd_sentiment_scores():
    """vader-tweet-scores, TF-IDF: R² 0.597 held out when written, scikit-learn's RidgeCV
    (alpha by 3-fold CV) 0.592; the registry's ``sgd`` becomes this regressor for a number."""
    from sklearn.model_selection import train_test_split

    df = load_dataset("vader-tweet-scores")
    train, test = train_test_split(df, test_size=0.2, random_state=0)
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
    X, X_test = vectorizer.fit_transform(train["text"]), vectorizer.transform(test["text"])
    head = for_task(HEADS["sgd"].factory().set_params(loss="modified_huber"), "regression")
    assert type(head) is LinearSGDRegressor and head.loss == "squared_error"
    head.fit(X, train["label"])
    assert head.score(X_test, test["label"]) > 0.57
    assert head.y_mean_ == pytest.approx(train["label"].mean())
    streamed = LinearSGDRegressor()
    for rows in np.array_split(np.arange(X.shape[0]), 3):
        streamed.partial_fit(X[rows], train["label"].to_numpy()[rows])
    assert streamed.score(X_test, test["label"]) > 0.45


def test_dense_input_is_put_on_one_scale():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 8))
    y = (X[:, 0] > 0).astype(int)
    X[:, 0] *= 1e-4  # the informative column is tiny, a noise column huge
    X[:, 1] *= 1e4
    head = LinearSGDClassifier().fit(X[:300], y[:300])
    assert head.score(X[300:], y[300:]) > 0.95


def test_label_sets_one_model_per_label():
    """movie-genres: each label's probability from its own head, scored as the search scores
    label sets (at the best global threshold)."""
    from sklearn.metrics import f1_score
    from sklearn.preprocessing import MultiLabelBinarizer

    from embedkit.data.targets import split_label_sets, threshold_scores

    df = load_dataset("movie-genres").sample(2000, random_state=0)
    Y = MultiLabelBinarizer().fit_transform(split_label_sets(df["label"]))
    Y = Y[:, Y.sum(axis=0) >= 20]
    X = TfidfVectorizer(min_df=2, sublinear_tf=True).fit_transform(df["text"])
    model = for_task(LinearSGDClassifier(), "multilabel").fit(X[:1600], Y[:1600])
    proba = model.predict_proba(X[1600:])
    assert proba.shape == Y[1600:].shape and ((proba > 0) & (proba < 1)).all()
    assert threshold_scores(proba, Y[1600:]).max() > 0.42
    assert expected_calibration_error(Y[1600:], proba) < 0.06
    assert f1_score(Y[1600:], model.predict(X[1600:]), average="micro") > 0


def test_the_registry_names_it_and_tune_may_try_flamls_loss():
    from embedkit.registry import REPRESENTATIONS, compatible, pair_kind, resolve

    assert resolve("LinearSGDClassifier", "head") == resolve("linearsgd", "head") == "sgd"
    assert HEADS["sgd"].space == {"loss": ["log_loss", "modified_huber"]}
    assert HEADS["sgd"].kind == ""  # the pair's kind is its representation's: sparse for tfidf
    assert compatible(REPRESENTATIONS["tfidf"], HEADS["sgd"]) and pair_kind("tfidf", "sgd") == "sparse"
    assert not compatible(REPRESENTATIONS["glove-seq"], HEADS["sgd"])


def test_saved_model_predicts_the_same_and_keeps_learning(tmp_path, trec):
    from embedkit import load, save
    from embedkit.configure import make_pipeline

    df = load_dataset("trec").iloc[:1500]
    pipe = make_pipeline("tfidf", "sgd").fit(df["text"], df["label"])
    again = load(save(pipe, tmp_path / "model"))
    texts = df["text"].iloc[:50]
    np.testing.assert_array_equal(again.predict_proba(texts), pipe.predict_proba(texts))
    head = again.named_steps["head"]
    X = again.named_steps["features"].transform(df["text"].iloc[:100])
    head.partial_fit(X, df["label"].iloc[:100])  # the loaded SGD model learns on
    assert head.predict_proba(X).shape[0] == 100


def test_bad_parameters_and_targets_name_the_fix(trec):
    X, y, _, _ = trec
    cases = [({"alpha": -1.0}, r"LinearSGDClassifier\(alpha=-1.0\): alpha must be"),
             ({"alphas": ()}, r"alphas=\(\)\): alphas must be a non-empty sequence of positive"),
             ({"loss": "hing"}, "Did you mean 'hinge'"),
             ({"validation_fraction": 1.0}, r"validation_fraction=1.0\): validation_fraction must")]
    for params, message in cases:
        with pytest.raises(ValueError, match=message):
            LinearSGDClassifier(**params).fit(X[:50], y[:50])
    with pytest.raises(ValueError, match=r"y holds label sets\. Use embedkit.registry.for_task"):
        LinearSGDClassifier().fit(X[:4], [["a"], ["b"], ["a", "b"], []])
    import scipy.sparse as sp

    absurd = sp.csr_matrix(np.eye(4)[[0, 1, 2, 3] * 5] * 1e300)  # squares beyond float64
    with pytest.raises(ValueError, match=r"LinearSGDRegressor\(alpha=1e-05\): SGD diverged"):
        LinearSGDRegressor().fit(absurd, [1.0, -1.0, 0.0, 1.0] * 5)
