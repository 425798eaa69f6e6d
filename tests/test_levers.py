"""The accuracy levers of issue 13: NBSVM log-count-ratio features and the ensemble head."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import Pipeline, make_pipeline

from embedkit import EnsembleClassifier, TfidfEmbedder, load_dataset, registry

TOY = ["good good fun", "good film", "bad film", "bad bad plot", "fun plot"]
TOY_Y = ["pos", "pos", "neg", "neg", "pos"]


def _hand_ratio(counts: np.ndarray, inside: np.ndarray, alpha: float) -> np.ndarray:
    p = counts[inside].sum(axis=0) + alpha
    q = counts[~inside].sum(axis=0) + alpha
    return np.log(p / p.sum()) - np.log(q / q.sum())


def test_nbsvm_binary_equals_hand_computation():
    emb = TfidfEmbedder(weighting="count", log_count_ratio=True, nb_alpha=0.5).fit(TOY, TOY_Y)
    vocab = emb.vectorizer_.vocabulary_
    counts = np.zeros((len(TOY), len(vocab)))
    for i, doc in enumerate(TOY):
        for word in doc.split():
            counts[i, vocab[word]] += 1
    r = _hand_ratio(counts, np.array(TOY_Y) == "pos", 0.5)
    assert emb.classes_.tolist() == ["neg", "pos"]
    np.testing.assert_allclose(emb.ratios_, r[None, :], rtol=1e-6)
    # "good" only in positive documents, "bad" only in negative ones
    assert emb.ratios_[0, vocab["good"]] > 0 > emb.ratios_[0, vocab["bad"]]
    out = emb.transform(["good bad bad", "unseen words"]).toarray()
    want = np.zeros((2, len(vocab)))
    want[0, vocab["good"]], want[0, vocab["bad"]] = r[vocab["good"]], 2 * r[vocab["bad"]]
    np.testing.assert_allclose(out, want, rtol=1e-6)
    assert emb.dim_ == len(vocab)
    assert emb.get_feature_names_out()[vocab["good"]] == "pos:good"


def test_nbsvm_multiclass_blocks_one_vs_rest():
    y = ["a", "b", "c", "a", "b"]
    emb = TfidfEmbedder(weighting="binary", log_count_ratio=True).fit(TOY, y)
    vocab = emb.vectorizer_.vocabulary_
    binary = np.zeros((len(TOY), len(vocab)))
    for i, doc in enumerate(TOY):
        for word in doc.split():
            binary[i, vocab[word]] = 1
    assert emb.ratios_.shape == (3, len(vocab)) and emb.dim_ == 3 * len(vocab)
    for k, label in enumerate("abc"):
        np.testing.assert_allclose(emb.ratios_[k], _hand_ratio(binary, np.array(y) == label, 1.0),
                                   rtol=1e-6)
    out = emb.transform(TOY[:1]).toarray().reshape(3, len(vocab))
    np.testing.assert_allclose(out, binary[:1] * emb.ratios_, rtol=1e-6)
    names = emb.get_feature_names_out()
    assert names[0].startswith("a:") and names[-1].startswith("c:")


@pytest.mark.parametrize("y, match", [(None, "supervised"), (["pos"] * 5, "two classes"),
                                      (["pos", "neg"], "one label per document")])
def test_nbsvm_needs_labels(y, match):
    with pytest.raises(ValueError, match=match):
        TfidfEmbedder(log_count_ratio=True).fit(TOY, y)


def test_nbsvm_rejects_bad_alpha():
    with pytest.raises(ValueError, match="nb_alpha"):
        TfidfEmbedder(log_count_ratio=True, nb_alpha=0).fit(TOY, TOY_Y)


@pytest.fixture(scope="module")
def tweets():
    """A stratified slice of vader-tweets: 600 training and 300 test tweets."""
    from sklearn.model_selection import train_test_split

    df = load_dataset("vader-tweets")
    train, rest = train_test_split(df, train_size=600, stratify=df["label"], random_state=0)
    test, _ = train_test_split(rest, train_size=300, stratify=rest["label"], random_state=0)
    return (train["text"].to_numpy(object), train["label"].to_numpy(),
            test["text"].to_numpy(object), test["label"].to_numpy())


def test_nbsvm_ratios_on_real_tweets(tweets):
    X, y, X_test, y_test = tweets
    emb = TfidfEmbedder(ngram_range=(1, 2), sublinear_tf=True, log_count_ratio=True).fit(X, y)
    assert emb.classes_.tolist() == ["negative", "positive"]
    ratio = dict(zip(emb.vectorizer_.get_feature_names_out(), emb.ratios_[0], strict=True))
    assert min(ratio["love"], ratio["great"], ratio["happy"]) > 0
    assert max(ratio["hate"], ratio["sad"], ratio["worst"]) < 0
    # the registry pair runs as a Pipeline that passes y to the representation
    pipe = registry.make_pipeline("nbsvm", "logreg-cv").fit(X, y)
    assert accuracy_score(y_test, pipe.predict(X_test)) > 0.75


def test_ensemble_vote_is_the_mean_of_members(tweets):
    X, y, X_test, _ = tweets
    ens = EnsembleClassifier(members=("nbsvm:logreg-cv", "tfidf:logreg-cv"), method="vote")
    proba = Pipeline([("features", "passthrough"), ("head", ens)]).fit(X, y).predict_proba(X_test)
    members = [registry.make_pipeline(r, "logreg-cv").fit(X, y) for r in ("nbsvm", "tfidf")]
    want = np.mean([m.predict_proba(X_test) for m in members], axis=0)
    np.testing.assert_allclose(proba, want, atol=1e-6)
    assert ens.classes_.tolist() == ["negative", "positive"]


def test_ensemble_stack_learns_on_out_of_fold_probabilities(tweets):
    X, y, X_test, _ = tweets
    ens = EnsembleClassifier(members=("nbsvm:logreg-cv", "tfidf:logreg-cv"), cv=3, C=2.0).fit(X, y)
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    oof = np.column_stack([
        cross_val_predict(registry.make_pipeline(r, "logreg-cv"), X, y, cv=folds,
                          method="predict_proba")[:, 1] for r in ("nbsvm", "tfidf")])
    final = LogisticRegression(C=2.0, max_iter=1000).fit(oof, y)
    np.testing.assert_allclose(ens.model_.final_estimator_.coef_, final.coef_, rtol=1e-4)
    members = np.column_stack([registry.make_pipeline(r, "logreg-cv").fit(X, y)
                               .predict_proba(X_test)[:, 1] for r in ("nbsvm", "tfidf")])
    np.testing.assert_allclose(ens.predict_proba(X_test), final.predict_proba(members), atol=1e-6)


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
    ok = EnsembleClassifier(members=("bow:logreg", ("tfidf", make_pipeline(
        TfidfEmbedder(), LogisticRegression()))), method="vote").fit(TOY, TOY_Y)
    assert set(ok.predict(["good fun"])) <= {"pos", "neg"}
