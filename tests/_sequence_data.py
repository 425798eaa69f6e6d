"""Token-id and sequence data for the sequence-head tests (not a test module).

Shared by `test_sequence_heads.py`, `test_selfattention.py` and the ``negation`` fixture of
`conftest.py`: seeded toy data on which the architectures differ, random padded batches, and
the small training settings the tests use.
"""

from __future__ import annotations

import numpy as np
import torch

from embedkit.sequences import Sequences, TokenIds

POS = ["good", "great", "fun", "excellent", "nice", "brilliant"]
NEG = ["bad", "awful", "boring", "dull", "poor", "terrible"]
NOUNS = ["film", "plot", "acting", "story", "music", "cast"]
VOCAB = ["<pad>", "<unk>", "the", "was", "not", "and"] + NOUNS + POS + NEG


def to_ids(docs: list[list[str]], vocabulary: list[str]) -> TokenIds:
    index = {w: i for i, w in enumerate(vocabulary)}
    lengths = np.array([len(d) for d in docs])
    ids = np.zeros((len(docs), max(lengths.max(), 1)), dtype=np.int64)
    for i, d in enumerate(docs):
        ids[i, : len(d)] = [index.get(w, 1) for w in d]
    return TokenIds(ids, lengths, vocabulary, tokens=docs)


def negation_data(n: int, seed: int):
    """Two clauses, one positive and one negative adjective, exactly one of them after "not".
    Negating the positive one makes the review negative, negating the negative one makes it
    positive. Both labels have the same bag of words, so only word order can tell them apart."""
    rs = np.random.RandomState(seed)
    docs, y = [], []
    for _ in range(n):
        n1, n2 = rs.choice(NOUNS, 2, replace=False)
        negate_positive = rs.rand() < 0.5
        c1 = ["the", n1, "was"] + (["not"] if negate_positive else []) + [rs.choice(POS)]
        c2 = ["the", n2, "was"] + ([] if negate_positive else ["not"]) + [rs.choice(NEG)]
        if rs.rand() < 0.5:
            c1, c2 = c2, c1
        docs.append([str(t) for t in c1 + ["and"] + c2])
        y.append(0 if negate_positive else 1)
    return to_ids(docs, VOCAB), np.array(y)


def first_token_data(n: int, seed: int, length: int = 100):
    """Label = the first token ("A" or "B"); the other 99 tokens are random filler."""
    rs = np.random.RandomState(seed)
    vocabulary = ["<pad>", "<unk>", "A", "B"] + [f"w{i}" for i in range(20)]
    ids = rs.randint(4, len(vocabulary), size=(n, length))
    y = rs.randint(0, 2, size=n)
    ids[:, 0] = 2 + y
    return TokenIds(ids, np.full(n, length), vocabulary), y


def random_sequences(n=24, width=7, dim=6, seed=0):
    rs = np.random.RandomState(seed)
    lengths = rs.randint(1, width + 1, size=n)
    lengths[3] = 0  # an empty document
    lengths[0] = width
    values = rs.randn(n, width, dim).astype(np.float32)
    values[np.arange(width)[None, :] >= lengths[:, None]] = 0.0
    return Sequences(values, lengths)


def random_ids(n=24, width=7, vocab=15, seed=0, pad_vector=True):
    rs = np.random.RandomState(seed)
    lengths = rs.randint(1, width + 1, size=n)
    lengths[3] = 0
    lengths[0] = width
    ids = rs.randint(2, vocab, size=(n, width))
    ids[np.arange(width)[None, :] >= lengths[:, None]] = 0
    # pretrained vectors whose padding row is NOT zero: masking must not rely on it
    vectors = rs.randn(vocab, 5).astype(np.float32) if pad_vector else None
    return TokenIds(ids, lengths, ["<pad>", "<unk>"] + [f"t{i}" for i in range(vocab - 2)], vectors)


def pad_more(X, extra: int):
    """The same documents with ``extra`` more padding columns."""
    if isinstance(X, Sequences):
        values = np.concatenate([X.values, np.zeros((len(X), extra, X.dim), np.float32)], axis=1)
        return Sequences(values, X.lengths, X.tokens)
    ids = np.concatenate([X.ids, np.zeros((len(X), extra), np.int64)], axis=1)
    return TokenIds(ids, X.lengths, X.vocabulary, X.vectors, X.tokens)


def as_tensors(X):
    x = X.values if isinstance(X, Sequences) else X.ids
    return torch.as_tensor(x), torch.as_tensor(X.lengths)


TINY = dict(epochs=2, batch_size=5, early_stopping=False, dropout=0.1)
