"""Temperature scaling (`embedkit.heads.calibration`): the temperature a known scale gives back,
an over-confident MLP softened on rows it did not fit on with every decision kept, label sets
with one shared temperature, model folders, and the errors of misuse."""

from __future__ import annotations

import numpy as np
import pytest

from embedkit import TemperatureScaled, load_dataset
from embedkit.data.targets import expected_calibration_error, log_loss
from embedkit.heads.calibration import fit_temperature, tempered


def test_fit_temperature_finds_the_scale_the_scores_were_inflated_by():
    """Labels drawn from softmax(z), scores 3 z: the temperature that undoes it is 3."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(20000, 4))
    p = tempered(z, 1.0)
    y = (p.cumsum(axis=1) > rng.random((len(z), 1))).argmax(axis=1)
    assert fit_temperature(3 * z, y) == pytest.approx(3.0, rel=0.05)
    assert fit_temperature(z / 2, y) == pytest.approx(0.5, rel=0.05)
    # two classes as one decision value, and label sets, by the same rule
    d = rng.normal(size=20000) * 2
    y2 = (rng.random(20000) < tempered(d, 1.0)[:, 1]).astype(int)
    assert fit_temperature(4 * d, y2) == pytest.approx(4.0, rel=0.05)
    labels = (rng.random(z.shape) < tempered(z, 1.0, multilabel=True)).astype(int)
    assert fit_temperature(2 * z, labels, multilabel=True) == pytest.approx(2.0, rel=0.05)
    # a few held-out rows all right cannot make the probabilities exactly 0 and 1
    assert fit_temperature(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0, 1])) > 0.1


@pytest.fixture(scope="module")
def reviews():
    """rotten-tomatoes, 1,500 training, 1,000 calibration and 1,000 test reviews (seed 0)."""
    from sklearn.model_selection import train_test_split

    df = load_dataset("rotten-tomatoes").sample(3500, random_state=0)
    train, rest = train_test_split(df, train_size=1500, random_state=0, stratify=df["label"])
    held, test = train_test_split(rest, train_size=1000, random_state=0, stratify=rest["label"])
    return train, held, test


@pytest.fixture(scope="module")
def overconfident(reviews):
    """TF-IDF + an MLP trained 15 epochs without early stopping: 0.70 accuracy said with
    0.85 confidence (log-loss 0.71, ECE 0.155 on the test reviews when written)."""
    from embedkit.configure import make_pipeline

    train, _, _ = reviews
    pipe = make_pipeline("tfidf", "mlp").set_params(
        features__max_features=5000, head__hidden_layer_sizes=(32,), head__epochs=15,
        head__early_stopping=False)
    return pipe.fit(train["text"], train["label"])


def test_calibration_softens_an_overconfident_mlp_and_keeps_every_decision(reviews, overconfident):
    _, held, test = reviews
    calibrated = TemperatureScaled(overconfident).fit(held["text"], held["label"])
    assert calibrated.temperature_ > 2  # 2.73 when written
    assert calibrated.log_loss_after_ < calibrated.log_loss_before_
    before = overconfident.predict_proba(test["text"])
    after = calibrated.predict_proba(test["text"])
    classes = calibrated.classes_
    assert log_loss(test["label"], after, classes) < 0.85 * log_loss(test["label"], before, classes)
    assert expected_calibration_error(test["label"], after, classes) < 0.06
    assert expected_calibration_error(test["label"], before, classes) > 0.1
    np.testing.assert_array_equal(calibrated.predict(test["text"]), overconfident.predict(test["text"]))
    np.testing.assert_array_equal(after.argmax(axis=1), before.argmax(axis=1))
    np.testing.assert_allclose(after.sum(axis=1), 1.0, rtol=1e-12)
    assert calibrated.score(test["text"], test["label"]) == overconfident.score(test["text"], test["label"])


def test_a_calibrated_pipeline_round_trips_through_a_model_folder(tmp_path, reviews, overconfident):
    import json

    from embedkit import load, save

    _, held, test = reviews
    calibrated = TemperatureScaled(overconfident).fit(held["text"], held["label"])
    folder = save(calibrated, tmp_path / "model")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["estimator"] == "embedkit.heads.calibration.TemperatureScaled"
    assert manifest["root"]["state"]["dict"]["temperature_"] == calibrated.temperature_
    again = load(folder)
    np.testing.assert_array_equal(again.predict_proba(test["text"]), calibrated.predict_proba(test["text"]))
    np.testing.assert_array_equal(again.predict(test["text"]), calibrated.predict(test["text"]))


def test_label_sets_share_one_temperature_and_keep_their_decisions():
    """movie-genres: an MLP's label probabilities, over-confident after 20 epochs; one
    temperature for every label keeps the order of all of them."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import MultiLabelBinarizer

    from embedkit import MLPClassifier
    from embedkit.data.targets import split_label_sets

    df = load_dataset("movie-genres").sample(2400, random_state=0)
    Y = MultiLabelBinarizer().fit_transform(split_label_sets(df["label"]))
    Y = Y[:, Y.sum(axis=0) >= 30]
    X = TfidfVectorizer(min_df=2).fit_transform(df["text"])
    model = MLPClassifier(hidden_layer_sizes=(32,), epochs=20, early_stopping=False,
                          threshold=0.3).fit(X[:1200], Y[:1200])
    calibrated = TemperatureScaled(model).fit(X[1200:1800], Y[1200:1800])
    assert calibrated.multilabel_ and calibrated.temperature_ > 1
    test, truth = X[1800:], Y[1800:]
    before, after = model.predict_proba(test), calibrated.predict_proba(test)
    assert log_loss(truth, after) < log_loss(truth, before)
    np.testing.assert_array_equal(calibrated.predict(test), model.predict(test))
    order = np.argsort(before, axis=None, kind="stable")
    assert (np.diff(after.ravel()[order]) >= -1e-12).all()  # one monotone map for every label


def test_misuse_is_named_with_the_fix(reviews, overconfident):
    from embedkit import MLPClassifier

    _, held, _ = reviews
    with pytest.raises(ValueError, match=r"estimator=None\): pass the fitted classifier"):
        TemperatureScaled().fit(held["text"], held["label"])
    with pytest.raises(ValueError, match="MLPClassifier is not fitted; fit it on training rows"):
        TemperatureScaled(MLPClassifier()).fit(np.ones((4, 3)), [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"y holds \['maybe'\], which the estimator never learnt"):
        TemperatureScaled(overconfident).fit(held["text"][:3], ["maybe", held["label"].iloc[1],
                                                                held["label"].iloc[2]])
    with pytest.raises(ValueError, match="X has 3 rows but y has 2"):
        TemperatureScaled(overconfident).fit(held["text"][:3], held["label"][:2])


def test_the_top_class_map_mends_what_one_temperature_cannot_and_keeps_every_decision():
    """TF-IDF + LR on 20 classes of 20newsgroups (2,000 documents each to fit, calibrate and
    test, seed 0): its probabilities are timid, and a temperature alone leaves a calibration
    error of 0.048 on the test documents (when written); the top class's map after it lowers
    that (0.031) and the log-loss, with every prediction the model's own."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline

    df = load_dataset("20newsgroups").sample(6000, random_state=0)
    train, rest = train_test_split(df, train_size=2000, random_state=0, stratify=df["label"])
    held, test = train_test_split(rest, train_size=2000, random_state=0, stratify=rest["label"])
    model = make_pipeline(TfidfVectorizer(sublinear_tf=True, min_df=2),
                          LogisticRegression(max_iter=1000)).fit(train["text"], train["label"])
    scaled = TemperatureScaled(model).fit(held["text"], held["label"])
    mapped = TemperatureScaled(model, top_label=True).fit(held["text"], held["label"])
    assert scaled.top_ is None and mapped.temperature_ == scaled.temperature_ < 0.5
    a, b = mapped.top_
    assert a > 0 and mapped.log_loss_after_ < scaled.log_loss_after_
    y = test["label"]
    p_scaled, p_mapped = scaled.predict_proba(test["text"]), mapped.predict_proba(test["text"])
    np.testing.assert_allclose(p_mapped.sum(axis=1), 1.0)
    np.testing.assert_array_equal(p_mapped.argmax(axis=1), p_scaled.argmax(axis=1))
    np.testing.assert_array_equal(mapped.predict(test["text"]), model.predict(test["text"]))
    classes = model.classes_
    assert expected_calibration_error(y, p_mapped, classes) < expected_calibration_error(
        y, p_scaled, classes) - 0.01
    assert log_loss(y, p_mapped, classes) < log_loss(y, p_scaled, classes)


def test_the_top_class_map_keeps_the_top_class_on_top_and_the_others_ratios():
    """A map that would pull the top class below the second is stopped just above it; the
    other classes keep their ratios; rows whose other classes had nothing share the rest
    equally; no map, the probabilities as they are."""
    from embedkit.heads.calibration import top_mapped

    proba = np.array([[0.5, 0.3, 0.2], [0.9, 0.06, 0.04], [1.0, 0.0, 0.0]])
    down = top_mapped(proba, (1.0, -5.0))  # every top class made far less sure
    np.testing.assert_array_equal(down.argmax(axis=1), [0, 0, 0])
    np.testing.assert_allclose(down.sum(axis=1), 1.0)
    np.testing.assert_allclose(down[:2, 1] / down[:2, 2], [1.5, 1.5])
    assert down[0, 0] == pytest.approx(down[0, 1], abs=1e-6) and down[2, 1] == down[2, 2] > 0
    assert top_mapped(proba, None) is not None and np.array_equal(top_mapped(proba, None), proba)
