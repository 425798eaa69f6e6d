"""The one reader: every format gives the same values, missing texts fail with their rows."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from embedkit.data.reading import load_table, load_texts, read_chunks, read_folder, read_table
from embedkit.storage.files import file_format

#: texts pandas would read as missing, or mangle, with its default CSV settings
TEXTS = ["good film", "NA", "null", "", "None", 'a "quoted", line', "n/a"]
LABELS = ["pos", "NA", "neg", "pos", "neg", "pos", "neg"]


def _write(frame: pd.DataFrame, path):
    name = str(path)
    if ".csv" in name or ".tsv" in name:
        frame.to_csv(path, index=False, sep="\t" if ".tsv" in name else ",")
    elif ".jsonl" in name:
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path)
    return path


@pytest.fixture()
def corpus():
    return pd.DataFrame({"id": np.arange(len(TEXTS)) * 3 + 1, "review": TEXTS, "stars": LABELS,
                         "other": range(len(TEXTS))})


@pytest.mark.parametrize("name", ["a.csv", "a.tsv", "a.csv.gz", "a.jsonl", "a.parquet"])
def test_every_format_reads_the_same_values(name, corpus, tmp_path):
    path = _write(corpus, tmp_path / name)
    got = load_texts(path, "review", "stars")
    assert got.columns.tolist() == ["text", "label"]
    assert got.text.tolist() == TEXTS  # verbatim: "NA", "null", "" stay documents
    assert got.label.tolist() == LABELS  # an "NA" label is a label too
    chunks = list(read_chunks(path, ["review", "id"], chunk_size=3))
    assert [len(c) for c in chunks] == [3, 3, 1]
    assert [c.index.tolist() for c in chunks] == [[0, 1, 2], [3, 4, 5], [6]]  # file rows
    assert all(c.columns.tolist() == ["review", "id"] for c in chunks)  # only what was asked
    joined = pd.concat(chunks)
    assert joined.review.tolist() == TEXTS and joined.id.tolist() == corpus.id.tolist()
    assert joined.id.dtype == np.int64  # other columns keep their type


@pytest.mark.parametrize("name", ["a.jsonl", "a.parquet"])
def test_a_missing_text_is_an_error_that_names_its_rows(name, corpus, tmp_path):
    corpus["review"] = corpus["review"].astype(object)
    corpus.loc[[2, 5], "review"] = None
    path = _write(corpus, tmp_path / name)
    with pytest.raises(ValueError, match=r"2 row\(s\) have no text in column 'review'.*rows 2, 5 "
                                         r".*validate_documents.*dropna\(subset=\['review'\]\)"):
        load_texts(path, "review", "stars")
    corpus.loc[2, "review"] = "fixed"
    chunks = read_chunks(_write(corpus, path), ["review"], chunk_size=4)
    assert next(chunks).review.tolist() == ["good film", "NA", "fixed", ""]
    with pytest.raises(ValueError, match=r"1 row\(s\).*at rows 5 "):  # counted in the file
        next(chunks)


def test_csv_missing_values_outside_the_text_and_json_numbers(tmp_path):
    csv = tmp_path / "a.csv"
    csv.write_text("text,label,split\nfirst,,train\n,b,test\n", encoding="utf-8")
    got = load_texts(csv)
    assert got.text.tolist() == ["first", ""]  # an empty cell is an empty document
    assert got.label.isna().tolist() == [True, False]  # elsewhere it is a missing value
    assert got.split.tolist() == ["train", "test"]  # kept when present
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text('{"text": 42, "label": 1}\n{"text": "x", "label": 2}\n', encoding="utf-8")
    assert load_texts(jsonl).text.tolist() == ["42", "x"]  # a JSON number is read as its text


def test_folder_per_class(tmp_path):
    for label, texts in {"pos": ["great", "fine"], "neg": ["awful"], ".hidden": ["x"]}.items():
        (tmp_path / "imdb" / label).mkdir(parents=True)
        for i, t in enumerate(texts):
            (tmp_path / "imdb" / label / f"{i}.txt").write_text(t)
    (tmp_path / "imdb" / "pos" / "bad.txt").write_bytes(b"caf\xe9")  # latin-1, not fatal
    folder = load_texts(tmp_path / "imdb")
    assert folder.values.tolist() == [["awful", "neg"], ["great", "pos"], ["fine", "pos"],
                                      ["caf\ufffd", "pos"]]
    assert read_folder(tmp_path / "imdb").equals(folder)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no sub-folders with files"):
        load_texts(tmp_path / "empty")


def test_reader_errors(corpus, tmp_path):
    path = _write(corpus, tmp_path / "a.csv")
    with pytest.raises(ValueError, match=r"no column 'text'; its columns are \['id', 'review', "
                                         r"'stars', 'other'\].*--text-column"):
        load_texts(path)
    with pytest.raises(ValueError, match="no column 'body'"):
        next(read_chunks(_write(corpus, tmp_path / "a.parquet"), ["body"]))
    with pytest.raises(ValueError, match="no column 'body'"):
        next(read_chunks(_write(corpus, tmp_path / "a.jsonl"), ["body"]))
    with pytest.raises(FileNotFoundError, match="nope.csv does not exist"):
        load_texts(tmp_path / "nope.csv")
    with pytest.raises(ValueError, match="unsupported file type; use .csv"):
        next(read_chunks(tmp_path / "a.xlsx", ["text"]))
    with pytest.raises(ValueError, match="chunk_size=0"):
        next(read_chunks(path, ["review"], chunk_size=0))
    assert file_format("x.NDJSON") == "jsonl" and file_format("x.pq") == "parquet"


@pytest.mark.parametrize("name, content, said", [
    ("a.csv", "", "is empty: it holds no header and no rows"),
    ("a.csv", "\n\n", "is empty: it holds no header and no rows"),
    ("a.csv", "text,label\n", "is empty: it has no rows of documents (a header only)"),
    ("a.jsonl", "", "is empty: it holds no header and no rows")])
def test_empty_files_have_no_rows_and_load_texts_says_they_are_empty(name, content, said, tmp_path):
    """Streaming readers give no rows (an empty output follows); training data must have rows."""
    path = tmp_path / name
    path.write_text(content)
    assert list(read_chunks(path, ["text"])) == []
    assert read_table(path, ["text", "label"]).columns.tolist() == ["text", "label"]
    with pytest.raises(ValueError, match=re.escape(f"{name} {said}. Pass the file that holds your")):
        load_texts(path)


def test_bytes_not_in_the_encoding_name_the_line_and_the_encoding_to_pass(tmp_path):
    rows = "text,label\nthe cat,a\nun caf\u00e9 cr\u00e8me,b\n"
    latin = tmp_path / "latin.csv"
    latin.write_bytes(rows.encode("cp1252"))
    with pytest.raises(ValueError, match=r"latin.csv is not utf-8 text: byte 0xe9 on line 3 cannot "
                                         r"be decoded. Pass its encoding \(encoding=cp1252; on the "
                                         r"command line --encoding cp1252\)"):
        load_texts(latin)
    assert load_texts(latin, encoding="cp1252")["text"].tolist() == ["the cat", "un caf\u00e9 cr\u00e8me"]
    wide = tmp_path / "wide.csv"  # what spreadsheets call "Unicode text": UTF-16 with its mark
    wide.write_bytes(rows.encode("utf-16"))
    with pytest.raises(ValueError, match=r"encoding=utf-16; .*starts with a UTF-16 byte-order mark"):
        next(read_chunks(wide, ["text"]))
    assert load_texts(wide, encoding="utf-16")["label"].tolist() == ["a", "b"]
    marked = tmp_path / "bom.csv"  # a UTF-8 byte-order mark is not part of the first column's name
    marked.write_bytes(rows.encode("utf-8-sig"))
    assert load_texts(marked)["text"].tolist()[0] == "the cat"
    with pytest.raises(ValueError, match="encoding='utf-9' is not an encoding Python knows"):
        load_texts(marked, encoding="utf-9")


@pytest.mark.parametrize("values, said", [
    (["", "  ", ""], "all 3 values are empty"),
    ([3, 17, 4.5], r"it holds only numbers \(such as 3.0, 17.0, 4.5\): an id, a score or a label"),
])
def test_a_text_column_without_one_document_is_refused(values, said, tmp_path):
    path = _write(pd.DataFrame({"text": values, "label": ["a", "b", "a"]}), tmp_path / "t.csv")
    with pytest.raises(ValueError, match=rf"t.csv: column 'text' has no text to learn from: {said}"):
        load_texts(path)
    mixed = _write(pd.DataFrame({"text": ["", "7", "a word"], "label": ["a", "b", "a"]}),
                   tmp_path / "m.csv")
    assert load_texts(mixed)["text"].tolist() == ["", "7", "a word"]  # one document is enough


def test_a_column_named_as_text_and_label_is_named(tmp_path):
    path = _write(pd.DataFrame({"text": ["a", "b"], "label": ["x", "y"]}), tmp_path / "t.csv")
    with pytest.raises(ValueError, match=r"the column 'text' is used twice, as the text and as the "
                                         r"label column"):
        load_texts(path, "text", "text")


def _one_text_per_line(path, n: int = 50) -> list[int]:
    """A one-column export of ``n`` texts, one per line and unquoted, some holding commas;
    returns the data rows (from 0) that hold one."""
    texts = [f"review {i}, which liked it" if i % 3 else f"review {i} was fine" for i in range(n)]
    path.write_text("text\n" + "".join(t + "\n" for t in texts))
    return [i for i, t in enumerate(texts) if "," in t]


def test_a_one_column_file_of_unquoted_texts_with_commas_is_refused_naming_its_rows(tmp_path):
    """Told which columns to read, pandas would cut 33 of these 50 texts at their first comma."""
    path = tmp_path / "reviews.csv"
    rows = _one_text_per_line(path)
    assert len(rows) == 33 and rows[:5] == [1, 2, 4, 5, 7]
    said = (r"reviews.csv: 33 of 50 data rows have 2 fields where the header has 1 \(rows 1, 2, "
            r"4, 5, 7 and 28 more, counted from 0; the first on line 3 of the file\), so they "
            r"cannot be read as written. The file reads as one text per line whose texts hold "
            r"commas without quotes.*or, where the file is one text per line, name it .tsv")
    with pytest.raises(ValueError, match=said):
        load_texts(path, "text", None)
    with pytest.raises(ValueError, match=said):
        next(read_chunks(path, ["text"], chunk_size=10))  # predict and embed read this way
    tsv = path.rename(tmp_path / "reviews.tsv")  # what the error says to do: read whole
    assert load_texts(tsv, "text", None).text.str.contains(",").sum() == 33


@pytest.mark.parametrize("content, said", [
    ("text,label\ngood,pos\nbad, awful,neg\n",
     r"1 of 2 data rows has 3 fields where the header has 2 \(row 1, counted from 0; the first "
     r"on line 3 of the file\), so it cannot be read as written. A field that holds a comma "
     r"must be quoted"),
    ("text,label\ngood,pos\nbad\n", r"1 of 2 data rows has 1 field where the header has 2"),
    ('text,label\n"a, quoted\nline",pos\n\nplain,neg\n', None),  # quotes, a blank line: fine
])
def test_rows_with_another_number_of_fields_are_refused(content, said, tmp_path):
    path = tmp_path / "a.csv"
    path.write_text(content)
    if said is None:
        assert load_texts(path).text.tolist() == ["a, quoted\nline", "plain"]
        return
    with pytest.raises(ValueError, match=said):
        load_texts(path)


def test_a_tab_separated_file_named_csv_is_said_to_be_one(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("text\tlabel\ngood, really\tpos\n")
    with pytest.raises(ValueError, match=r"has no column 'text'; its columns are \['text\\tlabel'"
                                         r"\]. Its header holds tabs: the file looks tab-separated, "
                                         r"but its name says comma-separated. Name it .tsv"):
        load_texts(path)


def test_labels_that_differ_only_by_surrounding_spaces_are_read_as_one_and_said(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("text,label,n\na,pos,1\nb,pos ,2\nc, pos,3\nd,neg,4\ne,other ,5\n")
    got = load_texts(path)
    assert got.label.tolist() == ["pos", "pos", "pos", "neg", "other "]  # one way only: as written
    assert got.attrs["notes"] == ["labels that differ only by surrounding spaces were read as one: "
                                  "' pos', 'pos' and 'pos ' as 'pos'. Strip the spaces to silence "
                                  "this."]
    assert load_texts(path, label_column="n").attrs["notes"] == []  # numbers are left alone


# -- issue 63: a header that names a column twice, sizes before reading, empty label sets --------
@pytest.mark.parametrize("name", ["a.csv", "a.tsv.gz", "a.parquet"])
def test_a_header_that_names_a_column_twice_is_refused_naming_it(name, tmp_path):
    """pandas reads the second ``genre`` as ``genre.1``, a name the file does not hold; a
    header with empty names (trailing separators) is no such case."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / name
    header, row = ["text", "title", "genre", "genre", "label"], ["a film", "t", "g1", "g2", "pos"]
    if name.endswith(".parquet"):
        pq.write_table(pa.table([pa.array([v]) for v in row], names=header), path)
    else:
        _write(pd.DataFrame([row, row], columns=["text", "title", "genre", "genre2", "label"]),
               path)
        import gzip

        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rt") as fh:
            lines = fh.read().replace("genre2", "genre")
        with opener(path, "wt") as fh:
            fh.write(lines)
    message = (f"{path}: its header names the column 'genre' twice (columns 3 and 4, counted "
               "from 1), so which one a command means cannot be told. Give each column its own "
               "name in the file (e.g. genre_2), then name the one to read.")
    for read in (lambda: load_texts(path), lambda: read_table(path, ["text", "genre"]),
                 lambda: next(read_chunks(path, ["title"]))):
        with pytest.raises(ValueError) as caught:
            read()
        assert str(caught.value) == message
    trailing = tmp_path / "trailing.csv"
    trailing.write_text("text,label,,\na film,pos,,\nanother,neg,,\n")
    assert load_texts(trailing).label.tolist() == ["pos", "neg"]


@pytest.mark.parametrize("name", ["a.csv", "a.tsv.gz", "a.jsonl", "a.parquet", "folder"])
def test_a_files_size_before_reading_bounds_what_reading_finds(name, tmp_path):
    """`size_file` counts lines and bytes without parsing: never fewer rows than the reader
    finds (a quoted text spanning lines counts each line), never fewer characters than the
    texts hold; None where the file cannot be sized, so that reading it says why."""
    from embedkit.data.datasets import load_dataset
    from embedkit.data.sizes import size_file

    news = load_dataset("bbc-news").sample(60, random_state=0)[["text", "label"]]
    assert news.text.str.contains("\n").any()  # texts that span lines
    if name == "folder":
        path = tmp_path / "folder"
        for i, (text, label) in enumerate(news.itertuples(index=False)):
            (path / label).mkdir(parents=True, exist_ok=True)
            (path / label / f"{i}.txt").write_text(text)
    else:
        path = _write(news, tmp_path / name)
    size = size_file(path)
    texts = load_texts(path).text
    assert len(texts) == 60 and size.rows >= 60 and size.characters >= texts.str.len().sum()
    if name in ("a.jsonl", "a.parquet", "folder"):
        assert size.rows == 60  # a line (or a file) a row
    assert 0 < size.seconds < 1
    assert size_file(tmp_path / "nope.csv") is None and size_file(tmp_path / "a.xlsx") is None


def test_a_label_cell_of_only_the_separator_is_said_to_hold_no_label(tmp_path):
    path = tmp_path / "a.csv"
    pd.DataFrame({"text": [f"film {i}" for i in range(8)],
                  "genres": ["drama|comedy", "|", "drama", " | ", "comedy", "drama|", "||",
                             "comedy"]}).to_csv(path, index=False)
    got = load_texts(path, label_column="genres")
    assert got.attrs["notes"][-1] == (
        "3 cells of the label column 'genres' hold only '|' (rows 1, 3, 6, counted from 0), read "
        "as a set of no labels. Write the labels there (drama|comedy), or drop those rows.")
    assert load_table(path, ["text"], "genres", ["*"]).attrs["notes"][-1].startswith("3 cells")
    path.write_text("text,genres\na,drama|\nb,comedy\n")
    assert load_texts(path, label_column="genres").attrs["notes"] == []  # a label, and an empty part


@pytest.mark.parametrize("name", ["a.csv", "a.jsonl", "a.parquet"])
def test_a_sample_of_rows_is_uniform_in_file_order_and_the_same_for_a_seed(name, tmp_path, monkeypatch):
    """`read_table(rows=)` (issue 60: a file larger than memory): a sample drawn as the file
    streams by chunks, every row as likely as any other whatever chunk it is in, in the file's
    order, the same for a seed, every row where the file has no more."""
    import embedkit.data.reading as reading

    monkeypatch.setattr(reading, "SAMPLE_CHUNK", 70)  # many chunks, a ragged last one
    n = 1000
    path = _write(pd.DataFrame({"text": [f"doc {i}" for i in range(n)], "label": np.arange(n) % 4}),
                  tmp_path / name)
    counts = np.zeros(n)
    for seed in range(60):
        got = read_table(path, ["text", "label"], rows=250, seed=seed)
        assert len(got) == 250 and got.attrs["file_rows"] == n
        rows = got.index.to_numpy()
        assert (np.diff(rows) > 0).all()  # the file's order, no row twice
        assert got["text"].tolist() == [f"doc {i}" for i in rows]  # each row whole
        counts[rows] += 1
    # each row drawn a quarter of the time: a tenth of the file (100 rows, 60 draws) holds
    # 1,500 of the 15,000 drawn, with a standard deviation near 34 by chance
    tenths = counts.reshape(10, -1).sum(axis=1)
    assert np.abs(tenths - 1500).max() < 150, tenths
    again = read_table(path, ["text", "label"], rows=250, seed=7)
    assert again.index.tolist() == read_table(path, ["text", "label"], rows=250, seed=7).index.tolist()
    assert len(read_table(path, ["text", "label"], rows=n + 5)) == n
    with pytest.raises(ValueError, match=r"rows=0; pass a positive number of rows"):
        read_table(path, ["text", "label"], rows=0)


def test_a_sampled_read_keeps_the_checks_and_says_the_files_rows(tmp_path):
    """A sample read by `load_texts` / `load_table` is read as the whole file would be: its
    labels, a missing text an error naming the row wherever the sample falls."""
    path = tmp_path / "a.csv"
    pd.DataFrame({"text": ["good", "bad", "fine", "poor"] * 50, "label": ["p", "n", "p ", "n"] * 50,
                  "age": range(200)}).to_csv(path, index=False)
    got = load_texts(path, rows=40, seed=0)
    assert len(got) == 40 and got.attrs["file_rows"] == 200 and set(got["label"]) == {"p", "n"}
    table = load_table(path, ["text"], "label", ["age"], rows=40, seed=0)
    assert table["age"].tolist() == sorted(table["age"]) and table.attrs["file_rows"] == 200
    assert table["age"].tolist() != list(range(40))  # drawn from the whole file, not its head
    broken = tmp_path / "b.jsonl"
    pd.DataFrame({"text": ["a"] * 150 + [None] + ["b"] * 49, "label": [0, 1] * 100}).to_json(
        broken, orient="records", lines=True)
    with pytest.raises(ValueError, match=r"1 row\(s\) have no text in column 'text'.*at rows 150"):
        load_texts(broken, rows=10)
