"""Inputs for the head benchmarks, built without a representation class: token ids over a
training-set vocabulary (embedkit.data.documents.Tokenizer), optionally with GloVe-50d vectors, and
GloVe token Sequences straight from the packaged files."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from embedkit.data.documents import Tokenizer
from embedkit.sequences import Sequences, TokenIds
from embedkit.storage.resources import resource_path


def tokenize(texts, max_length: int | None = None) -> list[list[str]]:
    docs = Tokenizer()(texts) if isinstance(texts, str) else Tokenizer().tokenize_all(texts)
    return [d[:max_length] for d in docs] if max_length else docs


def vocabulary(train_docs: list[list[str]], min_count: int = 1) -> list[str]:
    counts = Counter(t for d in train_docs for t in d)
    return ["<pad>", "<unk>"] + sorted(w for w, c in counts.items() if c >= min_count)


def token_ids(docs: list[list[str]], vocab: list[str], vectors=None) -> TokenIds:
    index = {w: i for i, w in enumerate(vocab)}
    lengths = np.array([len(d) for d in docs])
    ids = np.zeros((len(docs), max(int(lengths.max()), 1)), dtype=np.int64)
    flat = np.array([index.get(t, 1) for d in docs for t in d], dtype=np.int64)
    rows = np.repeat(np.arange(len(docs)), lengths)
    cols = np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    ids[rows, cols] = flat
    return TokenIds(ids, lengths, vocab, vectors, tokens=docs)


def glove_vectors(vocab: list[str]) -> tuple[np.ndarray, float]:
    """GloVe-50d rows for ``vocab`` (zeros for <pad>, <unk> and words GloVe lacks) and coverage."""
    folder = resource_path("glove-6b-50d")
    words = pd.read_parquet(folder / "glove_6B_index.parquet")["index"]
    emb = np.load(folder / "glove_6B_50d_emb.npy", mmap_mode="r")
    where = pd.Index(words).get_indexer(vocab)
    out = np.zeros((len(vocab), emb.shape[1]), dtype=np.float32)
    found = where >= 0
    found[:2] = False
    out[found] = emb[where[found]]
    return out, float(found[2:].mean())


def glove_sequences(ids: TokenIds, vectors: np.ndarray) -> Sequences:
    return Sequences(vectors[ids.ids], ids.lengths, tokens=ids.tokens)
