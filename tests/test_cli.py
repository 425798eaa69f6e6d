"""The `embedkit` command: compare (quick run, resume, experiments, lists, -p parameters,
--metric, baseline rows, errors in flag terms with did-you-mean), -h on every command, embed
(fits on the first chunk, streams the rest, one name per model), cache, word-vector queries. The
user's mistakes at tune and predict are tests/test_outputs.py's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from embedkit import TransformerEmbedder, load_dataset
from embedkit.cache import DiskCache
from embedkit.cli import app
from embedkit.configure import make_representation

EXAMPLE = Path(__file__).parents[1] / "pipelines" / "experiments" / "tfidf_variants.py"


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def said(result) -> str:
    """The output with rich's error box and line wrapping undone."""
    return " ".join(result.output.replace("│", " ").split())


# ---------------------------------------------------------------- compare
def test_cli_compare_quick_end_to_end(tmp_path):
    out = tmp_path / "report"
    args = ("compare", "--quick", "-r", "tfidf", "-H", "logreg", "-H", "linear", "-p",
            "head.epochs=5", "--no-baselines", "-o", out)  # -j: every core
    result = run(*args)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "results.csv")
    assert set(table["head"]) == {"logreg", "linear"}
    assert (table.accuracy_mean > 0.8).all()  # 5 topics; 5 epochs of softmax regression
    assert "± " in (out / "results.md").read_text()
    assert (out / "results.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "results_time.png").read_bytes()[:4] == b"\x89PNG"
    assert (table.peak_mb >= 0).all() and (table.transform_seconds > 0).all()
    assert (table.fit_seconds > table.transform_seconds).all()
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 2
    # a second run resumes from runs.jsonl instead of refitting
    again = run(*args)
    assert again.exit_code == 0 and len((out / "runs.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize("args, message", [
    (["-r", "glove-seqs"], "unknown representation 'glove-seqs'. Did you mean 'glove-seq'?"),
    (["-H", "lstm"], "unknown head 'lstm'."),
    (["-r", "tfidf", "-H", "mlp", "-p", "head.epoch=3"], "Did you mean 'epochs'?"),
    (["-r", "tfidf", "-H", "logreg", "-p", "logreg.scale=maybe"],
     "LogisticRegressionHead(scale='maybe'): scale must be"),
    (["-r", "tfidf", "-H", "mlp", "-p", "head.epochs=-1"],
     "mlp: MLPClassifier(epochs=-1): epochs must be an int in the range [1, inf)"),
    (["-r", "glove", "-H", "logreg", "-p", "pooling=sif2"],
     "pooling must be one of 'max', 'mean', 'sif', 'sum', 'tfidf'. Did you mean 'sif'?"),
    (["-r", "tfidf", "-p", "epochs"], "-p 'epochs': write [step.]name=value"),
    (["-r", "tfidf", "--metric", "acuracy"], "unknown metric 'acuracy'. Did you mean 'accuracy'?"),
    (["-r", "tfidf", "--holdout", "1.5"], "error: --holdout 1.5; use a fraction between 0 and 1"),
    (["-d", "bbc-nws"], "unknown dataset 'bbc-nws'. Did you mean 'bbc-news'?"),
    (["-d", "trec", "-r", "tfidf", "--metric", "f1"], "this dataset has 6 classes. Use f1_macro"),
    (["-r", "tfidf", "-e", "course_comparison"],
     "either an experiment (-e) or a representation/head selection (-r/-H)"),
])
def test_cli_compare_errors_speak_in_flags_and_suggest(tmp_path, args, message):
    out = tmp_path / "report"
    bad = run("compare", *args, "-o", out)
    assert bad.exit_code == 2 and message in said(bad), said(bad)
    assert "_column" not in said(bad) and "Traceback" not in said(bad)
    if "-d" not in args:  # names and parameters are checked before any work
        assert not out.exists()


def test_help_on_every_command():
    commands = [[], ["compare"], ["embed"], ["cache"], ["cache", "info"], ["cache", "clear"],
                ["neighbors"], ["analogy"], ["datasets"], ["predict"]]
    for command in commands:
        for flag in ("-h", "--help"):
            result = run(*command, flag)
            assert result.exit_code == 0 and "Usage:" in result.output, (command, flag)
    text = said(run("compare", "-h"))
    for flag in ("--head -H", "--param -p", "--metric -m", "--n-jobs -j", "--no-baselines"):
        assert flag in text, flag
    for command in ("tune", "predict"):  # what the user owns stays theirs (issue 36)
        text = said(run(command, "-h"))
        assert "--overwrite" in text and "--encoding" in text, command


def test_cli_compare_metrics_params_and_baselines_on_a_file(tmp_path):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score, make_scorer
    from sklearn.model_selection import StratifiedKFold, cross_validate
    from sklearn.pipeline import make_pipeline

    df = load_dataset("sms-spam")
    data = pd.concat([df[df.label == "ham"].sample(100, random_state=0),
                      df[df.label == "spam"].sample(20, random_state=0)])
    data.rename(columns={"text": "message"}).to_csv(tmp_path / "sms.csv", index=False)
    out = tmp_path / "report"
    result = run("compare", "--file", tmp_path / "sms.csv", "--text-column", "message",
                 "-r", "tfidf", "-H", "linear", "-p", "head.epochs=5", "--metric", "f1",
                 "--metric", "accuracy", "--folds", "2", "-j", "1", "-o", out)
    assert result.exit_code == 0, result.output
    assert "Positive class of f1: 'spam' (--pos-label to change)" in said(result)
    table = pd.read_csv(out / "results.csv")
    assert list(table.columns[:3]) == ["kind", "representation", "head"]
    assert table.f1_mean.is_monotonic_decreasing  # ranked by the first metric
    rows = table.set_index(["representation", "head"])
    assert set(rows.index) == {("tfidf", "linear"), ("baseline", "majority-class"),
                               ("baseline-tfidf", "plain-lr"), ("baseline-minilm", "plain-lr")}
    assert (table.kind == "baseline").sum() == 3
    majority = rows.loc[("baseline", "majority-class")]
    assert majority.accuracy_mean == pytest.approx(100 / 120) and majority.f1_mean == 0.0
    # the plain rows are what a user writes in five lines, on the same splits
    cv = StratifiedKFold(2, shuffle=True, random_state=0)
    spam_f1 = make_scorer(f1_score, pos_label="spam")
    X = data.text.to_numpy(object)
    plain = cross_validate(make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2,
                                                         sublinear_tf=True),
                                         LogisticRegression(max_iter=3000)),
                           X, data.label, cv=cv, scoring=spam_f1)["test_score"]
    assert rows.loc[("baseline-tfidf", "plain-lr")].f1_mean == pytest.approx(plain.mean(), abs=1e-12)
    minilm = cross_validate(make_pipeline(TransformerEmbedder(normalize=True, cache="memory"),
                                          LogisticRegression(max_iter=3000)),
                            X, data.label, cv=cv, scoring=spam_f1)["test_score"]
    assert rows.loc[("baseline-minilm", "plain-lr")].f1_mean == pytest.approx(minilm.mean(), abs=1e-6)
    report = (out / "results.md").read_text()
    assert "Ranked by f1." in report and "| baseline |" in report.replace("  ", "")
    assert (out / "results.png").read_bytes()[:4] == b"\x89PNG"
    # --no-baselines leaves them out; the pipeline's row is served from runs.jsonl
    bare = run("compare", "--file", tmp_path / "sms.csv", "--text-column", "message", "-r",
               "tfidf", "-H", "linear", "-p", "head.epochs=5", "--metric", "f1", "--metric",
               "accuracy", "--folds", "2", "-j", "1", "--no-baselines", "-o", out)
    assert bare.exit_code == 0, bare.output
    assert pd.read_csv(out / "results.csv")["kind"].tolist() == ["pipeline"]


def test_cli_compare_runs_an_experiment_file_on_a_file(tmp_path):
    data = load_dataset("sms-spam").groupby("label").head(60)
    data.rename(columns={"text": "message"}).to_csv(tmp_path / "sms.csv", index=False)
    out = tmp_path / "report"
    result = run("compare", "-e", EXAMPLE, "--file", tmp_path / "sms.csv", "--text-column",
                 "message", "--folds", "2", "--no-baselines", "-o", out)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "results.csv")
    assert set(table.representation) == {"bow", "tfidf", "tfidf-bigrams", "tfidf-chars"}
    assert (table.accuracy_mean > 0.7).all()  # 50/50 ham/spam
    assert "sms: 120 documents, 2-fold" in result.output
    missing = run("compare", "-e", tmp_path / "nope.py", "-o", out)
    assert missing.exit_code == 2 and "nope.py does not exist" in said(missing)


def test_cli_lists():
    result = run("datasets")
    assert result.exit_code == 0 and "bbc-news" in result.output and "trec" in result.output
    listed = run("compare", "--list").output
    assert "tfidf          [pooled]" in listed and "glove-seq      [sequence]" in listed
    assert "passthrough    [text]" in listed and "finetune       [text]" in listed
    assert "rnn            [sequence, ids]" in listed and "logreg         [pooled]" in listed
    assert "course_comparison" in listed and "representations_only" in listed
    assert "minilm         [pooled]" in listed and "(also: TransformerEmbedder, transformer)" in listed
    assert "heads (-H NAME):" in listed and "(also: MLPClassifier)" in listed
    assert "baseline-tfidf + plain-lr" in listed and "majority-class" in listed


# ---------------------------------------------------------------- embed and cache
@pytest.fixture(scope="module")
def minilm():
    """The registry's minilm (normalised vectors), as `embed` builds it by default."""
    return TransformerEmbedder(max_length=32, normalize=True).fit(["x"])


def test_embed_and_cache_commands(minilm, tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("id,text\nx1,hello world\nx2,\nx3,the cat sat\n", encoding="utf-8")
    res = run("embed", src, tmp_path / "out.parquet", "--id-column", "id", "-p", "max_length=32",
              "--cache", tmp_path / "c", "--no-progress")
    assert res.exit_code == 0, res.output
    table = pd.read_parquet(tmp_path / "out.parquet")
    assert table["id"].tolist() == ["x1", "x2", "x3"]
    vectors = table.drop(columns="id").to_numpy()
    np.testing.assert_allclose(vectors, minilm.transform(["hello world", "", "the cat sat"]), atol=1e-5)
    res = run("embed", src, tmp_path / "out.npy", "-p", "max_length=32", "--chunk-size", "2",
              "--no-progress")
    assert res.exit_code == 0, res.output
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), vectors, atol=1e-5)  # other batches
    assert (tmp_path / "out.ids.txt").read_text().split() == ["0", "1", "2"]
    res = run("cache", "info", "--dir", tmp_path / "c")
    assert res.exit_code == 0 and "3 entries" in res.output
    res = run("cache", "clear", "--dir", tmp_path / "c", "--yes")
    assert res.exit_code == 0 and "deleted 3 entries" in res.output
    assert DiskCache(tmp_path / "c").info()["entries"] == 0
    res = run("embed", src, tmp_path / "out.txt")
    assert res.exit_code != 0 and "must end in .parquet or .npy" in said(res)
    # one name per model: the class name is an alias of the registry's entry
    res = run("embed", src, tmp_path / "alias.npy", "-r", "TransformerEmbedder", "-p",
              "max_length=32", "--no-progress")
    assert res.exit_code == 0, res.output
    np.testing.assert_allclose(np.load(tmp_path / "alias.npy"), vectors, atol=1e-5)
    res = run("embed", src, tmp_path / "x.npy", "-r", "glove-seqs")
    assert res.exit_code == 2 and "Did you mean 'glove-seq'?" in said(res)
    res = run("embed", src, tmp_path / "x.npy", "-r", "glove-seq")
    assert res.exit_code == 2 and "pass -p output=pooled" in said(res)
    res = run("embed", src, tmp_path / "x.npy", "-r", "glove", "-p", "poolling=sif")
    assert res.exit_code == 2 and "Did you mean 'pooling'?" in said(res)


def test_embed_fits_on_the_first_chunk_and_streams_the_rest(tmp_path):
    data = load_dataset("trec").iloc[:90][["text", "label"]]
    data.insert(0, "id", np.arange(90) * 5)
    data.to_json(tmp_path / "in.jsonl", orient="records", lines=True)
    res = run("embed", tmp_path / "in.jsonl", tmp_path / "out.npy", "-r", "tfidf", "-p",
              "n_components=4", "--fit-rows", "40", "--chunk-size", "25", "--id-column", "id",
              "--no-progress")
    assert res.exit_code == 0, res.output
    assert "wrote 90 x 4 vectors from TfidfEmbedder" in res.output
    want = make_representation("tfidf", ["n_components=4"]).fit(data.text[:40]).transform(data.text)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), want, rtol=1e-5, atol=1e-6)
    assert (tmp_path / "out.ids.txt").read_text().split() == [str(i) for i in data.id]
    assert not list(tmp_path.glob("*.parquet"))  # the intermediate parquet is gone

    data.loc[70, "text"] = None  # past the rows the fit reads: found while streaming
    data.to_json(tmp_path / "bad.jsonl", orient="records", lines=True)
    bad = run("embed", tmp_path / "bad.jsonl", tmp_path / "bad.parquet", "-r", "tfidf", "-p",
              "n_components=4", "--fit-rows", "40", "--no-progress")
    assert bad.exit_code == 2 and "at rows 70 (data rows" in said(bad) and "dropna" in said(bad)
    assert not (tmp_path / "bad.parquet").exists()
    wrong = run("embed", tmp_path / "in.jsonl", tmp_path / "o.parquet", "--text-column", "body")
    assert wrong.exit_code == 2 and "no column 'body'; its columns are ['id', 'text', 'label']. " \
        "Name existing columns (--text-column, --id-column)." in said(wrong)  # embed's own flags


# ---------------------------------------------------------------- word vectors
def test_cli_word_vector_commands():
    result = run("analogy", "man", "king", "woman", "--topn", "3")
    assert result.exit_code == 0 and result.output.split()[0] == "queen"
    near = run("neighbors", "football", "--topn", "5")
    assert near.exit_code == 0 and "soccer" in near.output.split()
    bad = run("neighbors", "zzqxv")
    assert bad.exit_code == 2 and "not in the vocabulary" in bad.output
