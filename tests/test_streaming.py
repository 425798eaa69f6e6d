"""Chunked streaming on one machine (no Dask): chunked output equals one-shot encoding, an
interrupted or refused run leaves no output, and the shared pieces behave."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from embedkit import TfidfEmbedder, load_dataset
from embedkit.predicting import predict_file
from embedkit.streaming import embed_file, output_columns


@pytest.fixture(scope="module")
def trec():
    df = load_dataset("trec")
    df = df[df.split == "train"].iloc[:1200].reset_index(drop=True)
    df.insert(0, "id", np.arange(len(df), dtype=np.int64) * 7 + 3)  # ids unlike positions
    return df


@pytest.fixture(scope="module")
def lsa(trec):
    return TfidfEmbedder(n_components=32).fit(trec.text)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_embed_file_chunks_equal_one_shot(fmt, lsa, trec, tmp_path):
    data = trec[["id", "text"]].copy()
    data.loc[5, "text"] = ""  # an empty document (an empty CSV cell) is legal
    data.loc[6, "text"] = "NA"  # and a text that pandas would read as missing stays text
    src = tmp_path / f"in.{fmt}"
    {"csv": lambda: data.to_csv(src, index=False),
     "jsonl": lambda: data.to_json(src, orient="records", lines=True),
     "parquet": lambda: data.to_parquet(src)}[fmt]()

    summary = embed_file(lsa, src, tmp_path / "out.parquet", keep="id", chunk_size=500)
    assert summary == {"path": str(tmp_path / "out.parquet"), "rows": len(data), "chunks": 3,
                       "dim": 32}
    assert pq.ParquetFile(tmp_path / "out.parquet").num_row_groups == 3
    out = pd.read_parquet(tmp_path / "out.parquet")
    assert out["id"].tolist() == data["id"].tolist() and out["id"].dtype == np.int64
    expected = lsa.transform(data.text.tolist())
    np.testing.assert_allclose(out.drop(columns="id").to_numpy(), expected, rtol=1e-5, atol=1e-6)
    assert np.allclose(out.iloc[6, 1:].to_numpy(), lsa.transform(["NA"])[0], atol=1e-6)
    assert sorted(os.listdir(tmp_path)) == sorted([src.name, "out.parquet"])  # no temporaries


class FailingTfidf(TfidfEmbedder):
    """Fails on the document "boom", as a crash mid-file would."""

    def _transform(self, docs):
        if "boom" in docs:
            raise RuntimeError("simulated crash")
        return super()._transform(docs)


def test_embed_file_interrupted_leaves_no_output(trec, tmp_path):
    rep = FailingTfidf(n_components=8).fit(trec.text)
    data = trec[["id", "text"]].copy()
    data.loc[900, "text"] = "boom"
    data.to_csv(tmp_path / "in.csv", index=False)
    with pytest.raises(RuntimeError, match="simulated crash"):
        embed_file(rep, tmp_path / "in.csv", tmp_path / "out.parquet", chunk_size=400)
    assert os.listdir(tmp_path) == ["in.csv"]


def test_a_missing_text_mid_file_writes_nothing(lsa, trec, tmp_path):
    data = trec[["id", "text"]].astype({"text": object})
    data.loc[[700, 1100], "text"] = None
    data.to_parquet(tmp_path / "in.parquet")
    (tmp_path / "out.parquet").write_text("an earlier output")
    with pytest.raises(ValueError, match=r"1 row\(s\) have no text in column 'text'.*rows 700 "):
        embed_file(lsa, tmp_path / "in.parquet", tmp_path / "out.parquet", chunk_size=500)
    assert (tmp_path / "out.parquet").read_text() == "an earlier output"  # left as it was
    assert sorted(os.listdir(tmp_path)) == ["in.parquet", "out.parquet"]


def test_embed_file_errors(lsa, trec, tmp_path):
    trec[["id", "text"]].to_csv(tmp_path / "in.csv", index=False)
    with pytest.raises(ValueError, match="no column 'body'"):
        embed_file(lsa, tmp_path / "in.csv", tmp_path / "o.parquet", text_column="body")
    with pytest.raises(ValueError, match="chunk_size=0"):
        embed_file(lsa, tmp_path / "in.csv", tmp_path / "o.parquet", chunk_size=0)
    with pytest.raises(ValueError, match="unsupported file type"):
        embed_file(lsa, tmp_path / "in.xlsx", tmp_path / "o.parquet")
    with pytest.raises(ValueError, match="sparse output"):
        embed_file(TfidfEmbedder().fit(trec.text), tmp_path / "in.csv", tmp_path / "o.parquet")
    with pytest.raises(ValueError, match="keep= lists the text column"):
        embed_file(lsa, tmp_path / "in.csv", tmp_path / "o.parquet", keep=["id", "text"])
    assert sorted(os.listdir(tmp_path)) == ["in.csv"]


def test_empty_input_gives_an_empty_output(lsa, tmp_path):
    (tmp_path / "in.csv").write_text("id,text\n")
    summary = embed_file(lsa, tmp_path / "in.csv", tmp_path / "out.parquet", keep="id")
    assert summary["rows"] == 0 and summary["chunks"] == 0
    out = pd.read_parquet(tmp_path / "out.parquet")
    assert len(out) == 0 and out.columns.tolist() == ["id", *output_columns(lsa)]


def test_output_columns_checks_the_representation(sentences):
    assert output_columns(TfidfEmbedder(n_components=3).fit(sentences)) == ["lsa0", "lsa1", "lsa2"]
    with pytest.raises(ValueError, match="not fitted"):
        output_columns(TfidfEmbedder(n_components=3))
    from embedkit import GloveEmbedder

    with pytest.raises(ValueError, match="output='sequence'.*Use output='pooled'"):
        output_columns(GloveEmbedder(output="sequence"))


@pytest.fixture
def small_model(sentences, tmp_path):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from embedkit import save

    pipe = make_pipeline(TfidfEmbedder(), LogisticRegression()).fit(sentences, [0, 1] * 20)
    return pipe, save(pipe, tmp_path / "model")


# -- predict_file ---------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_predict_file_streams_chunks_equal_to_in_memory(small_model, sentences, tmp_path, fmt):
    SENTENCES = sentences
    pipe, folder = small_model
    rows = pd.DataFrame({"qid": np.arange(100, 100 + len(SENTENCES)), "text": SENTENCES})
    source = tmp_path / f"in.{fmt}"
    rows.to_csv(source, index=False) if fmt == "csv" else rows.to_parquet(source)
    out = tmp_path / f"out.{fmt}"
    info = predict_file(folder, source, out, id_column="qid", chunksize=16)
    assert (info["rows"], info["chunks"]) == (len(SENTENCES), 3)
    got = pd.read_csv(out) if fmt == "csv" else pd.read_parquet(out)
    assert got.columns.tolist() == ["qid", "label", "proba_0", "proba_1"]
    assert got.qid.tolist() == rows.qid.tolist()
    assert got.label.tolist() == pipe.predict(SENTENCES).tolist()
    np.testing.assert_allclose(got[["proba_0", "proba_1"]].to_numpy(), pipe.predict_proba(SENTENCES),
                               rtol=0, atol=1e-15 if fmt == "csv" else 0)


def test_predict_file_names_a_missing_column_or_a_non_model_folder(small_model, tmp_path):
    _, folder = small_model
    pd.DataFrame({"body": ["a cat"]}).to_csv(tmp_path / "in.csv", index=False)
    with pytest.raises(ValueError, match="has no column 'text'; its columns are \\['body'\\]"):
        predict_file(folder, tmp_path / "in.csv", tmp_path / "out.csv")
    assert not (tmp_path / "out.csv").exists()
    with pytest.raises(ValueError, match="is not an embedkit model folder"):
        predict_file(tmp_path, tmp_path / "in.csv", tmp_path / "out.csv", text_column="body")


# -- issue 63: what a model of a table reads, said ------------------------------------------------
@pytest.fixture
def table_model(reviews, tmp_path):
    """A saved model of a table: two text columns, a categorical and a numeric one."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from embedkit import TableEmbedder, save

    X = reviews.drop(columns=["label", "split", "stars"])
    pipe = make_pipeline(TableEmbedder(TfidfEmbedder(), numeric=["age"]),
                         LogisticRegression()).fit(X, reviews["label"])
    X.to_csv(tmp_path / "table.csv", index_label="id")
    return pipe, save(pipe, tmp_path / "model"), tmp_path / "table.csv"


def test_a_model_of_a_table_refuses_a_text_column_it_would_ignore(table_model, tmp_path):
    from embedkit.predicting import predict_columns

    pipe, folder, table = table_model
    assert predict_columns(pipe, id_column="id")[0] == ["title", "body", "department", "age", "id"]
    with pytest.raises(ValueError) as caught:
        predict_file(folder, table, tmp_path / "out.csv", text_column="title")
    assert str(caught.value) == (
        "text_column='title' names a column of documents, but this model was fitted on a table: "
        "it reads the columns it was fitted on by name ('title', 'body', 'department', 'age'), "
        "and would ignore that one. Leave it out (text_column=None; on the command line drop "
        "--text-column); the file needs those columns.")
    assert not (tmp_path / "out.csv").exists()
    info = predict_file(folder, table, tmp_path / "out.csv", id_column="id")
    got = pd.read_csv(tmp_path / "out.csv")
    assert info["rows"] == 8 and got["id"].tolist() == list(range(8))
    X = pd.read_csv(table).drop(columns="id")
    np.testing.assert_allclose(got[["proba_0", "proba_1"]].to_numpy(), pipe.predict_proba(X),
                               atol=1e-12)


def test_a_model_of_a_table_names_the_columns_and_values_it_needs(table_model, tmp_path):
    _, folder, table = table_model
    X = pd.read_csv(table)
    X.drop(columns="age").to_csv(tmp_path / "no_age.csv", index=False)
    with pytest.raises(ValueError) as caught:
        predict_file(folder, tmp_path / "no_age.csv", tmp_path / "out.csv")
    assert str(caught.value).endswith(
        "has no column 'age'; its columns are ['id', 'title', 'body', 'department']. This model "
        "was fitted on a table and reads the columns it was fitted on by name ('title', 'body', "
        "'department', 'age'): the file needs each of them under that name (an empty cell is a "
        "missing value, which the model takes).")
    X.assign(age=X["age"].astype(object).where(X.index != 3, "n/a")).to_csv(
        tmp_path / "words.csv", index=False)
    with pytest.raises(ValueError) as caught:
        predict_file(folder, tmp_path / "words.csv", tmp_path / "out.csv")
    said = str(caught.value)
    assert said.endswith(  # what the saved model reads there, not a role to name: it has one
        "rows 0-7: column 'age' holds text at rows 3 ('n/a') (positions from 0), where the model "
        "reads numbers: it was fitted with 'age' as a numeric column. Write a number in those "
        "cells, or leave them empty (a missing number, which the model fills in with the median "
        "of the rows it was fitted on)."), said
    assert "categorical" not in said and not (tmp_path / "out.csv").exists()


def test_a_model_of_one_text_column_names_the_flags_predict_takes(small_model, tmp_path):
    _, folder = small_model
    pd.DataFrame({"body": ["a cat"]}).to_csv(tmp_path / "in.csv", index=False)
    with pytest.raises(ValueError) as caught:
        predict_file(folder, tmp_path / "in.csv", tmp_path / "out.csv", id_column="qid")
    assert str(caught.value).endswith(
        "has no column 'text'; its columns are ['body']. Name the column of documents and the id "
        "column (text_column=, id_column=; on the command line --text-column, --id-column).")
    assert "label" not in str(caught.value)
