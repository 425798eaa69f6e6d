"""Step parameters (`embedkit.configure`): ``[step.]name=value`` parsed, sent to the steps they
name, checked against the parameter tables before any work, and pipelines built from names."""

from __future__ import annotations

import pytest

from embedkit.configure import Param, make_pipeline, make_representation, parse_params
from embedkit.experiments import select
from embedkit.registry import HEADS, REPRESENTATIONS


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


def test_make_pipeline_refuses_a_pair_that_does_not_fit():
    pipe = make_pipeline("tfidf", "mlp")
    assert [name for name, _ in pipe.steps] == ["features", "head"]
    assert pipe.named_steps["features"].get_params() == REPRESENTATIONS["tfidf"].factory().get_params()
    with pytest.raises(ValueError, match=r"'rnn' accepts sequence, ids but 'tfidf' produces 'pooled'"):
        make_pipeline("tfidf", "rnn")
    with pytest.raises(ValueError, match="unknown head 'lstm'"):
        make_pipeline("glove-seq", "lstm")

