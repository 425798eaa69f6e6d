"""The vectorized tokenizer gives exactly the tokens of the regex it replaced, everywhere.

The reference is the code path embedkit used before: ``re.findall(DEFAULT_TOKEN_PATTERN,
doc.lower())`` per document. It is compared with `Tokenizer.tokenize_all` / ``tokenize_ids`` on
every built-in dataset and on hostile text (every Unicode code point, emoji, CJK, combining
marks, lone surrogates, control characters, very long tokens, apostrophe/hyphen edge cases).
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from embedkit.data import documents
from embedkit.data.datasets import DATASETS, load_dataset
from embedkit.data.documents import DEFAULT_TOKEN_PATTERN, TokenizedDocuments, Tokenizer

_REGEX = re.compile(DEFAULT_TOKEN_PATTERN)


@pytest.fixture(autouse=True)
def kernels_for_every_batch(monkeypatch):
    """Small batches normally go to re.findall; here every batch takes the vectorized path."""
    monkeypatch.setattr(documents, "_KERNELS_FROM_CHARS", 0)


def reference(docs, lowercase=True):
    return [_REGEX.findall(d.lower() if lowercase else d) for d in docs]


def check_same(docs, lowercase=True):
    tok = Tokenizer(lowercase=lowercase)
    expected = reference(docs, lowercase)
    got = tok.tokenize_ids(docs)
    lists = got.lists()
    if lists != expected:  # name the first differing document, not a 10,000-line diff
        row = next(i for i, (a, b) in enumerate(zip(lists, expected, strict=True)) if a != b)
        raise AssertionError(f"document {row} {docs[row][:200]!r}: {lists[row][:20]} != "
                             f"{expected[row][:20]}")
    assert len(got.words) == len(set(got.words))  # each distinct token once
    assert got.lengths.tolist() == [len(t) for t in expected]
    return got


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_same_tokens_as_the_regex_on_every_built_in_dataset(name):
    texts = load_dataset(name).iloc[:, 0].tolist()  # the text (a table's first text column)
    check_same(texts)
    check_same(texts[:500], lowercase=False)


def test_every_code_point_in_every_position(monkeypatch):
    """Each code point (surrogates included) next to letters, joiners, digits and spaces, in
    documents cut at random places, tokenized in chunks small enough to split mid-batch."""
    monkeypatch.setattr(documents, "_CHUNK_CHARS", 1 << 12)
    rng = np.random.default_rng(0)
    points = rng.permutation(0x110000).astype("<u4")
    neighbours = np.array([ord(c) for c in "aZ'-_ \n1é"], dtype="<u4")
    text = np.stack([points, rng.choice(neighbours, points.size)], axis=1).ravel()
    text = text[np.arange(text.size) % 6 != 5].tobytes().decode("utf-32-le", "surrogatepass")
    cuts = np.sort(rng.choice(len(text), 3000, replace=False)).tolist()
    docs = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    check_same(docs)
    check_same(docs[:500], lowercase=False)


HOSTILE = [
    "",
    "   \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u205f\u3000",
    "Don't panic, it's e-mail! rock'n'roll state-of-the-art -- 'quoted' - x- -y a''b a--b a'-b",
    "'''---'a-'b'-c-''",
    "snake_case __dunder__ _ a_b-c_d",
    "İstanbul İİ ΣΑΣ ΟΔΟΣ σΣ Σ ﬁne ß ẞ Ǆ ǅ",  # special lower-casing, final sigma, ligatures
    "café (e + U+0301): cafe\u0301 x\u0301y \u0301 \u0301\u0301 n\u0303o",  # combining marks
    "emoji 😀😀x 👍🏽 👨‍👩‍👧 🇫🇷 a😀b ❤️",
    "日本語のテキスト、です。中文，标点！한국어 텍스트",
    "mixed Ελληνικά русский עברית العربية देवनागरी ไทย 123 ١٢٣ ߀ Ⅻ ½ ²³",
    "controls \x00 a\x00b \x01\x02\x7f \x1b[31m red \u200b zero\u200bwidth \ufeff bom \ufffd",
    "lone surrogates \ud800 a\udfffb \ud83d\ude00 paired-looking",
    "x" * 100_000 + " " + "-".join(["ab"] * 20_000) + " " + "!" * 5000,
    "tabs\tand\nnew\r\nlines\x0bvertical",
]


def test_hostile_text():
    got = check_same(HOSTILE)
    assert got.lists()[2][:5] == ["don't", "panic", ",", "it's", "e-mail"]
    check_same(HOSTILE, lowercase=False)
    for doc in HOSTILE:  # alone, each document is also its own batch (and its own width)
        check_same([doc])


def test_random_text_over_a_hostile_alphabet():
    rng = random.Random(1)
    alphabet = list("ab1_'- \n.,") + ["\u0301", "😀", "日", "İ", "Σ", "\ud800", "\x00", "\xa0", "é"]
    docs = ["".join(rng.choices(alphabet, k=rng.randint(0, 60))) for _ in range(3000)]
    check_same(docs)
    check_same(docs, lowercase=False)


def test_batch_results_do_not_depend_on_chunking(monkeypatch):
    docs = reference_docs = ["The cat sat.", "", "a-b a'b £5 — naïve café", "日本 😀 end"] * 50
    whole = Tokenizer().tokenize_ids(reference_docs)
    monkeypatch.setattr(documents, "_CHUNK_CHARS", 16)
    pieces = Tokenizer().tokenize_ids(docs)
    assert pieces.words == whole.words  # distinct tokens in order of first occurrence
    np.testing.assert_array_equal(pieces.ids, whole.ids)
    np.testing.assert_array_equal(pieces.lengths, whole.lengths)


def test_tokenized_documents_layout():
    t = Tokenizer().tokenize_ids(["b a b", "", "c a"])
    assert t.words == ["b", "a", "c"]
    assert t.ids.tolist() == [0, 1, 0, 2, 1] and t.lengths.tolist() == [3, 0, 2]
    assert t.counts().tolist() == [2, 2, 1]
    assert t.document_frequencies().tolist() == [1, 2, 1]
    assert t.document_index().tolist() == [0, 0, 0, 2, 2]
    back = TokenizedDocuments.from_lists(t.lists())
    assert back.words == t.words and back.ids.tolist() == t.ids.tolist()
    empty = Tokenizer().tokenize_ids([])
    assert empty.lists() == [] and empty.n_tokens == 0


@pytest.mark.parametrize("seed", [True, False], ids=["seeded", "looked-up"])
def test_vocabulary_positions(monkeypatch, seed):
    """Large batches seed the hash pass with the vocabulary, small ones look their words up in
    it; both locate every word in it and give the same tokens."""
    monkeypatch.setattr(documents, "_SEED_CHARS_PER_WORD", 0 if seed else 10**9)
    vocabulary = {w: i for i, w in enumerate(["the", "😀", "\ud800", "zzz", "cat", "İ", "a b"])}
    docs = HOSTILE[:12] + ["The cat 😀 sat", "", "the the"]
    got = Tokenizer().tokenize_ids(docs, vocabulary=vocabulary)
    assert got.lists() == reference(docs)
    assert len(got.words) == len(set(got.words))
    expected = [vocabulary.get(w, -1) for w in got.words]
    assert got.positions.tolist() == expected
    if seed:  # the whole vocabulary leads, occurring or not
        assert got.words[:len(vocabulary)] == list(vocabulary)
    assert set(got.words) - set(vocabulary) == set(Tokenizer().tokenize_ids(docs).words) - set(vocabulary)
    empty = Tokenizer().tokenize_ids(["", " "], vocabulary=vocabulary)
    assert empty.lists() == [[], []] and empty.positions.tolist() == []


def test_small_batches_use_the_regex(monkeypatch):
    monkeypatch.setattr(documents, "_KERNELS_FROM_CHARS", 10**6)
    monkeypatch.setattr(documents, "_tokenize_default", None)  # would fail if called
    assert Tokenizer().tokenize_all(HOSTILE[:12]) == reference(HOSTILE[:12])
    located = Tokenizer().tokenize_ids(["the cat"], vocabulary={"cat": 0})
    assert located.positions.tolist() == [-1, 0]


def test_other_patterns_use_the_regex():
    tok = Tokenizer(pattern=r"\w+")
    docs = ["Don't e-mail", "x_y z"]
    assert tok.tokenize_all(docs) == [re.findall(r"\w+", d.lower()) for d in docs]
