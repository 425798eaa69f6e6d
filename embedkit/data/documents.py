"""Input validation and the one word tokenizer shared by every word-level representation."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

__all__ = ["CHARS_PER_TOKEN", "DEFAULT_TOKEN_PATTERN", "MAX_DOCUMENT_CHARS", "TokenizedDocuments",
           "Tokenizer", "validate_documents", "within_reach"]

#: Words (letters/digits, with inner apostrophes or hyphens such as "don't", "e-mail")
#: and single punctuation marks, the way GloVe and word2vec vocabularies split text.
DEFAULT_TOKEN_PATTERN = r"\w+(?:['\-]\w+)*|[^\w\s]"

MAX_ROWS_SHOWN = 5

#: the most characters of one document a representation reads (a long book, some 150,000
#: words): beyond it a bag of words changes no prediction it would make, and costs time and
#: memory without bound (one 50 MB text in 300 rows took 7.8 GB); `Representation` cuts there
MAX_DOCUMENT_CHARS = 1_000_000
#: characters a sub-word token spans, at most, in text (English runs near 4-5, a URL near 3):
#: an encoder that reads ``max_length`` tokens never needs more than this many times as many
#: characters, so a document is cut there before it is tokenized (tokenizing a 50 MB text only
#: to keep its first 256 tokens took a minute)
CHARS_PER_TOKEN = 32


def within_reach(docs: list[str], chars: int | None) -> list[str]:
    """``docs`` with every document longer than ``chars`` characters cut to its first ``chars``
    (None: as they are). The list itself comes back where none is longer.

    Examples
    --------
    >>> within_reach(["a short one", "a much longer document"], 10)
    ['a short on', 'a much lon']
    """
    if chars is None or max(map(len, docs), default=0) <= chars:
        return docs
    return [d if len(d) <= chars else d[:chars] for d in docs]


def _describe(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, float) and value != value:
        return "NaN"
    return type(value).__name__


def validate_documents(X: Any, *, name: str = "X") -> list[str]:
    """Return ``X`` as a list of ``str``, or raise a ``ValueError`` that names the bad rows.

    Accepts a list, tuple, numpy array, pandas Series, a one-column DataFrame, or any other
    non-string iterable of strings. A bare ``str`` is rejected (it would be read as a list of
    characters), as scikit-learn's text vectorizers reject it.

    Parameters
    ----------
    X : iterable of str
        The documents.
    name : str, default="X"
        Name used in error messages.

    Returns
    -------
    list of str

    Examples
    --------
    >>> validate_documents(("a cat", "a dog"))
    ['a cat', 'a dog']
    """
    if isinstance(X, (str, bytes)):
        raise ValueError(
            f"{name} is a single {type(X).__name__}; expected an iterable of documents. "
            f"Wrap it in a list: [{name}]."
        )
    if hasattr(X, "columns") and hasattr(X, "iloc"):  # pandas DataFrame
        if X.shape[1] != 1:
            raise ValueError(
                f"{name} is a DataFrame with {X.shape[1]} columns {list(X.columns)[:5]}; expected "
                "one text column. Select it, e.g. df['text'], or use a ColumnTransformer."
            )
        X = X.iloc[:, 0]
    if hasattr(X, "iloc"):  # pandas Series: positions, not index labels
        values = X.to_numpy(dtype=object)
    elif isinstance(X, np.ndarray):
        if X.ndim == 2 and X.shape[1] == 1:
            X = X[:, 0]
        if X.ndim != 1:
            raise ValueError(
                f"{name} is an array of shape {X.shape}; expected a 1-D array of documents."
            )
        values = X
    elif hasattr(X, "shape") and hasattr(X, "lengths"):
        raise ValueError(
            f"{name} is already a {type(X).__name__} of vectors; a representation needs raw text. "
            "Put the representation before the head in the Pipeline, not after."
        )
    elif isinstance(X, Iterable):
        values = X if isinstance(X, (list, tuple)) else list(X)
    else:
        raise ValueError(
            f"{name} is a {type(X).__name__}; expected an iterable of str "
            "(list, tuple, numpy array, pandas Series or one-column DataFrame)."
        )
    docs = list(values)
    bad = [i for i, d in enumerate(docs) if not isinstance(d, str)]
    if bad:
        shown = ", ".join(f"{i} ({_describe(docs[i])})" for i in bad[:MAX_ROWS_SHOWN])
        more = f" and {len(bad) - MAX_ROWS_SHOWN} more" if len(bad) > MAX_ROWS_SHOWN else ""
        raise ValueError(
            f"{name} must contain only str documents; {len(bad)} row(s) do not, at positions "
            f"{shown}{more}. Fill or drop them first, e.g. series.fillna('') or "
            "series.dropna(); decode bytes with .decode('utf-8')."
        )
    docs = [d if type(d) is str else str(d) for d in docs]  # numpy str_ -> plain str
    _check_unicode(docs, name)
    return docs


def _check_unicode(docs: list[str], name: str) -> None:
    """Refuse lone surrogates ("\\ud800"): they are not Unicode text (no encoding can write them)
    and only arise from a decoding mistake upstream, so they are reported, not passed on.

    ``str.isascii`` is O(1) in CPython, so only non-ASCII documents are encoded to check them."""
    bad = [i for i, d in enumerate(docs) if not d.isascii() and not _encodes(d)]
    if not bad:
        return
    shown = ", ".join(map(str, bad[:MAX_ROWS_SHOWN]))
    more = f" and {len(bad) - MAX_ROWS_SHOWN} more" if len(bad) > MAX_ROWS_SHOWN else ""
    raise ValueError(
        f"{name} holds text that is not valid Unicode (lone surrogate code points such as "
        f"'\\ud800') in {len(bad)} row(s), at positions {shown}{more}. They come from decoding "
        "bytes with errors='surrogateescape' or from broken JSON escapes: decode with "
        "errors='replace', or clean the text with d.encode('utf-8', 'replace').decode('utf-8')."
    )


def _encodes(doc: str) -> bool:
    try:
        doc.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class TokenizedDocuments:
    """Documents as one flat array of token ids over their distinct tokens.

    ``words[ids[k]]`` is the ``k``-th token of the batch; the first ``lengths[0]`` belong to
    document 0, the next ``lengths[1]`` to document 1, and so on. ``words`` holds each distinct
    token once, in order of first occurrence, so a look-up (a vocabulary, a word-vector table) is
    done once per distinct word and spread to every token with ``array[ids]``.

    Attributes
    ----------
    words : list of str
    ids : ndarray of shape (n_tokens,), int64
    lengths : ndarray of shape (n_documents,), int64
    positions : ndarray of shape (len(words),), int64, or None
        Position of each word in the vocabulary given to `Tokenizer.tokenize_ids` or `locate`,
        -1 for words outside it; None without a vocabulary.

    Examples
    --------
    >>> t = Tokenizer().tokenize_ids(["The cat, the hat.", ""])
    >>> t.words, t.ids.tolist(), t.lengths.tolist()
    (['the', 'cat', ',', 'hat', '.'], [0, 1, 2, 0, 3, 4], [6, 0])
    >>> t.lists()
    [['the', 'cat', ',', 'the', 'hat', '.'], []]
    """

    def __init__(self, words: list[str], ids: np.ndarray, lengths: np.ndarray,
                 positions: np.ndarray | None = None):
        self.words = words
        self.ids = ids
        self.lengths = lengths
        self.positions = positions

    @classmethod
    def from_lists(cls, tokens: Iterable[list[str]]) -> TokenizedDocuments:
        """The same batch from one list of tokens per document.

        Examples
        --------
        >>> TokenizedDocuments.from_lists([["a", "b"], [], ["b"]]).ids.tolist()
        [0, 1, 1]
        """
        import pandas as pd

        tokens = tokens if isinstance(tokens, list) else list(tokens)
        lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        flat = np.empty(int(lengths.sum()), dtype=object)
        flat[:] = list(itertools.chain.from_iterable(tokens))
        ids, words = pd.factorize(flat)
        return cls(list(words), ids.astype(np.int64), lengths)

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def n_tokens(self) -> int:
        return int(self.ids.shape[0])

    def document_index(self) -> np.ndarray:
        """Document of every token, ``(n_tokens,)``."""
        return np.repeat(np.arange(len(self), dtype=np.int64), self.lengths)

    def counts(self) -> np.ndarray:
        """How often each of ``words`` occurs in the batch."""
        return np.bincount(self.ids, minlength=len(self.words))

    def document_frequencies(self) -> np.ndarray:
        """In how many documents each of ``words`` occurs."""
        pairs = np.unique(self.document_index() * len(self.words) + self.ids)
        return np.bincount(pairs % max(len(self.words), 1), minlength=len(self.words))

    def split(self, flat: np.ndarray, lengths: np.ndarray | None = None) -> list[list]:
        """Cut a flat per-token array into one list per document (``lengths`` by default)."""
        lengths = self.lengths if lengths is None else lengths
        bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
        return [flat[a:b].tolist() for a, b in itertools.pairwise(bounds)]

    def lists(self) -> list[list[str]]:
        """The tokens of each document, as `Tokenizer.tokenize_all` returns them."""
        words = np.empty(len(self.words), dtype=object)
        words[:] = self.words
        return self.split(words[self.ids])

    def subset(self, mask: np.ndarray) -> TokenizedDocuments:
        """The tokens where ``mask`` (one flag per token) is True, documents kept."""
        kept_before_end = np.concatenate([[0], np.cumsum(mask)])[np.cumsum(self.lengths)]
        return TokenizedDocuments(self.words, self.ids[mask], np.diff(kept_before_end, prepend=0),
                                  self.positions)

    def truncate(self, max_length: int | None) -> TokenizedDocuments:
        """The first ``max_length`` tokens of each document (all of them for None)."""
        if max_length is None or self.lengths.max(initial=0) <= max_length:
            return self
        step = np.arange(self.n_tokens) - np.repeat(np.cumsum(self.lengths) - self.lengths,
                                                    self.lengths)
        return self.subset(step < max_length)

    def padded_index(self, width: int) -> np.ndarray:
        """Position of each token in a row-major ``(n_documents, width)`` padded array."""
        starts = np.cumsum(self.lengths) - self.lengths
        return np.arange(self.n_tokens) + np.repeat(np.arange(len(self)) * width - starts,
                                                     self.lengths)

    def locate(self, vocabulary: Mapping[str, int]) -> TokenizedDocuments:
        """The same tokens with ``positions`` in ``vocabulary`` (a dict look-up per distinct word).

        Examples
        --------
        >>> Tokenizer().tokenize_ids(["b z a b"]).locate({"a": 0, "b": 1}).positions.tolist()
        [1, -1, 0]
        """
        positions = np.fromiter(map(vocabulary.get, self.words, itertools.repeat(-1)),
                                dtype=np.int64, count=len(self.words))
        return TokenizedDocuments(self.words, self.ids, self.lengths, positions)


class Tokenizer:
    """Regex word tokenizer; picklable, so it can travel inside fitted estimators.

    With the default pattern, batches (`tokenize_all`, `tokenize_ids`) are tokenized by numpy
    kernels over the code points of the whole batch instead of one ``re.findall`` per document:
    each character is classified once (word character, whitespace, apostrophe/hyphen, other; the
    classes come from Python's own ``re``, so ``\\w`` and ``\\s`` mean exactly what they mean
    in the pattern, in every script), token boundaries follow from neighbouring classes, and the
    distinct tokens are found with one hash pass (``pyarrow.compute.dictionary_encode``).
    Lowercasing is Python's ``str.lower`` (for Latin-1 text, the same mapping as a byte
    table). The tokens are the pattern's, character for character (``tests/test_tokenizer.py``
    checks every built-in dataset, every code point and hostile text); other patterns, and
    batches of a few thousand characters, where the kernels' set-up costs more than they save,
    use ``re.findall``.

    Parameters
    ----------
    lowercase : bool, default=True
        Lowercase before matching.
    pattern : str, default=DEFAULT_TOKEN_PATTERN
        Regular expression whose matches are the tokens.

    Examples
    --------
    >>> Tokenizer()("Don't panic, it's e-mail!")
    ["don't", 'panic', ',', "it's", 'e-mail', '!']
    """

    def __init__(self, lowercase: bool = True, pattern: str = DEFAULT_TOKEN_PATTERN):
        self.lowercase = lowercase
        self.pattern = pattern
        self._regex = re.compile(pattern)

    def __call__(self, text: str) -> list[str]:
        if self.lowercase:
            text = text.lower()
        return self._regex.findall(text)

    def tokenize_all(self, docs: Iterable[str]) -> list[list[str]]:
        """Tokenize every document: one list of tokens per document."""
        return self.tokenize_ids(docs).lists()

    def tokenize_ids(self, docs: Iterable[str],
                     vocabulary: Mapping[str, int] | None = None) -> TokenizedDocuments:
        """Tokenize every document into a `TokenizedDocuments` (flat ids over distinct words).

        Parameters
        ----------
        docs : iterable of str
        vocabulary : dict, optional
            Distinct words mapped to their positions ``0 .. len(vocabulary) - 1``, in that
            order (e.g. ``{"the": 0, "cat": 1}``); the result's ``positions`` then give each
            word's position in it (-1 outside). A batch much larger than the vocabulary seeds
            the hash pass with it instead of looking words up: ``words`` then starts with the
            whole vocabulary, in order, so ``positions`` is ``0, 1, ...`` there and -1 after.

        Examples
        --------
        >>> t = Tokenizer().tokenize_ids(["The end"], vocabulary={"cat": 0, "the": 1, "dog": 2})
        >>> t.words, t.ids.tolist(), t.positions.tolist()
        (['the', 'end'], [0, 1], [1, -1])
        """
        docs = docs if isinstance(docs, list) else list(docs)
        if self.pattern != DEFAULT_TOKEN_PATTERN or sum(map(len, docs)) < _KERNELS_FROM_CHARS:
            tokens = TokenizedDocuments.from_lists(
                [self._regex.findall(d.lower() if self.lowercase else d) for d in docs])
            return tokens if vocabulary is None else tokens.locate(vocabulary)
        return _tokenize_default(docs, self.lowercase, vocabulary)

    def __getstate__(self):
        return {"lowercase": self.lowercase, "pattern": self.pattern}

    def __setstate__(self, state):
        self.__init__(**state)

    def __repr__(self) -> str:
        return f"Tokenizer(lowercase={self.lowercase!r})"


# character classes of the default pattern, indexed by code point
_SPACE, _WORD, _OTHER, _JOINER = 0, 1, 2, 3
_CHUNK_CHARS = 1 << 18  # characters tokenized at once: the temporaries stay in cache
_SEED_CHARS_PER_WORD = 8  # seed the hash pass with the vocabulary for batches at least this long
_KERNELS_FROM_CHARS = 4096  # smaller batches: re.findall is quicker than the kernels' set-up


@functools.cache
def _character_classes() -> np.ndarray:
    """Class of every code point for `DEFAULT_TOKEN_PATTERN`, read off Python's ``re`` itself."""
    everything = np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    table = np.full(0x110000, _OTHER, dtype=np.uint8)
    for cls, regex in ((_WORD, r"\w+"), (_SPACE, r"\s+")):
        for m in re.finditer(regex, everything):
            table[m.start():m.end()] = cls
    assert table[ord("'")] == table[ord("-")] == _OTHER  # the fast path's premise
    table[[ord("'"), ord("-")]] = _JOINER
    table.flags.writeable = False
    return table


@functools.cache
def _latin1_tables() -> tuple[bytes, bytes, bytes]:
    """``bytes.translate`` arguments for Latin-1 text: ``str.lower``, the character classes and
    the whitespace characters.

    Every Latin-1 character lowercases to one Latin-1 character (checked here), so on Latin-1
    text ``str.lower`` is exactly this byte mapping.
    """
    latin1 = bytes(range(256)).decode("latin-1")
    lower = latin1.lower().encode("latin-1")  # raises if the premise ever breaks
    assert len(lower) == len(latin1)  # the fast path's premise
    classes = _character_classes()[:256]
    return lower, classes.tobytes(), bytes(np.flatnonzero(classes == _SPACE).tolist())


def _code_points(text: str) -> np.ndarray:
    """Code points of ``text`` in the narrowest unsigned dtype, one element per character."""
    try:
        return np.frombuffer(text.encode("latin-1"), dtype=np.uint8)
    except UnicodeEncodeError:
        pass
    try:
        units = np.frombuffer(text.encode("utf-16-le"), dtype="<u2")
        if units.size == len(text):  # no character outside the BMP, so units are code points
            return units
    except UnicodeEncodeError:  # a lone surrogate
        pass
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


def _tokenize_chunk(docs: list[str], lowercase: bool):
    """Tokens of ``docs`` as (token characters back to back, token lengths, tokens per document).

    `DEFAULT_TOKEN_PATTERN` matched left to right partitions the non-space characters: a run of
    word characters, extended across an apostrophe or hyphen that has word characters on both
    sides, is one token; any other non-space character is a token of its own. So a character
    continues the token before it exactly when it and its predecessor both belong to such a run.
    """
    text = "\n".join(docs)  # a space character: no token crosses documents
    try:
        raw = text.encode("latin-1")
    except UnicodeEncodeError:
        raw = None
        if lowercase:  # lowercasing may change lengths (e.g. "İ" becomes two characters)
            docs = [d.lower() for d in docs]
            text = "\n".join(docs)
        cps = _code_points(text)
        cls = _character_classes()[cps]
    else:
        lower, classes, spaces = _latin1_tables()
        cls = np.frombuffer(raw.translate(classes), dtype=np.uint8)  # lowercasing keeps classes
        raw = raw.translate(lower) if lowercase else raw
    word = cls == _WORD
    in_word = word.copy()
    in_word[1:-1] |= (cls[1:-1] == _JOINER) & word[:-2] & word[2:]
    token_char = cls != _SPACE
    apart = ~(in_word[1:] & in_word[:-1])  # character i + 1 does not continue character i's token
    first, last = token_char.copy(), token_char
    first[1:] &= apart
    last[:-1] &= apart
    starts = np.flatnonzero(first)
    token_lengths = np.flatnonzero(last) - starts + 1
    sizes = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs)) + 1
    per_doc = np.diff(np.searchsorted(starts, np.cumsum(sizes) - sizes), append=starts.size)
    if raw is None:
        return cps[cls != _SPACE], token_lengths, per_doc
    return np.frombuffer(raw.translate(None, spaces), dtype=np.uint8), token_lengths, per_doc


def _binary_array(chars: np.ndarray, lengths: np.ndarray, dtype: np.dtype):
    """Arrow binary array whose values are consecutive runs of ``lengths`` characters."""
    import pyarrow as pa

    offsets = np.concatenate([[0], np.cumsum(lengths)]) * dtype.itemsize
    return pa.Array.from_buffers(pa.large_binary(), lengths.size,
                                 [None, pa.py_buffer(offsets),
                                  pa.py_buffer(chars.astype(dtype, copy=False))])


def _tokenize_default(docs: list[str], lowercase: bool,
                      vocabulary: Mapping[str, int] | None) -> TokenizedDocuments:
    """`DEFAULT_TOKEN_PATTERN` over a batch with numpy kernels (see `Tokenizer`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    sizes = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs)) + 1
    chunk = (np.cumsum(sizes) - 1) // _CHUNK_CHARS  # whole documents, about _CHUNK_CHARS each
    bounds = [0, *(np.flatnonzero(np.diff(chunk)) + 1).tolist(), len(docs)]
    parts = [_tokenize_chunk(docs[a:b], lowercase) for a, b in itertools.pairwise(bounds) if b > a]
    lengths = np.concatenate([p[2] for p in parts] or [[]]).astype(np.int64, copy=False)
    if not lengths.any():
        tokens = TokenizedDocuments([], np.zeros(0, np.int64), lengths)
        return tokens if vocabulary is None else tokens.locate(vocabulary)
    large = bool(vocabulary) and sizes.sum() >= _SEED_CHARS_PER_WORD * len(vocabulary)
    seed = list(vocabulary) if large else []
    seed_chars = _code_points("".join(seed))
    seed_lengths = np.fromiter(map(len, seed), dtype=np.int64, count=len(seed))
    dtype = max([seed_chars.dtype] + [p[0].dtype for p in parts], key=lambda t: t.itemsize)
    arrays = [_binary_array(seed_chars, seed_lengths, dtype)]
    arrays += [_binary_array(chars, token_lengths, dtype) for chars, token_lengths, _ in parts]
    encoded = pc.dictionary_encode(pa.chunked_array(arrays, pa.large_binary()))
    # empty chunks are dropped; the seed words, distinct, come first with ids 0 .. len(seed) - 1
    ids = np.concatenate([c.indices.to_numpy() for c in encoded.chunks], dtype=np.int64)
    ids = ids[len(seed):]
    unique = encoded.chunks[0].dictionary  # one dictionary shared by every chunk
    width = dtype.itemsize
    offsets = np.frombuffer(unique.buffers()[1], dtype=np.int64)[len(seed):len(unique) + 1] // width
    codec = {1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[width]
    text = memoryview(unique.buffers()[2])[offsets[0] * width:offsets[-1] * width].tobytes()
    text = text.decode(codec, "surrogatepass")
    bounds = (offsets - offsets[0]).tolist()
    words = [*seed, *(text[a:b] for a, b in itertools.pairwise(bounds))]
    if not large:
        tokens = TokenizedDocuments(words, ids, lengths)
        return tokens if vocabulary is None else tokens.locate(vocabulary)
    positions = np.arange(len(words), dtype=np.int64)
    positions[len(seed):] = -1
    return TokenizedDocuments(words, ids, lengths, positions)
