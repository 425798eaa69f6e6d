"""The catalog (`embedkit.registry`): forms read from the classes' declarations, one name per
model with aliases and did-you-mean; and the selections and experiments built on it
(`embedkit.experiments`), by name and by file."""

from __future__ import annotations

from pathlib import Path

import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from embedkit import GloveEmbedder, MLPClassifier, RNNClassifier, TransformerClassifier
from embedkit._suggest import did_you_mean
from embedkit.base import FORMS, accepted_forms, output_form
from embedkit.configure import make_representation
from embedkit.experiments import load_experiment, select
from embedkit.registry import (
    HEADS,
    REPRESENTATIONS,
    Entry,
    aliases,
    compatible,
    head_forms,
    representation_form,
    resolve,
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
        "finetune", "finetune-short", "setfit", "stack", "finetune-seeds", "vote-finetune",
        "finetune-mpnet"]
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
    from embedkit.experiments import experiments

    assert {"course_comparison", "representations_only"} <= set(experiments())
    course = select(experiment="course_comparison").pairs
    assert len(course) == 12 and all(compatible(REPRESENTATIONS[r], HEADS[h]) for r, h in course)
    assert ("passthrough", "finetune") in course and ("learned", "mlp") in course
    only = load_experiment("representations_only")
    assert {h for _, h in only.pairs} == {"logreg"}
    assert {r for r, _ in only.pairs} == {"tfidf", "bow", "lsa", "word2vec", "fasttext", "glove",
                                          "glove-sif", "doc2vec", "minilm", "minilm-static", "ngrams",
                                          "nbsvm", "nbsvm-char", "mpnet"}
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


def test_the_catalog_imports_no_step():
    """Reading the catalog loads no representation or head module: the ensemble head reads its
    member names here, so the catalog must sit below the heads (no import cycle)."""
    import subprocess
    import sys

    code = ("import sys, embedkit.registry as r; r.REPRESENTATIONS, r.HEADS, r.resolve('glove', "
            "'representation'); print(sorted(m for m in sys.modules if m.startswith('embedkit.') "
            "and ('.heads' in m or '.representations' in m)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
