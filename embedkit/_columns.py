"""The values of one table column as each role reads them (text, categorical, numeric), and the
role a column's values suggest: what `embedkit.tables` builds on."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["CATEGORY_FLOOR", "CATEGORY_SHARE", "CATEGORY_WORDS", "MISSING", "categories",
           "inferred_role", "is_number_dtype", "joined", "listing", "missing", "numbers", "texts"]

#: A string column is categorical when it has at most ``max(CATEGORY_FLOOR, CATEGORY_SHARE *
#: rows)`` distinct values (rows: its non-missing values), each seen twice on average, and its
#: median value is at most ``CATEGORY_WORDS`` words long; other string columns are text.
CATEGORY_FLOOR = 20
CATEGORY_SHARE = 0.05
CATEGORY_WORDS = 3
#: the category a missing (or blank) categorical value becomes
MISSING = "missing"
#: rows named in an error
SHOWN = 5


def is_number_dtype(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s.dtype) and not isinstance(s.dtype, pd.CategoricalDtype)


def missing(s: pd.Series) -> np.ndarray:
    """Missing values: NaN, None, NA, and (in a column of strings) blank strings."""
    miss = s.isna().to_numpy(dtype=bool)
    if not is_number_dtype(s):
        miss = miss | s.astype("string").str.strip().eq("").fillna(False).to_numpy(dtype=bool)
    return miss


def listing(values, more: int = 0) -> str:
    shown = ", ".join(f"{i} ({v!r})" for i, v in values)
    return shown + (f" and {more} more" if more else "")


def numbers(s: pd.Series, column) -> np.ndarray:
    """The column as float64: missing, blank and infinite values NaN; text is an error naming
    the rows that hold it."""
    if is_number_dtype(s):
        values = s.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        miss = missing(s)
        parsed = pd.to_numeric(s.astype("string").str.strip().where(~miss), errors="coerce")
        values = parsed.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = np.flatnonzero(~miss & np.isnan(values))
        if len(bad):
            rows = [(int(i), s.iloc[i]) for i in bad[:SHOWN]]
            raise ValueError(
                f"column {column!r} is numeric but holds text at rows {listing(rows, len(bad) - len(rows))} "
                f"(positions from 0). Clean those values, or name {column!r} as a categorical or "
                "text column instead.")
    values = np.array(values, dtype=np.float64)  # a copy: the caller's table stays as it is
    values[~np.isfinite(values)] = np.nan  # an infinite number counts as missing
    return values


def texts(s: pd.Series) -> np.ndarray:
    """The column as str, a missing value the empty document (a whole float as an int: "34")."""
    keep = ~s.isna().to_numpy(dtype=bool)
    if pd.api.types.is_float_dtype(s.dtype):
        s = pd.Series([int(v) if v.is_integer() else v for v in s.to_numpy(dtype=np.float64)],
                      dtype=object)
    return s.astype(object).where(keep, "").astype(str).to_numpy(dtype=object)


def categories(s: pd.Series) -> np.ndarray:
    """The column as str categories, stripped; missing and blank values `MISSING`."""
    out = pd.Series(texts(s), dtype=object).str.strip()
    return out.where(~missing(s), MISSING).to_numpy(dtype=object)


def joined(texts: dict) -> np.ndarray:
    """One text per row, ``"title: ...\\nreview: ..."``; empty and blank fields left out; a single
    field as it is (its name would tell a model nothing)."""
    if len(texts) == 1:
        return np.asarray(next(iter(texts.values())), dtype=object)
    fields = [[f"{name}: {v}" if v.strip() else "" for v in values] for name, values in texts.items()]
    return np.array(["\n".join(f for f in row if f) for row in zip(*fields, strict=True)],
                    dtype=object)


def inferred_role(s: pd.Series, column) -> str:
    if isinstance(s.dtype, pd.CategoricalDtype):
        return "categorical"
    if is_number_dtype(s):  # bools too
        return "numeric"
    if not (pd.api.types.is_string_dtype(s.dtype) or s.dtype == object):
        raise ValueError(
            f"column {column!r} holds {s.dtype} values, which have no role of their own: name "
            "its role (text, categorical or numeric), convert it (e.g. a date to "
            f"df[{column!r}].dt.year) or drop it.")
    values = s[~missing(s)].astype(str).str.strip()
    if len(values) and pd.to_numeric(values, errors="coerce").notna().all():
        return "numeric"
    n, distinct = len(values), values.nunique()
    words = values.str.split().str.len().median() if n else 0
    if distinct <= max(CATEGORY_FLOOR, CATEGORY_SHARE * n) and distinct <= n / 2 \
            and words <= CATEGORY_WORDS:
        return "categorical"
    return "text"
