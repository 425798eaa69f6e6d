"""Input validation and the one word tokenizer shared by every word-level representation."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["validate_documents", "Tokenizer", "DEFAULT_TOKEN_PATTERN"]

#: Words (letters/digits, with inner apostrophes or hyphens such as "don't", "e-mail")
#: and single punctuation marks, the way GloVe and word2vec vocabularies split text.
DEFAULT_TOKEN_PATTERN = r"\w+(?:['\-]\w+)*|[^\w\s]"

_MAX_ROWS_SHOWN = 5


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
        shown = ", ".join(f"{i} ({_describe(docs[i])})" for i in bad[:_MAX_ROWS_SHOWN])
        more = f" and {len(bad) - _MAX_ROWS_SHOWN} more" if len(bad) > _MAX_ROWS_SHOWN else ""
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

    ``str.isascii`` is O(1) in CPython, so only non-ASCII documents are encoded to check them
    (about 1 ms per MB of such text)."""
    bad = [i for i, d in enumerate(docs) if not d.isascii() and not _encodes(d)]
    if not bad:
        return
    shown = ", ".join(map(str, bad[:_MAX_ROWS_SHOWN]))
    more = f" and {len(bad) - _MAX_ROWS_SHOWN} more" if len(bad) > _MAX_ROWS_SHOWN else ""
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


class Tokenizer:
    """Regex word tokenizer; picklable, so it can travel inside fitted estimators.

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
        """Tokenize every document."""
        findall = self._regex.findall
        if self.lowercase:
            return [findall(d.lower()) for d in docs]
        return [findall(d) for d in docs]

    def __getstate__(self):
        return {"lowercase": self.lowercase, "pattern": self.pattern}

    def __setstate__(self, state):
        self.__init__(**state)

    def __repr__(self) -> str:
        return f"Tokenizer(lowercase={self.lowercase!r})"
