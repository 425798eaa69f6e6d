"""The registry's ``logreg`` head (`embedkit.heads.LogisticRegressionHead`): scaling only where
it helps, never behind the five-line baselines, and model folders written before it moved."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from embedkit.configure import make_pipeline
from embedkit.heads import LogisticRegressionHead
from embedkit.registry import HEADS, REPRESENTATIONS

OLD_FOLDER = Path(__file__).parent / "data" / "model-folder-0.1.0-logreg"


def test_logreg_head_never_scales_sparse_input_and_picks_C():
    from embedkit import load_dataset

    df = load_dataset("sms-spam").iloc[:400]
    X = REPRESENTATIONS["tfidf"].factory().fit_transform(df.text.to_numpy(object))
    head = HEADS["logreg"].factory().fit(X, df.label)
    assert head.scaled_ is False and set(head.cv_scores_) == {"raw"}
    assert head.model_.C_ in head.Cs and list(head.classes_) == ["ham", "spam"]
    np.testing.assert_allclose(head.predict_proba(X).sum(axis=1), 1.0, rtol=1e-6)


def test_sparse_input_is_solved_by_saga_to_the_model_lbfgs_finds():
    """``solver="auto"``: SAGA on sparse TF-IDF, lbfgs on dense vectors and NBSVM; both minimise the same
    loss and penalty, so on the same rows they choose the same C and predict the same classes
    (up to the solvers' tolerance); ``logreg-cv`` is the same head on its own grid."""
    from embedkit import load_dataset

    df = load_dataset("trec").iloc[:600]
    X = REPRESENTATIONS["tfidf"].factory().fit_transform(df.text.to_numpy(object))
    fits = {solver: HEADS["logreg"].factory().set_params(solver=solver).fit(X, df.label)
            for solver in ("auto", "lbfgs")}
    auto, lbfgs = fits["auto"], fits["lbfgs"]
    assert auto.model_.solver == "saga" and lbfgs.model_.solver == "lbfgs"
    assert auto.model_.C_ == lbfgs.model_.C_
    assert np.mean(auto.predict(X) == lbfgs.predict(X)) >= 0.99
    np.testing.assert_allclose(auto.predict_proba(X), lbfgs.predict_proba(X), atol=0.05)
    dense = np.random.default_rng(0).normal(size=(80, 6))
    assert HEADS["logreg"].factory().fit(dense, dense[:, 0] > 0).model_.solver == "lbfgs"
    cv = HEADS["logreg-cv"].factory().fit(X, df.label)
    assert cv.model_.solver == "saga" and cv.model_.scoring == "accuracy" and not cv.scaled_
    assert list(cv.model_.Cs_) == [0.25, 1.0, 4.0, 16.0, 64.0]
    # NBSVM's rows are scaled past unit norm by its ratios: SAGA's step would be small there
    ratios = REPRESENTATIONS["nbsvm"].factory().fit_transform(df.text.to_numpy(object), df.label)
    assert HEADS["logreg-cv"].factory().fit(ratios, df.label).model_.solver == "lbfgs"


def test_the_default_log_loss_scores_the_folds_exactly_as_scikit_learns_scorer():
    """The inner CV's log-loss is read off the probabilities directly: the same scores per fold
    and C as scikit-learn's ``neg_log_loss`` (class labels of any kind, a fold without a class,
    three classes), so the same C is chosen."""
    from sklearn.linear_model import LogisticRegressionCV

    rng = np.random.default_rng(0)
    for labels in (np.array(["no", "yes"]), np.array([-1, 0, 7])):
        X = rng.normal(size=(90, 5)) * 3
        y = labels[rng.integers(0, len(labels) - 1, 90)]
        y[:2] = labels[-1]  # the last class on two rows: a fold scores without it
        head = LogisticRegressionHead(scale=False).fit(X, y)
        plain = LogisticRegressionCV(Cs=list(head.Cs), cv=3, scoring="neg_log_loss",
                                     l1_ratios=(0.0,), max_iter=3000,
                                     use_legacy_attributes=False).fit(X, y)
        np.testing.assert_array_equal(head.model_.scores_, plain.scores_)
        assert head.model_.C_ == plain.C_ and head.model_.scoring == "neg_log_loss"


def test_logreg_head_scales_dense_input_where_it_helps():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 8))
    y = (X[:, 0] > 0).astype(int)
    X[:, 0] *= 1e-4  # the one informative column is tiny: C <= 100 cannot use it unscaled
    head = LogisticRegressionHead().fit(X, y)
    assert head.scaled_ is True and head.cv_scores_["scaled"] > head.cv_scores_["raw"]
    assert head.score(X, y) > 0.95
    wide = np.hstack([rng.normal(size=(300, 1)) * 3, rng.normal(size=(300, 7))])
    plain = LogisticRegressionHead().fit(wide, (wide[:, 0] > 0).astype(int))
    assert plain.scaled_ is False  # a tie goes to the unscaled input
    assert LogisticRegressionHead(scale=False).fit(X, y).scaled_ is False
    assert set(LogisticRegressionHead(scale=True).fit(X, y).cv_scores_) == {"scaled"}


def test_default_heads_do_not_lose_to_the_five_line_baselines():
    """Issue 13 on a slice of a short-text set never tuned on (600 training, 300 test tweets):
    tfidf + logreg and minilm + logreg score at least the plain baselines minus 0.5 point."""
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline as sk_pipeline

    from embedkit import load_dataset

    df = load_dataset("vader-tweets")
    train, rest = train_test_split(df, train_size=600, stratify=df["label"], random_state=0)
    test, _ = train_test_split(rest, train_size=300, stratify=rest["label"], random_state=0)
    X, y = train.text.to_numpy(object), train.label.to_numpy()
    X_test, y_test = test.text.to_numpy(object), test.label.to_numpy()
    plain = sk_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
                        LogisticRegression(max_iter=3000)).fit(X, y).score(X_test, y_test)
    ours = make_pipeline("tfidf", "logreg").fit(X, y).score(X_test, y_test)
    assert ours >= plain - 0.005, (ours, plain)
    # the registry's minilm is the plain baseline's encoder: encode once, fit both heads on it
    minilm = REPRESENTATIONS["minilm"].factory().fit(X)
    assert minilm.get_params()["normalize"] is True
    F, F_test = minilm.transform(X), minilm.transform(X_test)
    plain = LogisticRegression(max_iter=3000).fit(F, y).score(F_test, y_test)
    ours = HEADS["logreg"].factory().fit(F, y).score(F_test, y_test)
    assert ours >= plain - 0.005, (ours, plain)


def test_a_folder_saved_before_the_head_moved_still_loads():
    """tests/data holds a folder written by embedkit 0.1.0, when the class lived in
    ``embedkit.registry``: it loads as the class's new home and predicts as it did then."""
    from embedkit import load

    expected = json.loads(OLD_FOLDER.with_name(OLD_FOLDER.name + ".expected.json").read_text())
    assert "embedkit.registry.LogisticRegressionHead" in (OLD_FOLDER / "manifest.json").read_text()
    pipe = load(OLD_FOLDER)
    assert type(pipe.named_steps["head"]) is LogisticRegressionHead
    assert list(map(str, pipe.classes_)) == expected["classes"]
    np.testing.assert_allclose(pipe.predict_proba(expected["docs"]), expected["proba"], rtol=1e-9)
    # written before the head had a solver and a seed: it loads with their defaults, and refits
    head = pipe.named_steps["head"]
    assert (head.solver, head.random_state) == ("auto", 0)
    refit = clone(pipe).fit(expected["docs"] * 3, [*pipe.predict(expected["docs"])] * 3)
    assert refit.named_steps["head"].model_.solver in ("saga", "lbfgs")



def test_any_scorer_works_on_two_classes_and_the_model_saves(tmp_path):
    """scikit-learn 1.9's LogisticRegressionCV fails on two classes with f1_macro and the other
    averaged scorers (pos_label given twice); the head works around it and saves as usual."""
    from embedkit import load, save

    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 4))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=90) > 0, "yes", "no")
    head = LogisticRegressionHead(scoring="f1_macro").fit(X, y)
    assert head.score(X, y) > 0.85 and head.model_.scoring == "f1_macro"
    assert head.predict(X[:0]).shape == (0,) and head.predict_proba(X[:0]).shape == (0, 2)
    back = load(save(head, tmp_path / "model"))
    np.testing.assert_array_equal(back.predict_proba(X), head.predict_proba(X))
