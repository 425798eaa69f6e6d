"""The registry: forms read from the classes' declarations, selections, experiments by name
and by file, one name per model with aliases and did-you-mean, step parameters, and the
logreg head (scaling only where it helps, never behind the five-line baselines)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from embedkit import GloveEmbedder, MLPClassifier, RNNClassifier, TransformerClassifier
from embedkit.base import FORMS
from embedkit.registry import (
    HEADS,
    REPRESENTATIONS,
    Entry,
    LogisticRegressionHead,
    Param,
    accepted_forms,
    aliases,
    compatible,
    did_you_mean,
    head_forms,
    load_experiment,
    make_pipeline,
    make_representation,
    output_form,
    parse_params,
    representation_form,
    resolve,
    select,
    step,
)

EXAMPLE = Path(__file__).parents[1] / "pipelines" / "experiments" / "tfidf_variants.py"


def test_forms_come_from_the_classes():
    for name, entry in REPRESENTATIONS.items():
        step_ = entry.factory()
        form = representation_form(entry)
        assert form in FORMS, name
        if name != "passthrough":
            assert form == step_.output and form in type(step_)._outputs, name
    assert output_form("passthrough") == "text"
    assert output_form(TfidfVectorizer()) == "pooled"  # any scikit-learn transformer
    with pytest.raises(ValueError, match=r"GloveEmbedder\(output='ids2'\) cannot.*'pooled'"):
        output_form(GloveEmbedder(output="ids2"))
    for name, entry in HEADS.items():
        assert set(head_forms(entry)) <= set(FORMS), name
    assert accepted_forms(RNNClassifier()) == tuple(RNNClassifier._accepts)
    assert accepted_forms(MLPClassifier()) == tuple(MLPClassifier._accepts)
    assert accepted_forms(TransformerClassifier()) == ("text",)
    assert accepted_forms(LogisticRegression()) == ("pooled",)  # and so does a Pipeline
    assert head_forms(HEADS["logreg"]) == ("pooled",)


def test_compatibility():
    def fits(r, h):
        return compatible(REPRESENTATIONS[r], HEADS[h])

    assert fits("tfidf", "logreg") and fits("tfidf", "mlp") and not fits("tfidf", "rnn")
    assert fits("glove-seq", "rnn") and fits("glove-seq", "mlp") and not fits("glove-seq", "logreg")
    assert fits("learned", "conv") and not fits("learned", "logreg")
    assert [h for h in HEADS if fits("passthrough", h)] == [  # heads that read raw text
        "finetune", "finetune-short", "setfit", "stack", "finetune-seeds", "vote-finetune"]
    assert [r for r in REPRESENTATIONS if fits(r, "finetune")] == ["passthrough"]


def test_select_defaults_quick_and_errors():
    assert select(quick=True).pairs == (("tfidf", "logreg"), ("tfidf", "mlp"))
    default = select()
    assert len(default.pairs) == 12 and {h for _, h in default.pairs} == {"logreg", "mlp"}
    assert select(["glove-seq", "tfidf"], ["rnn", "logreg"]).pairs == (("glove-seq", "rnn"),
                                                                     ("tfidf", "logreg"))
    with pytest.raises(ValueError, match=r"unknown representation 'word3vec'\. Did you mean "
                                         r"'word2vec'\? Choose from tfidf, bow.*-r tfidf"):
        select(["word3vec"])
    with pytest.raises(ValueError, match=r"unknown head 'lstm'\..*-H mlp"):
        select(["glove-seq"], ["lstm"])
    with pytest.raises(ValueError, match="no head in \\['rnn'\\] accepts"):
        select(["tfidf"], ["rnn"])
    with pytest.raises(ValueError, match=r"either an experiment \(-e\) or"):
        select(["tfidf"], experiment="course_comparison")


def test_named_experiments():
    from embedkit.registry import experiments

    assert {"course_comparison", "representations_only"} <= set(experiments())
    course = select(experiment="course_comparison").pairs
    assert len(course) == 12 and all(compatible(REPRESENTATIONS[r], HEADS[h]) for r, h in course)
    assert ("passthrough", "finetune") in course and ("learned", "mlp") in course
    only = load_experiment("representations_only")
    assert {h for _, h in only.pairs} == {"logreg"}
    assert {r for r, _ in only.pairs} == {"tfidf", "bow", "lsa", "word2vec", "fasttext", "glove",
                                          "glove-sif", "doc2vec", "minilm", "minilm-static", "nbsvm",
                                          "nbsvm-char"}
    with pytest.raises(ValueError, match="unknown experiment 'nope'.*course_comparison.*PAIRS"):
        select(experiment="nope")


def test_experiment_file_names_its_own_steps(tmp_path):
    example = load_experiment(EXAMPLE)
    assert example.about.startswith("TF-IDF settings side by side")
    assert ("tfidf-bigrams", "logreg") in example.pairs and ("tfidf", "logreg") in example.pairs
    assert example.representations["tfidf-bigrams"].factory().ngram_range == (1, 2)
    assert "tfidf-bigrams" not in REPRESENTATIONS  # the built-ins are left alone

    def write(body):
        path = tmp_path / "mine.py"
        path.write_text(body)
        return path

    with pytest.raises(ValueError, match="redefines the built-in 'tfidf'"):
        load_experiment(write("from embedkit.registry import Entry, step\n"
                              "REPRESENTATIONS = {'tfidf': Entry(step('TfidfEmbedder'), 'x')}\n"
                              "PAIRS = [('tfidf', 'logreg')]\n"))
    with pytest.raises(ValueError, match=r"REPRESENTATIONS\['mine'\] is a function.*Entry"):
        load_experiment(write("def f(): pass\nREPRESENTATIONS = {'mine': f}\nPAIRS = []\n"))
    with pytest.raises(ValueError, match="defines no PAIRS"):
        load_experiment(write("'''nothing'''\n"))
    with pytest.raises(ValueError, match="do not fit together.*'glove-seq' produces 'sequence'"):
        load_experiment(write("PAIRS = [('glove-seq', 'logreg')]\n"))
    with pytest.raises(FileNotFoundError, match="experiment file .*other.py does not exist"):
        load_experiment(tmp_path / "other.py")


def test_entries_and_steps():
    entry = Entry(step("TfidfEmbedder", min_df=2), "TF-IDF")
    assert entry.factory() is not entry.factory()  # a fresh estimator each time
    assert entry.factory().get_params()["min_df"] == 2
    assert representation_form(entry) == "pooled"


def test_one_name_per_model_with_aliases():
    assert aliases()["representation"]["transformer"] == "minilm"
    assert aliases()["representation"]["TfidfEmbedder"] == "tfidf"  # the first entry of a class
    assert aliases()["head"]["RNNClassifier"] == "rnn" and aliases()["head"]["MLPClassifier"] == "mlp"
    for what, registry in (("representation", REPRESENTATIONS), ("head", HEADS)):
        assert not set(aliases()[what]) & set(registry)  # an alias never shadows a name
        assert all(target in registry for target in aliases()[what].values())
    assert resolve("Transformer", "representation") == "minilm"  # case is ignored
    assert resolve("glove-seq", "representation") == "glove-seq"
    assert resolve("MLPClassifier", "head") == "mlp"
    assert did_you_mean("glove-seqs", REPRESENTATIONS) == " Did you mean 'glove-seq'?"
    assert did_you_mean("zzzz", REPRESENTATIONS) == ""
    # compare and embed build the same step from one name
    assert make_representation("transformer").get_params() == REPRESENTATIONS["minilm"].factory().get_params()
    assert select(["transformer", "TfidfEmbedder"], ["MLPClassifier"]).pairs == (
        ("minilm", "mlp"), ("tfidf", "mlp"))


def test_make_representation_by_name_alias_and_params():
    rep = make_representation("transformer", ["max_length=32", "features.pooling=cls"])
    assert type(rep).__name__ == "TransformerEmbedder" and rep.max_length == 32 and rep.pooling == "cls"
    assert rep.normalize is True  # the registry's minilm, not a bare class
    assert type(make_representation("GloveEmbedder")).__name__ == "GloveEmbedder"
    with pytest.raises(ValueError, match="unknown representation 'word3vec'. Did you mean 'word2vec'"):
        make_representation("word3vec")
    with pytest.raises(ValueError, match=r"-p 'ngram_range': write \[step.\]name=value"):
        make_representation("tfidf", ["ngram_range"])
    with pytest.raises(ValueError, match="tfidf has no parameter 'min_dff'. Did you mean 'min_df'"
                                         ".*Its parameters: cache, char_ngram_range"):
        make_representation("tfidf", ["min_dff=1"])
    with pytest.raises(ValueError, match="builds one representation, tfidf; write -p min_df"):
        make_representation("tfidf", ["glove.min_df=1"])
    with pytest.raises(ValueError, match=r"minilm: TransformerEmbedder\(pooling='bad'\)"):
        make_representation("minilm", ["pooling=bad"])


def test_parse_params():
    assert parse_params(["head.epochs=3", "pooling=sif", "glove.oov='unk'", "ngram_range=(1, 2)",
                         "note=plain text"]) == (
        Param("head", "epochs", 3, "head.epochs=3"), Param(None, "pooling", "sif", "pooling=sif"),
        Param("glove", "oov", "unk", "glove.oov='unk'"),
        Param(None, "ngram_range", (1, 2), "ngram_range=(1, 2)"),
        Param(None, "note", "plain text", "note=plain text"))
    with pytest.raises(ValueError, match="write \\[step.\\]name=value"):
        parse_params(["=3"])


def test_params_go_to_the_steps_they_name():
    chosen = select(["glove", "minilm", "tfidf"], ["logreg", "mlp"],
                    params=["head.epochs=3", "features.pooling=max", "tfidf.min_df=1", "logreg.cv=4"])
    reps, heads = chosen.representations, chosen.heads
    assert reps["glove"].factory().pooling == "max" and reps["minilm"].factory().pooling == "max"
    assert reps["tfidf"].factory().min_df == 1
    assert heads["mlp"].factory().epochs == 3 and heads["logreg"].factory().cv == 4
    assert REPRESENTATIONS["glove"].factory().pooling == "mean"  # the registry is left alone
    assert HEADS["mlp"].factory().epochs == 10
    # features./head./no step: every selected step of that kind that has the parameter
    mixed = select(["glove", "tfidf"], ["logreg", "mlp"], params=["oov='zero'", "head.epochs=2"])
    assert mixed.representations["glove"].factory().oov == "zero"
    assert mixed.representations["tfidf"].factory().get_params() == REPRESENTATIONS[
        "tfidf"].factory().get_params()
    assert mixed.heads["mlp"].factory().epochs == 2 and mixed.heads["logreg"] is HEADS["logreg"]
    pipe = make_pipeline("glove", "mlp", ["head.epochs=3", "features.pooling=sif"])
    assert pipe.named_steps["head"].epochs == 3 and pipe.named_steps["features"].pooling == "sif"
    # an experiment takes parameters too
    course = select(experiment="course_comparison", params=["mlp.epochs=2"])
    assert course.heads["mlp"].factory().epochs == 2


@pytest.mark.parametrize("params, match", [
    (["head.epoch=3"], (r"-p head.epoch=3: no selected head \(logreg, mlp\) has a parameter "
                       r"'epoch'. Did you mean 'epochs'\? Their parameters: Cs, .*epochs")),
    (["features.polling=max"], (r"no selected representation \(glove, tfidf\) has a parameter "
                               r"'polling'. Did you mean 'pooling'\?")),
    (["random_state=1"], (r"both representations and heads have 'random_state'; write "
                         r"-p features.random_state=1 or -p head.random_state=1")),
    (["glov.pooling=max"], (r"no step 'glov' in this run. Did you mean 'glove'\? Name one of "
                           r"features, head, glove, tfidf, logreg, mlp")),
    (["minilm.pooling=max"], (r"'minilm' is not in this run's selection; its steps are glove, "
                             r"tfidf, logreg, mlp")),
    (["tfidf.pooling=max"], (r"tfidf \(TfidfEmbedder\) has no parameter 'pooling'. Its "
                            r"parameters: cache, char_ngram_range")),
    (["logreg.scale=maybe"], r"logreg: LogisticRegressionHead\(scale='maybe'\): scale must be one of"),
    (["colour=1"], r"no selected step \(glove, tfidf, logreg, mlp\) has a parameter 'colour'"),
])
def test_bad_params_are_refused_before_any_work(params, match):
    with pytest.raises(ValueError, match=match):
        select(["glove", "tfidf"], ["logreg", "mlp"], params=params)


# ---------------------------------------------------------------- the logreg head
def test_logreg_head_never_scales_sparse_input_and_picks_C():
    from embedkit import load_dataset

    df = load_dataset("sms-spam").iloc[:400]
    X = REPRESENTATIONS["tfidf"].factory().fit_transform(df.text.to_numpy(object))
    head = HEADS["logreg"].factory().fit(X, df.label)
    assert head.scaled_ is False and set(head.cv_scores_) == {"raw"}
    assert head.model_.C_ in head.Cs and list(head.classes_) == ["ham", "spam"]
    np.testing.assert_allclose(head.predict_proba(X).sum(axis=1), 1.0, rtol=1e-6)


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
