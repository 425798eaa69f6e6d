"""The `embedkit` command: compare (quick run, resume, experiments, lists), embed (fits on the
first chunk, streams the rest), cache, word-vector queries."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from embedkit import TfidfEmbedder, TransformerEmbedder, load_dataset
from embedkit.cache import DiskCache
from embedkit.cli import app

EXAMPLE = Path(__file__).parents[1] / "pipelines" / "experiments" / "tfidf_variants.py"


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def said(result) -> str:
    """The output with rich's error box and line wrapping undone."""
    return " ".join(result.output.replace("│", " ").split())


# ---------------------------------------------------------------- compare
def test_cli_compare_quick_end_to_end(tmp_path):
    out = tmp_path / "report"
    result = run("compare", "--quick", "-r", "tfidf", "-h", "logreg", "-h", "linear", "-o", out)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "results.csv")
    assert set(table["head"]) == {"logreg", "linear"}
    assert (table.accuracy_mean > 0.85).all()
    assert "± " in (out / "results.md").read_text()
    assert (out / "results.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "results_time.png").read_bytes()[:4] == b"\x89PNG"
    assert (table.peak_mb >= 0).all() and (table.transform_seconds > 0).all()
    assert (table.fit_seconds > table.transform_seconds).all()
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 2
    # a second run resumes from runs.jsonl instead of refitting
    again = run("compare", "--quick", "-r", "tfidf", "-h", "logreg", "-h", "linear", "-o", out)
    assert again.exit_code == 0 and len((out / "runs.jsonl").read_text().splitlines()) == 2
    bad = run("compare", "--quick", "-r", "word3vec", "-o", out)
    assert bad.exit_code == 2 and "unknown representation(s) ['word3vec']" in said(bad)


def test_cli_compare_runs_an_experiment_file_on_a_file(tmp_path):
    data = load_dataset("sms-spam").groupby("label").head(60)
    data.rename(columns={"text": "message"}).to_csv(tmp_path / "sms.csv", index=False)
    out = tmp_path / "report"
    result = run("compare", "-e", EXAMPLE, "--file", tmp_path / "sms.csv", "--text-column",
                 "message", "--folds", "2", "-o", out)
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


# ---------------------------------------------------------------- embed and cache
@pytest.fixture(scope="module")
def minilm():
    return TransformerEmbedder(max_length=32).fit(["x"])


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


def test_embed_fits_on_the_first_chunk_and_streams_the_rest(tmp_path):
    data = load_dataset("trec").iloc[:90][["text", "label"]]
    data.insert(0, "id", np.arange(90) * 5)
    data.to_json(tmp_path / "in.jsonl", orient="records", lines=True)
    res = run("embed", tmp_path / "in.jsonl", tmp_path / "out.npy", "-r", "tfidf", "-p",
              "n_components=4", "--fit-rows", "40", "--chunk-size", "25", "--id-column", "id",
              "--no-progress")
    assert res.exit_code == 0, res.output
    assert "wrote 90 x 4 vectors from TfidfEmbedder" in res.output
    want = TfidfEmbedder(n_components=4).fit(data.text[:40]).transform(data.text)
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
    assert wrong.exit_code == 2 and "no column 'body'; its columns are ['id', 'text', 'label']" in said(wrong)


# ---------------------------------------------------------------- word vectors
def test_cli_word_vector_commands():
    result = run("analogy", "man", "king", "woman", "--topn", "3")
    assert result.exit_code == 0 and result.output.split()[0] == "queen"
    near = run("neighbors", "football", "--topn", "5")
    assert near.exit_code == 0 and "soccer" in near.output.split()
    bad = run("neighbors", "zzqxv")
    assert bad.exit_code == 2 and "not in the vocabulary" in bad.output
