"""Multi-label targets through every classifier, on real data: IMDb film titles and their genres
(the ``movie-genres`` dataset, a list of 1-5 of 7 genres per title).

scikit-learn's conventions: ``y`` is a 0/1 indicator matrix or a list of label lists,
``predict`` gives the int indicator matrix, ``predict_proba`` each label's probability.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.preprocessing import MultiLabelBinarizer

import embedkit
from embedkit import (
    AttentionClassifier,
    ConvClassifier,
    EnsembleClassifier,
    GloveEmbedder,
    MLPClassifier,
    RNNClassifier,
    SelfAttentionClassifier,
    TfidfEmbedder,
    TransformerClassifier,
)
from embedkit.data.datasets import MOVIE_GENRES, load_dataset
from embedkit.heads import LogisticRegressionHead

GENRES = sorted(MOVIE_GENRES)


@pytest.fixture(scope="session")
def movies():
    """(train, test) slices of movie-genres, seeded: 1,500 and 500 titles."""
    df = load_dataset("movie-genres", quick=False).sample(2000, random_state=0)
    return df.iloc[:1500].reset_index(drop=True), df.iloc[1500:].reset_index(drop=True)


@pytest.fixture(scope="session")
def small(movies):
    """120 training titles: label lists, the same as an indicator matrix, TF-IDF features and
    GloVe token vectors."""
    train = movies[0].iloc[:120]
    lists = train["label"].tolist()
    indicator = MultiLabelBinarizer(classes=GENRES).fit_transform(lists)
    docs = train["text"].tolist()
    return {"docs": docs, "lists": lists, "indicator": indicator,
            "tfidf": TfidfEmbedder().fit_transform(docs),
            "glove": GloveEmbedder(output="sequence", max_length=16).fit_transform(docs)}


def test_dataset_is_multilabel_real_and_pinned():
    df = load_dataset("movie-genres")
    assert len(df) == 43043 and df["text"].is_unique
    counts = collections.Counter(g for row in df["label"] for g in row)
    assert counts == {"Drama": 20201, "Comedy": 16296, "Short": 8843, "Action": 4346,
                      "Romance": 4320, "Animation": 3541, "Documentary": 3360}
    sizes = df["label"].map(len)
    assert sizes.min() == 1 and sizes.max() == 5 and (sizes > 1).sum() == 14435
    quick = load_dataset("movie-genres", quick=True)
    assert len(quick) == 300 and all(isinstance(v, list) for v in quick["label"])


HEADS = [
    (MLPClassifier, "tfidf", {"epochs": 3}),
    (LogisticRegressionHead, "tfidf", {"Cs": (1.0,), "cv": 2}),
    (ConvClassifier, "glove", {"epochs": 2, "filters": 8, "kernel_sizes": (2,)}),
    (RNNClassifier, "glove", {"epochs": 2, "hidden_size": 8}),
    (AttentionClassifier, "glove", {"epochs": 2}),
    (SelfAttentionClassifier, "glove", {"epochs": 2, "num_layers": 1, "nhead": 2}),
]


@pytest.mark.parametrize("cls, features, params", HEADS, ids=[h[0].__name__ for h in HEADS])
def test_every_head_takes_an_indicator_matrix_or_label_lists(cls, features, params, small):
    X = small[features]
    by_lists = cls(**params).fit(X, small["lists"])
    by_matrix = cls(**params).fit(X, small["indicator"])
    assert by_lists.classes_.tolist() == GENRES
    assert by_matrix.classes_.tolist() == list(range(len(GENRES)))
    proba = by_lists.predict_proba(X)
    assert proba.shape == (120, len(GENRES)) and ((proba >= 0) & (proba <= 1)).all()
    assert not np.allclose(proba.sum(axis=1), 1.0)  # one probability per label, not a softmax
    # the two forms of the same target train the same model (same columns, same seed)
    np.testing.assert_allclose(by_matrix.predict_proba(X), proba, rtol=1e-5, atol=1e-6)
    pred = by_lists.predict(X)
    assert pred.dtype == np.int64 and pred.shape == (120, len(GENRES))
    np.testing.assert_array_equal(pred, (proba > by_lists.threshold_).astype(int))
    low = clone(by_lists).set_params(threshold=0.2).fit(X, small["lists"]).predict(X)
    high = clone(by_lists).set_params(threshold=0.6).fit(X, small["lists"]).predict(X)
    assert low.sum() > high.sum()  # a lower threshold predicts more labels


def test_finetuned_transformer_multilabel_and_its_model_folder(small, tmp_path):
    docs, lists = small["docs"][:24], small["lists"][:24]
    clf = TransformerClassifier(epochs=1, max_length=16, batch_size=8, device="cpu")
    clf.fit(docs, lists)
    proba = clf.predict_proba(docs)
    assert clf.classes_.tolist() == sorted({g for row in lists for g in row})
    assert proba.shape == (24, len(clf.classes_)) and ((proba > 0) & (proba < 1)).all()
    assert clf.predict(docs).dtype == np.int64
    back = TransformerClassifier.load(clf.save_pretrained(tmp_path / "ft"), device="cpu")
    assert clf.threshold_ in np.round(np.arange(0.05, 0.951, 0.05), 2)  # tuned by default
    assert back.multilabel_ and back.threshold_ == clf.threshold_
    np.testing.assert_allclose(back.predict_proba(docs), proba, atol=1e-5)


def test_threshold_tune_picks_the_best_validation_f1(small, movies):
    from sklearn.metrics import f1_score

    from embedkit.data.targets import tune_threshold

    clf = MLPClassifier(epochs=5, threshold="tune", validation_fraction=0.25)
    clf.fit(small["tfidf"], small["lists"])
    grid = np.round(np.arange(0.05, 0.951, 0.05), 2)
    assert clf.threshold_ in grid
    proba = clf.predict_proba(small["tfidf"])
    np.testing.assert_array_equal(clf.predict(small["tfidf"]), (proba > clf.threshold_).astype(int))
    # on real held-out probabilities the tuned value is the grid's micro-F1 maximum
    test = movies[1].iloc[:200]
    y = MultiLabelBinarizer(classes=GENRES).fit_transform(test["label"])
    rep = TfidfEmbedder().fit(small["docs"])
    held = MLPClassifier(epochs=5, threshold=0.5).fit(rep.transform(small["docs"]), small["lists"])
    p = held.predict_proba(rep.transform(test["text"].tolist()))
    f1 = [f1_score(y, p > t, average="micro", zero_division=0.0) for t in grid]
    best = tune_threshold(p, y)
    assert f1[list(grid).index(best)] == pytest.approx(max(f1))
    assert max(f1) > f1[list(grid).index(0.5)]  # rare labels: 0.5 is not the best here


def _micro_f1(model, X, y):
    from sklearn.metrics import f1_score

    return f1_score(y, model.predict(X), average="micro")


@pytest.fixture(scope="session")
def movie_tfidf(movies):
    """TF-IDF features and indicator targets of the 1,500 / 500 movie-genres titles."""
    train, test = movies
    binarizer = MultiLabelBinarizer(classes=GENRES)
    rep = TfidfEmbedder().fit(train["text"].tolist())
    return (rep.transform(train["text"].tolist()), rep.transform(test["text"].tolist()),
            binarizer.fit_transform(train["label"]), binarizer.transform(test["label"]))


def test_mlp_and_logreg_beat_a_dummy_on_real_titles(movies, movie_tfidf):
    from sklearn.dummy import DummyClassifier

    train = movies[0]
    X_train, X_test, y_train, y_test = movie_tfidf
    dummy = DummyClassifier(strategy="stratified", random_state=0).fit(X_train, y_train)
    floor = _micro_f1(dummy, X_test, y_test)
    mlp = MLPClassifier(epochs=10, threshold="tune").fit(X_train, train["label"].tolist())
    logreg = LogisticRegressionHead(Cs=(1.0, 10.0), cv=2, threshold=0.3).fit(X_train, y_train)
    assert _micro_f1(mlp, X_test, y_test) > floor + 0.05
    assert _micro_f1(logreg, X_test, y_test) > floor + 0.05


def test_logreg_head_tunes_its_threshold_out_of_fold(movie_tfidf):
    """By default the threshold is tuned on out-of-fold probabilities: with rare genres it is
    below 0.5 and beats 0.5 on held-out titles; the probabilities themselves do not change."""
    X_train, X_test, y_train, y_test = movie_tfidf
    tuned = LogisticRegressionHead(Cs=(1.0, 10.0)).fit(X_train, y_train)
    fixed = clone(tuned).set_params(threshold=0.5).fit(X_train, y_train)
    assert tuned.threshold_ < 0.5 and fixed.threshold_ == 0.5
    np.testing.assert_allclose(tuned.predict_proba(X_test), fixed.predict_proba(X_test))
    assert _micro_f1(tuned, X_test, y_test) > _micro_f1(fixed, X_test, y_test) + 0.05


def test_grid_search_with_f1_samples_and_clone(small):
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline

    pipe = make_pipeline(TfidfEmbedder(), MLPClassifier(epochs=3))
    search = GridSearchCV(pipe, {"mlpclassifier__threshold": [0.2, 0.5]}, cv=3,
                          scoring="f1_samples", error_score="raise")
    search.fit(small["docs"], small["indicator"])
    assert search.best_params_["mlpclassifier__threshold"] in (0.2, 0.5)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert search.predict(small["docs"][:5]).shape == (5, len(GENRES))
    copy = clone(MLPClassifier(threshold="tune"))
    assert copy.get_params()["threshold"] == "tune" and not hasattr(copy, "threshold_")


@pytest.mark.parametrize("head", [MLPClassifier(epochs=3, threshold=0.3),
                                  LogisticRegressionHead(Cs=(1.0,), threshold=0.3),
                                  LogisticRegressionHead(Cs=(1.0,), threshold=0.3, scoring="f1")],
                         ids=["MLPClassifier", "LogisticRegressionHead", "LogisticRegressionHead-f1"])
def test_save_and_load_give_identical_predictions(head, small, tmp_path):
    from sklearn.pipeline import make_pipeline

    pipe = make_pipeline(TfidfEmbedder(), head).fit(small["docs"], small["lists"])
    back = embedkit.load(embedkit.save(pipe, tmp_path / "model"))
    assert back[-1].classes_.tolist() == GENRES and back[-1].threshold_ == 0.3
    np.testing.assert_array_equal(back.predict(small["docs"]), pipe.predict(small["docs"]))
    np.testing.assert_array_equal(back.predict_proba(small["docs"]),
                                  pipe.predict_proba(small["docs"]))


def test_stacking_ensemble_is_multilabel_and_voting_is_refused(small):
    from sklearn.pipeline import make_pipeline

    def member(**params):
        return make_pipeline(TfidfEmbedder(**params), LogisticRegressionHead(Cs=(1.0,), cv=2))

    members = (("words", member()), ("counts", member(weighting="count")))
    ens = EnsembleClassifier(members=members, cv=2).fit(small["docs"], small["lists"])
    assert ens.classes_.tolist() == GENRES
    proba = ens.predict_proba(small["docs"][:10])
    assert proba.shape == (10, len(GENRES)) and ((proba >= 0) & (proba <= 1)).all()
    np.testing.assert_array_equal(ens.predict(small["docs"][:10]), (proba > 0.5).astype(int))
    # a vote on label sets: the weighted mean of the members' label probabilities, thresholded
    vote = EnsembleClassifier(members=members, method="vote", weights=[3, 1], threshold=0.3).fit(
        small["docs"], small["lists"])
    each = [m.fit(small["docs"], small["lists"]).predict_proba(small["docs"][:10])
            for _, m in members]
    mean = (3 * each[0] + each[1]) / 4
    assert vote.classes_.tolist() == GENRES
    np.testing.assert_allclose(vote.predict_proba(small["docs"][:10]), mean)
    np.testing.assert_array_equal(vote.predict(small["docs"][:10]), (mean > 0.3).astype(int))
    with pytest.raises(ValueError, match=r"members \['nbsvm\+sgd'\] cannot take multi-label"):
        EnsembleClassifier(members=("nbsvm:sgd", "tfidf:logreg"), cv=2).fit(
            small["docs"], small["lists"])


def test_bad_multilabel_input_is_named(small):
    from sklearn.utils._param_validation import InvalidParameterError

    X = small["tfidf"]
    mixed = ["Drama"] * 120
    mixed[7] = ["Drama", "Comedy"]
    with pytest.raises(ValueError, match=r"row 0 is one label but row 7 is \['Drama', 'Comedy'\]"):
        MLPClassifier(epochs=1).fit(X, mixed)
    empty_column = np.c_[small["indicator"], np.zeros(120, dtype=int)]
    with pytest.raises(ValueError, match=r"label 7 \(column 7 of y\) is on no row"):
        LogisticRegressionHead().fit(X, empty_column)
    with pytest.raises(ValueError, match="label 7 .* is on no row"):
        MLPClassifier(epochs=1).fit(X, empty_column)
    with pytest.raises(InvalidParameterError, match=r"MLPClassifier\(threshold=1.5\): threshold"):
        MLPClassifier(threshold=1.5).fit(X, small["lists"])
    with pytest.raises(InvalidParameterError, match=r"LogisticRegressionHead\(threshold=0\): threshold"):
        LogisticRegressionHead(threshold=0).fit(X, small["lists"])
    with pytest.raises(ValueError, match="class_weight='balanced'"):
        MLPClassifier(class_weight={"Drama": 2.0}).fit(X, small["lists"])
    lists = list(small["lists"])
    lists[3] = ["Drama", None]
    with pytest.raises(ValueError, match="missing label.* positions 3"):
        MLPClassifier(epochs=1).fit(X, lists)


def test_balanced_class_weight_predicts_more_rare_labels(small):
    plain = MLPClassifier(epochs=5).fit(small["tfidf"], small["lists"])
    balanced = MLPClassifier(epochs=5, class_weight="balanced").fit(small["tfidf"], small["lists"])
    assert balanced.predict(small["tfidf"]).sum() > plain.predict(small["tfidf"]).sum()


def test_compare_reports_f1_on_a_multilabel_dataset(movies, tmp_path):
    from embedkit.compare import run_compare

    df = movies[0].iloc[:160]
    results = run_compare(df, representations=["tfidf"], heads=["logreg", "mlp"], folds=2,
                          output=tmp_path, progress=False, n_jobs=1, dataset_name="movies-160")
    assert results.attrs["metrics"] == ["f1_micro", "f1_macro", "f1_samples"]
    assert results.attrs["protocol"] == "2-fold CV"
    rows = results.set_index(["representation", "head"])
    assert {("baseline-tfidf", "plain-lr"), ("baseline", "majority-class"),
            ("tfidf", "mlp")} <= set(rows.index)
    scores = results[["f1_micro_mean", "f1_macro_mean", "f1_samples_mean"]].to_numpy()
    assert ((scores >= 0) & (scores <= 1)).all() and scores.max() > 0.2
    assert "micro-F1" in (tmp_path / "results.md").read_text()


def test_a_searched_models_settings_reach_every_label_model_and_a_variant_a_task_drops_is_not_tried(small):
    """`tune`'s candidates set the registry head's own parameters: on label sets each per-label
    model gets them (a `loss` variant of SGD once crashed the search: the setting went to the
    one-vs-rest wrapper, which has no `loss`); a number's regressor drops a classifier's setting
    it does not take, so such a variant is not tried (it would be its first under another name)."""
    from embedkit.tuning._candidate import Candidate, Plan, build_pipeline
    from embedkit.tuning._schedule import holds_settings

    pipe = build_pipeline("tfidf", "sgd", {"head__loss": "modified_huber", "features__min_df": 1},
                          None, task="multilabel").fit(small["docs"], small["indicator"])
    models = pipe.named_steps["head"].estimators_
    assert len(models) == len(GENRES) and {m.loss for m in models} == {"modified_huber"}
    assert pipe.predict(small["docs"][:5]).shape == (5, len(GENRES))

    def sgd(task, **params):
        return Candidate(representation="tfidf", head="sgd", plan=Plan(params=params), task=task)

    assert holds_settings(sgd("multilabel", head__loss="modified_huber"))
    assert not holds_settings(sgd("regression", head__loss="modified_huber"))
    assert holds_settings(sgd("regression", features__min_df=1))
