"""NBLogisticRegression (the registry's ``nblr``): NBSVM's classifier, a two-class logistic
regression per class on the features times that class's log-count ratios, on BBC News."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from embedkit import LogisticRegressionHead, NBLogisticRegression, TfidfEmbedder, load, save
from embedkit.registry import HEADS, REPRESENTATIONS, compatible, pair_pipeline

FEATURES = {"ngram_range": (1, 2), "min_df": 2, "sublinear_tf": True}  # the registry's ngrams


@pytest.fixture(scope="module")
def slice_(bbc_split):
    """600 training and 300 test articles of the five topics, stratified (seed 0)."""
    train, test = bbc_split
    train = train.groupby("label").sample(120, random_state=0).sample(frac=1, random_state=0)
    test = test.groupby("label").sample(60, random_state=0)
    return list(train.text), train.label.to_numpy(), list(test.text), test.label.to_numpy()


@pytest.fixture(scope="module")
def fitted(slice_):
    docs, y, _, _ = slice_
    return make_pipeline(TfidfEmbedder(**FEATURES), NBLogisticRegression()).fit(docs, y)


def test_two_classes_are_nbsvm_features_then_one_logistic_regression(slice_):
    """Two classes: the representation's NBSVM features and the logistic head, exactly."""
    docs, y, test, y_test = slice_
    two, two_test = np.isin(y, ["sports", "tech"]), np.isin(y_test, ["sports", "tech"])
    docs, y = [d for d, k in zip(docs, two, strict=True) if k], y[two]
    test = [d for d, k in zip(test, two_test, strict=True) if k]
    ours = make_pipeline(TfidfEmbedder(**FEATURES), NBLogisticRegression()).fit(docs, y)
    stacked = make_pipeline(TfidfEmbedder(**FEATURES, log_count_ratio=True), LogisticRegressionHead(
        Cs=(0.25, 1.0, 4.0, 16.0, 64.0), scale=False)).fit(docs, y)
    head = ours[-1]
    assert len(head.estimators_) == 1 and head.ratios_.shape == stacked[0].ratios_.shape
    np.testing.assert_allclose(head.ratios_, stacked[0].ratios_, rtol=1e-6)
    np.testing.assert_allclose(ours.predict_proba(test), stacked.predict_proba(test), atol=1e-5)


def test_each_class_reads_its_own_ratios_and_scores_with_the_plain_baseline(slice_, fitted):
    docs, y, test, y_test = slice_
    head, terms = fitted[-1], fitted[0].dim_
    features = TfidfEmbedder(**FEATURES, log_count_ratio=True).fit(docs, y)
    assert list(head.classes_) == sorted(set(y)) and len(head.estimators_) == 5
    np.testing.assert_allclose(head.ratios_, features.ratios_, rtol=1e-6)  # one row per class
    # classes x terms coefficients, where a multinomial model over the stacked blocks has 25 x
    assert sum(m.model_.coef_.size for m in head.estimators_) == 5 * terms
    proba = fitted.predict_proba(test)
    assert proba.shape == (300, 5) and np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    accuracy = np.mean(fitted.predict(test) == y_test)
    plain = make_pipeline(TfidfEmbedder(**FEATURES), LogisticRegression(max_iter=3000)).fit(docs, y)
    assert accuracy > 0.95 and accuracy >= np.mean(plain.predict(test) == y_test) - 0.02


def test_the_registry_pair_saves_and_loads_to_the_same_probabilities(slice_, fitted, tmp_path):
    docs, y, test, _ = slice_
    assert type(HEADS["nblr"].factory()) is NBLogisticRegression
    # it pairs with the representations whose features are never negative: counts and TF-IDF
    fits = [r for r, e in REPRESENTATIONS.items() if compatible(e, HEADS["nblr"])]
    assert fits == ["tfidf", "bow", "ngrams"]
    again = load(save(fitted, tmp_path / "model"))
    np.testing.assert_array_equal(again.predict_proba(test), fitted.predict_proba(test))
    pipe = pair_pipeline(TfidfEmbedder(**FEATURES), HEADS["nblr"].factory())
    assert pipe.fit(docs[:100], y[:100]).predict(test[:3]).shape == (3,)


def test_negative_features_are_refused_naming_the_row_and_the_fix():
    X = np.abs(np.random.default_rng(0).normal(size=(8, 4)))
    X[5, 2] = -0.1
    with pytest.raises(ValueError, match=r"\(row 5\).*after a 'tfidf' or 'bow'.*'logreg'"):
        NBLogisticRegression().fit(X, [0, 1] * 4)


def test_tunes_default_pair_learns_label_sets_once_per_label_and_leaves_numbers(slice_):
    """``ngrams`` + ``nblr`` among tune's defaults: on label sets one NBSVM per label (where the
    ``nbsvm`` representation's one block per class was left out), on a number left out, said."""
    from embedkit._counterparts import for_task
    from embedkit.tuning._inputs import pairs_for_task
    from embedkit.tuning._settings import DEFAULT_PAIRS

    assert ("ngrams", "nblr") in DEFAULT_PAIRS
    kept, notes = pairs_for_task(DEFAULT_PAIRS, "multilabel")
    assert ("ngrams", "nblr") in kept and notes == []
    kept, notes = pairs_for_task(DEFAULT_PAIRS, "regression")
    assert ("ngrams", "nblr") not in kept and any(n.startswith("nblr: no regression form") for n in notes)
    docs, y, test, y_test = slice_
    labels = ["business", "politics"]  # two labels a document has or not: its topic among them
    Y, Y_test = (np.column_stack([t == lab for lab in labels]).astype(int) for t in (y, y_test))
    pipe = for_task(pair_pipeline(REPRESENTATIONS["ngrams"].factory(), HEADS["nblr"].factory()),
                    "multilabel").fit(docs, Y)
    predicted = pipe.predict(test)
    assert predicted.shape == Y_test.shape and set(np.unique(predicted)) <= {0, 1}
    assert (predicted == Y_test).mean(axis=0).min() > 0.93
    assert [len(m.estimators_) for m in pipe[-1].estimators_] == [1, 1]  # one two-class model each
