"""The accuracy suite's core (pipelines/benchmarks/accuracy_suite.py) on tiny slices."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from pipelines.benchmarks import accuracy_suite as suite


def test_split_is_official_where_defined_else_stratified_80_20():
    from embedkit.data.datasets import load_dataset

    train, test, protocol = suite.split(load_dataset("trec"))
    assert (len(train), len(test)) == (5452, 500) and protocol == "official split"
    df = load_dataset("vader-tweets")
    train, test, protocol = suite.split(df)
    assert (len(train), len(test)) == (3356, 840) and "80/20" in protocol
    share = df["label"].value_counts(normalize=True)
    assert (test["label"].value_counts(normalize=True) - share).abs().max() < 0.005
    again, _, _ = suite.split(df)
    assert again["text"].tolist() == train["text"].tolist()  # seed 0: the same split every run
    quick_train, quick_test, _ = suite.split(df, quick=True)
    assert (len(quick_train), len(quick_test)) == (suite.QUICK_TRAIN, suite.QUICK_TEST)
    assert set(quick_test["text"]) <= set(test["text"])


def test_pairs_are_the_registry_defaults_plus_extras():
    from embedkit.experiments import select

    defaults = list(select().pairs)
    assert suite.selected_pairs() == defaults
    chosen = suite.selected_pairs(["glove-seq:rnn", "passthrough:finetune", "tfidf:logreg"])
    assert chosen == [*defaults, ("glove-seq", "rnn"), ("passthrough", "finetune")]
    assert ("passthrough", "finetune") not in suite.selected_pairs(["passthrough:finetune"],
                                                                  skip_slow=True)
    with pytest.raises(SystemExit, match="REPRESENTATION:HEAD"):
        suite.selected_pairs(["glove-seq"])
    with pytest.raises(SystemExit, match="does not accept"):
        suite.selected_pairs(["tfidf:rnn"])


def test_run_scores_writes_the_report_and_resumes(tmp_path, monkeypatch):
    from sklearn.dummy import DummyClassifier
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    monkeypatch.setattr(suite, "baselines", lambda: {
        suite.TFIDF: make_pipeline(TfidfVectorizer(), LogisticRegression(max_iter=3000)),
        suite.MINILM: make_pipeline(TfidfVectorizer(), DummyClassifier()),
    })
    monkeypatch.setattr(suite, "selected_pairs", lambda *a, **k: [("tfidf", "logreg")])
    results = suite.run(["sms-spam"], quick=True, output=tmp_path, progress=False)
    assert list(results["pipeline"]) == [suite.TFIDF, suite.MINILM, "tfidf + logreg"]
    from embedkit.data.datasets import load_dataset

    _, test, _ = suite.split(load_dataset("sms-spam"), quick=True)
    majority = results.set_index("pipeline").loc[suite.MINILM, "accuracy"]
    assert majority == pytest.approx((test["label"] == "ham").mean())  # the dummy's majority class
    assert results["accuracy"].between(0, 1).all() and (results["fit_seconds"] > 0).all()
    lines = (tmp_path / "runs.jsonl").read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["n_test"] == suite.QUICK_TEST

    again = suite.run(["sms-spam"], quick=True, output=tmp_path, progress=False)
    assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == 3  # nothing re-scored
    pd.testing.assert_frame_equal(again, results)
    report = (tmp_path / "results.md").read_text()
    best = results.set_index("pipeline")["accuracy"]
    delta = (best["tfidf + logreg"] - max(best[suite.TFIDF], best[suite.MINILM])) * 100
    assert f"{best['tfidf + logreg']:.3f} ({delta:+.1f})" in report
    assert (tmp_path / "results.png").stat().st_size > 10_000


def test_tables_compare_each_default_with_its_matching_baseline():
    rows = []
    for dataset, accs in {"a": (0.80, 0.70, 0.60, 0.79, 0.72, 0.66),
                          "b": (0.50, 0.90, 0.40, 0.52, 0.88, 0.40)}.items():
        names = [suite.TFIDF, suite.MINILM, suite.GLOVE, "tfidf + logreg", "minilm + logreg",
                 "glove + logreg"]
        rows += [{"dataset": dataset, "pipeline": p, "accuracy": a, "f1_macro": a,
                  "fit_seconds": 1.0, "predict_seconds": 0.1} for p, a in zip(names, accs, strict=True)]
    t = suite.tables(pd.DataFrame(rows))
    assert t["delta"].loc["minilm + logreg"].round(6).to_dict() == {"a": -8.0, "b": -2.0}
    matching = t["matching"].round(6)
    assert matching.loc["tfidf + logreg vs plain TF-IDF + LR"].to_dict() == {"a": -1.0, "b": 2.0}
    assert matching.loc["glove + logreg vs plain GloVe-mean + LR"].to_dict() == {"a": 6.0, "b": 0.0}
