"""embedkit.data.documents: input validation and the word tokenizer's interface (the vectorized
tokenizer's equivalence with the regex is in `test_tokenizer.py`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from embedkit.data.documents import Tokenizer, validate_documents


def test_validate_documents_forms():
    assert validate_documents(np.array(["a", "b"])) == ["a", "b"]
    assert validate_documents(pd.Series(["x", "y"], index=[5, 2])) == ["x", "y"]
    assert validate_documents(pd.DataFrame({"t": ["x"]})) == ["x"]
    assert validate_documents(iter(["g"])) == ["g"]
    assert type(validate_documents(np.array(["a"]))[0]) is str


def test_validate_documents_names_many_rows():
    docs = ["ok"] + [None] * 7
    with pytest.raises(ValueError, match=r"7 row\(s\).*1 \(None\).*and 2 more.*fillna"):
        validate_documents(docs)
    with pytest.raises(ValueError, match="one text column"):
        validate_documents(pd.DataFrame({"a": ["x"], "b": ["y"]}))
    with pytest.raises(ValueError, match="1-D array"):
        validate_documents(np.array([["a", "b"], ["c", "d"]]))


def test_tokenizer():
    tok = Tokenizer()
    assert tok("Don't panic, it's E-mail!") == ["don't", "panic", ",", "it's", "e-mail", "!"]
    assert Tokenizer(lowercase=False)("New York") == ["New", "York"]
    assert tok.tokenize_all(["a b", ""]) == [["a", "b"], []]
    import pickle

    assert pickle.loads(pickle.dumps(tok))("A B") == ["a", "b"]
