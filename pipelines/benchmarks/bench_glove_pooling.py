"""Static word vectors over BBC News, end to end from raw text: embedkit's transform against the
code path it replaced (kept below as ``_reference_*``: one ``re.findall`` per document, one dict
look-up per token, pooling over the whole 400k-word table) and a plain numpy loop, for GloVe
mean pooling, ``output="sequence"`` and ``TokenIndexer``, plus the tokenizer alone (what the
gensim trainers receive). Run by hand from the checkout:

    PYTHONPATH=. python pipelines/benchmarks/bench_glove_pooling.py [rounds]

Prints tokens/s (all tokens of the input, over the best of ``rounds`` interleaved rounds) and the
ratio to the old code path measured in the same run; the machine may be shared, so only the
ratios mean anything. Every path's output is checked against the others before timing.
"""

from __future__ import annotations

import itertools
import re
import sys
import time

import numpy as np
import scipy.sparse as sp

from embedkit.data.documents import DEFAULT_TOKEN_PATTERN, validate_documents


# -- the replaced code path (embedkit before the vectorized tokenizer), default parameters ----------
def _reference_tokens(docs):
    findall = re.compile(DEFAULT_TOKEN_PATTERN).findall
    return [findall(d.lower()) for d in docs]


def _reference_resolve(wv, tokens):
    """Row of every token (a dict look-up per token); unknown tokens dropped (``oov="skip"``)."""
    flat = list(itertools.chain.from_iterable(tokens))
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    codes = wv.rows(flat)
    dropped = codes < 0
    if dropped.any():
        doc = np.repeat(np.arange(len(tokens)), lengths)
        lengths = lengths - np.bincount(doc[dropped], minlength=len(tokens))
        codes = codes[~dropped]
        flat = np.asarray(flat, dtype=object)[~dropped].tolist()
    return codes, lengths, flat


def _reference_pooled(emb, docs):
    """``GloveEmbedder(pooling="mean").transform``: a (docs x 400k words) CSR times the table."""
    tokens = _reference_tokens(validate_documents(docs))
    codes, lengths, _ = _reference_resolve(emb.word_vectors_, tokens)
    n = len(tokens)
    vectors = emb.word_vectors_.vectors
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    X = sp.csr_matrix((np.ones(codes.size, np.float32), codes, indptr), shape=(n, vectors.shape[0]))
    out = np.asarray(X @ vectors, dtype=np.float32)
    out /= np.maximum(lengths, 1e-12)[:, None].astype(np.float32)
    out[lengths == 0] = 0.0
    assert np.isfinite(out).all()
    return out


def _reference_sequence(emb, docs):
    """``GloveEmbedder(output="sequence").transform``."""
    from embedkit.sequences import Sequences

    tokens = _reference_tokens(validate_documents(docs))
    codes, lengths, flat = _reference_resolve(emb.word_vectors_, tokens)
    n = len(tokens)
    starts = np.concatenate([[0], np.cumsum(lengths)])[:-1]
    step = np.arange(codes.size, dtype=np.int64) - np.repeat(starts, lengths)
    keep = step < emb.max_length
    doc = np.repeat(np.arange(n), lengths)[keep]
    step, codes = step[keep], codes[keep]
    new_len = np.minimum(lengths, emb.max_length)
    width = max(int(new_len.max()), 1)
    kept = np.asarray(flat, dtype=object)[keep]
    bounds = np.concatenate([[0], np.cumsum(new_len)])
    tok = np.empty(n, dtype=object)
    tok[:] = [kept[bounds[i]:bounds[i + 1]].tolist() for i in range(n)]
    values = np.zeros((n, width, emb.dim_), dtype=np.float32)
    values[doc, step] = emb.word_vectors_.vectors[codes]
    assert np.isfinite(values).all()
    return Sequences(values, new_len, tokens=tok)


def _reference_token_ids(indexer, docs):
    """``TokenIndexer().transform``: a pandas hash look-up per token."""
    import pandas as pd

    from embedkit.sequences import TokenIds

    tokens = _reference_tokens(validate_documents(docs))
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    flat = pd.Index(indexer.vocabulary_, dtype=object).get_indexer(
        list(itertools.chain.from_iterable(tokens)))
    flat[flat < 0] = 1
    ids = np.zeros((len(tokens), max(int(lengths.max()), 1)), dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    ids[np.repeat(np.arange(len(tokens)), lengths),
        np.arange(len(flat)) - np.repeat(starts, lengths)] = flat
    token_array = np.empty(len(tokens), dtype=object)
    token_array[:] = tokens
    return TokenIds(ids, lengths, indexer.vocabulary_, tokens=token_array)


def _numpy_loop(wv, docs):
    """What a user writes by hand: tokenize, look up the known words, average; per document."""
    findall = re.compile(DEFAULT_TOKEN_PATTERN).findall
    index, vectors = wv.index, wv.vectors
    out = np.zeros((len(docs), wv.dim), dtype=np.float32)
    for i, doc in enumerate(docs):
        rows = [index[w] for w in findall(doc.lower()) if w in index]
        if rows:
            out[i] = vectors[rows].mean(0)
    return out


def main(rounds: int = 5) -> None:
    from embedkit import GloveEmbedder, TokenIndexer
    from embedkit.data.datasets import load_dataset
    from embedkit.data.documents import Tokenizer

    docs = load_dataset("bbc-news")["text"].tolist()
    pooled = GloveEmbedder().fit(docs)
    sequence = GloveEmbedder(output="sequence").fit(docs)
    indexer = TokenIndexer().fit(docs)
    wv = pooled.word_vectors_
    tok = Tokenizer()
    n_tokens = sum(map(len, _reference_tokens(docs)))
    print(f"BBC News: {len(docs)} documents, {n_tokens} tokens; GloVe {wv.vectors.shape}")

    # same outputs before any timing
    assert tok.tokenize_all(docs) == _reference_tokens(docs)
    new = pooled.transform(docs)
    np.testing.assert_allclose(new, _reference_pooled(pooled, docs), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(new, _numpy_loop(wv, docs), rtol=1e-4, atol=1e-5)
    seq, seq_ref = sequence.transform(docs), _reference_sequence(sequence, docs)
    np.testing.assert_array_equal(seq.values, seq_ref.values)
    assert seq.tokens.tolist() == seq_ref.tokens.tolist()
    ids, ids_ref = indexer.transform(docs), _reference_token_ids(indexer, docs)
    np.testing.assert_array_equal(ids.ids, ids_ref.ids)
    assert ids.tokens.tolist() == ids_ref.tokens.tolist()

    rows = [  # (group, label, function); the first of each group is the old code path
        ("tokenize", "old: re.findall per document", lambda: _reference_tokens(docs)),
        ("tokenize", "new: Tokenizer.tokenize_ids (flat ids)", lambda: tok.tokenize_ids(docs)),
        ("tokenize", "new: Tokenizer.tokenize_all (lists, for gensim)", lambda: tok.tokenize_all(docs)),
        ("pooled", "old: GloveEmbedder().transform", lambda: _reference_pooled(pooled, docs)),
        ("pooled", "new: GloveEmbedder().transform", lambda: pooled.transform(docs)),
        ("pooled", "plain numpy loop", lambda: _numpy_loop(wv, docs)),
        ("sequence", "old: GloveEmbedder(output='sequence')", lambda: _reference_sequence(sequence, docs)),
        ("sequence", "new: GloveEmbedder(output='sequence')", lambda: sequence.transform(docs)),
        ("ids", "old: TokenIndexer().transform", lambda: _reference_token_ids(indexer, docs)),
        ("ids", "new: TokenIndexer().transform", lambda: indexer.transform(docs)),
    ]
    wall = [float("inf")] * len(rows)
    cpu = [float("inf")] * len(rows)
    for _ in range(rounds):  # interleaved, so a burst of load on a shared machine hits every path
        for i, (_, _, fn) in enumerate(rows):
            t, c = time.perf_counter(), time.process_time()
            fn()
            wall[i] = min(wall[i], time.perf_counter() - t)
            cpu[i] = min(cpu[i], time.process_time() - c)
    print("best of", rounds, "rounds; wall clock, and CPU time of this process (less sensitive to "
          "other processes on a shared machine)")
    old_wall, old_cpu = {}, {}
    for (group, label, _), w, c in zip(rows, wall, cpu, strict=True):
        old_wall.setdefault(group, w)
        old_cpu.setdefault(group, c)
        print(f"{group:9s} {label:50s} {n_tokens / w / 1e6:5.2f}M tokens/s {old_wall[group] / w:5.2f}x"
              f" | CPU {n_tokens / c / 1e6:5.2f}M tokens/s {old_cpu[group] / c:5.2f}x the old path")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
