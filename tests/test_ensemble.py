"""EnsembleClassifier (issue 13): soft vote and stacking over registry pairs, against the same
pipelines built by hand."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import Pipeline
from sklearn.pipeline import make_pipeline as sk_pipeline

from embedkit import EnsembleClassifier, TfidfEmbedder, registry
from embedkit.configure import make_pipeline

TOY = ["good good fun", "good film", "bad film", "bad bad plot", "fun plot"]
TOY_Y = ["pos", "pos", "neg", "neg", "pos"]


def test_ensemble_vote_is_the_mean_of_members(tweets):
    X, y, X_test, _ = tweets
    ens = EnsembleClassifier(members=("nbsvm:logreg-cv", "tfidf:logreg-cv"), method="vote")
    proba = Pipeline([("features", "passthrough"), ("head", ens)]).fit(X, y).predict_proba(X_test)
    members = [make_pipeline(r, "logreg-cv").fit(X, y) for r in ("nbsvm", "tfidf")]
    want = np.mean([m.predict_proba(X_test) for m in members], axis=0)
    np.testing.assert_allclose(proba, want, atol=1e-6)
    assert ens.classes_.tolist() == ["negative", "positive"]


def test_ensemble_stack_learns_on_out_of_fold_probabilities(tweets):
    X, y, X_test, _ = tweets
    ens = EnsembleClassifier(members=("nbsvm:logreg-cv", "tfidf:logreg-cv"), cv=3, C=2.0).fit(X, y)
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    oof = np.column_stack([
        cross_val_predict(make_pipeline(r, "logreg-cv"), X, y, cv=folds,
                          method="predict_proba")[:, 1] for r in ("nbsvm", "tfidf")])
    final = LogisticRegression(C=2.0, max_iter=1000).fit(oof, y)
    np.testing.assert_allclose(ens.model_.final_estimator_.coef_, final.coef_, rtol=1e-4)
    members = np.column_stack([make_pipeline(r, "logreg-cv").fit(X, y)
                               .predict_proba(X_test)[:, 1] for r in ("nbsvm", "tfidf")])
    np.testing.assert_allclose(ens.predict_proba(X_test), final.predict_proba(members), atol=1e-6)


def test_finetune_seeds_is_finetune_short_twice_with_two_seeds():
    ens = registry.HEADS["finetune-seeds"].factory()
    assert ens.method == "vote" and [name for name, _ in ens.members] == [
        "finetune-short-seed0", "finetune-short-seed1"]
    want = registry.HEADS["finetune-short"].factory().get_params()
    for seed, (_, member) in enumerate(ens.members):
        assert member.named_steps["features"] == "passthrough"
        assert member.named_steps["head"].get_params() == {**want, "random_state": seed}


def test_vote_over_estimator_members_saves_and_loads(tmp_path):
    from embedkit import load, save

    members = tuple((f"seed{s}", make_pipeline("tfidf", "mlp", [
        f"head.random_state={s}", "head.epochs=3"])) for s in (0, 1))
    pipe = Pipeline([("features", "passthrough"),
                     ("head", EnsembleClassifier(members=members, method="vote"))]).fit(
        TOY * 3, TOY_Y * 3)
    a, b = (m.predict_proba(TOY) for m in pipe.named_steps["head"].model_.estimators_)
    assert np.abs(a - b).max() > 1e-3  # the seeds give two different members
    np.testing.assert_allclose(pipe.predict_proba(TOY), (a + b) / 2, atol=1e-6)
    save(pipe, tmp_path / "model")
    np.testing.assert_allclose(load(tmp_path / "model").predict_proba(TOY),
                               pipe.predict_proba(TOY), atol=1e-7)


def test_a_vote_of_prefit_members_that_know_different_classes_gives_each_class_its_column():
    """A prefit member that never saw a class (fitted on a subsample without it) gives it 0 in
    the vote, weighted as set, instead of failing inside scikit-learn's vote."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.frozen import FrozenEstimator

    docs = TOY * 3 + ["dull plot", "dull film", "dull dull"] * 3
    y = TOY_Y * 3 + ["meh"] * 9
    every = sk_pipeline(TfidfVectorizer(), LogisticRegression()).fit(docs, y)
    two = sk_pipeline(TfidfVectorizer(), LogisticRegression()).fit(TOY * 3, TOY_Y * 3)
    vote = EnsembleClassifier(members=(("every", FrozenEstimator(every)), ("two", FrozenEstimator(two))),
                              method="vote", weights=[3, 1]).fit(docs, y)
    assert list(vote.classes_) == ["meh", "neg", "pos"] and list(two.classes_) == ["neg", "pos"]
    proba = vote.predict_proba(["dull film", "good fun"])
    wide = np.column_stack([np.zeros(2), two.predict_proba(["dull film", "good fun"])])
    np.testing.assert_allclose(proba, (3 * every.predict_proba(["dull film", "good fun"]) + wide) / 4)
    assert list(vote.predict(["dull dull"])) == ["meh"]


def test_ensemble_errors():
    with pytest.raises(ValueError, match="passthrough"):
        EnsembleClassifier().fit(np.ones((4, 3)), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="not a registry pair"):
        EnsembleClassifier(members=("tfidf:nope", "bow:logreg")).fit(TOY, TOY_Y)
    with pytest.raises(ValueError, match="at least two"):
        EnsembleClassifier(members=("tfidf:logreg",)).fit(TOY, TOY_Y)
    with pytest.raises(ValueError, match="method"):
        EnsembleClassifier(method="mean").fit(TOY, TOY_Y)
    with pytest.raises(ValueError, match="cv"):
        EnsembleClassifier(cv=1).fit(TOY, TOY_Y)
    ok = EnsembleClassifier(members=("bow:logreg", ("tfidf", sk_pipeline(
        TfidfEmbedder(), LogisticRegression()))), method="vote").fit(TOY, TOY_Y)
    assert set(ok.predict(["good fun"])) <= {"pos", "neg"}
