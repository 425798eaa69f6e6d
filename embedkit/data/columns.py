"""A table's columns: the role of each (text, categorical or numeric) and its values as that
role reads them.

A real file is rarely one text column: a review export has a title, a body, the department and
the reviewer's age. `infer_columns` gives every column a role from its values (or as named), and
`ColumnRoles` records them; `embedkit.TableEmbedder` (`embedkit.representations.table`) turns the
table into one feature matrix by those roles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._suggest import did_you_mean

__all__ = ["CATEGORY_FLOOR", "CATEGORY_SHARE", "CATEGORY_WORDS", "MISSING", "ROLES", "SPLIT",
           "ColumnRoles", "categories", "distinct_columns", "encoded_text", "free_name",
           "infer_columns", "inferred_role", "is_number_dtype", "joined", "listing", "missing",
           "named_roles", "names_given", "numbers", "prepared_frame", "take", "texts"]

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
    """Whether ``s`` holds numbers (booleans too) and is not a categorical column."""
    return pd.api.types.is_numeric_dtype(s.dtype) and not isinstance(s.dtype, pd.CategoricalDtype)


def missing(s: pd.Series) -> np.ndarray:
    """Missing values: NaN, None, NA, and (in a column of strings) blank strings."""
    miss = s.isna().to_numpy(dtype=bool)
    if not is_number_dtype(s):
        miss = miss | s.astype("string").str.strip().eq("").fillna(False).to_numpy(dtype=bool)
    return miss


def listing(values, more: int = 0) -> str:
    """``(row, value)`` pairs as an error names them: ``17 ('NaN'), 40 ('high')``, then how many
    ``more`` were not shown."""
    shown = ", ".join(f"{i} ({v!r})" for i, v in values)
    return shown + (f" and {more} more" if more else "")


def numbers(s: pd.Series, column, fitted: bool = False) -> np.ndarray:
    """The column as float64: missing, blank and infinite values NaN; text is an error naming
    the rows that hold it, and the fix: a role to name where the table is being learned, what
    the model reads there where it was ``fitted`` on the column as numbers."""
    if is_number_dtype(s):
        values = s.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        miss = missing(s)
        parsed = pd.to_numeric(s.astype("string").str.strip().where(~miss), errors="coerce")
        values = parsed.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = np.flatnonzero(~miss & np.isnan(values))
        if len(bad):
            rows = listing([(int(i), s.iloc[i]) for i in bad[:SHOWN]], max(len(bad) - SHOWN, 0))
            if fitted:
                raise ValueError(
                    f"column {column!r} holds text at rows {rows} (positions from 0), where the "
                    f"model reads numbers: it was fitted with {column!r} as a numeric column. "
                    "Write a number in those cells, or leave them empty (a missing number, which "
                    "the model fills in with the median of the rows it was fitted on).")
            raise ValueError(
                f"column {column!r} is numeric but holds text at rows {rows} (positions from 0). "
                f"Clean those values, or name {column!r} as a categorical or text column instead "
                f"(categorical=[{column!r}]; on the command line --column {column}:categorical).")
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
    """The role a column not named gets: categorical for a categorical dtype or a few short
    distinct values, numeric for numbers (or strings that all parse as numbers), text otherwise;
    a dtype with no role (dates, for one) is an error saying how to name or convert it."""
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

#: the roles, in the order a table's columns are listed and joined
ROLES = ("text", "categorical", "numeric")
#: a column of this name is a dataset's train/test split, never a feature
SPLIT = "split"


@dataclass(frozen=True)
class ColumnRoles:
    """The role of every column a table model reads: text, categorical or numeric.

    Parameters
    ----------
    text, categorical, numeric : tuple of str, default=()
        The columns of each role.
    inferred : tuple of str, default=()
        The columns whose role was inferred from the data rather than named.

    Examples
    --------
    >>> roles = ColumnRoles(text=("title", "review"), categorical=("department",),
    ...                     numeric=("age",), inferred=("department", "age"))
    >>> print(roles.describe())
    columns: text title, review; categorical department; numeric age
    (inferred; name them with --text-column or --column NAME:categorical|numeric)
    >>> roles.role("age"), roles.columns
    ('numeric', ('title', 'review', 'department', 'age'))
    """

    text: tuple = ()
    categorical: tuple = ()
    numeric: tuple = ()
    inferred: tuple = ()

    @property
    def columns(self) -> tuple:
        """Every column with a role: text, then categorical, then numeric."""
        return (*self.text, *self.categorical, *self.numeric)

    def role(self, column) -> str:
        """``"text"``, ``"categorical"`` or ``"numeric"``; a `KeyError` for a column without one."""
        for role in ROLES:
            if column in getattr(self, role):
                return role
        raise KeyError(column)

    def describe(self) -> str:
        """One line for people: each role and its columns, and whether they were inferred."""
        parts = [f"{role} {', '.join(map(str, names))}" for role in ROLES
                 if (names := getattr(self, role))]
        line = "columns: " + "; ".join(parts)
        if self.inferred:
            line += " (inferred; name them with --text-column or --column NAME:categorical|numeric)"
        return line


def distinct_columns(df: pd.DataFrame) -> list:
    """The table's column names, refused where one names two columns (which one a role means
    could not be told)."""
    present = list(df.columns)
    if len(set(present)) < len(present):
        twice = sorted({str(c) for c in present if present.count(c) > 1})
        raise ValueError(f"the table names the columns {twice} more than once; give each column "
                         "its own name.")
    return present


def names_given(value) -> list | None:
    """Column names as given (one name or several) as a list without repeats; None stays None."""
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(dict.fromkeys(value))


def _absent(column, what: str, present: list) -> str:
    shown = ", ".join(map(str, present[:30])) + (f" ({len(present)} in all)" if len(present) > 30 else "")
    return (f"column {column!r} ({what}) is not in the table.{did_you_mean(column, present)} "
            f"Its columns: {shown}.")


def infer_columns(df: pd.DataFrame, target=None, text=None, categorical=None,
                  numeric=None) -> ColumnRoles:
    """The role of every column of ``df`` but ``target`` (and a ``split`` column).

    Columns named in ``text``, ``categorical`` or ``numeric`` keep that role; the others are
    inferred from their values: a numeric dtype (or strings that all parse as numbers) is
    numeric; strings with few distinct values (at most ``max(20, 5% of the non-missing rows)``,
    each seen twice on average) and short (a median of at most 3 words) are categorical; other
    strings are text. Every check happens here, before any fitting.

    Parameters
    ----------
    df : pandas.DataFrame
    target : str, optional
        The label column: no role.
    text, categorical, numeric : list of str or str, optional
        Columns whose role you name.

    Returns
    -------
    ColumnRoles

    Raises
    ------
    ValueError
        A named column that is not in ``df`` (with the columns it has and a did-you-mean), a
        column given two roles, a numeric column that holds text (naming up to 5 rows and their
        values), a column of another kind (dates) left to inference, or no text column at all.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"review": ["runs small but lovely", "the seams split", "soft", "ok"],
    ...                    "size": ["S", "M", "S", "M"], "stars": [5, 2, 4, 3]})
    >>> infer_columns(df, target="stars")
    ColumnRoles(text=('review',), categorical=('size',), numeric=(), inferred=('review', 'size'))
    >>> infer_columns(df, text=["reviw"])
    Traceback (most recent call last):
        ...
    ValueError: column 'reviw' (named as text) is not in the table. Did you mean 'review'? ...
    """
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"infer_columns takes a pandas DataFrame; got a {type(df).__name__}.")
    present = distinct_columns(df)
    given = {"text": names_given(text), "categorical": names_given(categorical),
             "numeric": names_given(numeric)}
    if target is not None and target not in present:
        raise ValueError(_absent(target, "the target", present))
    roles: dict = {}
    for role, names in given.items():
        for name in names or ():
            if name not in present:
                raise ValueError(_absent(name, f"named as {role}", present))
            if name == target:
                raise ValueError(f"column {name!r} is the target and is named as {role}; a "
                                 "column is either the label or a feature.")
            if roles.get(name, role) != role:
                raise ValueError(f"column {name!r} is given two roles, {roles[name]} and {role}; "
                                 "name each column in one role only.")
            roles[name] = role
    for name in given["numeric"] or ():
        numbers(df[name], name)  # text in a column named numeric: said here, before any fit
    inferred = []
    for column in present:
        if column not in roles and column != target and column != SPLIT:
            roles[column] = inferred_role(df[column], column)
            inferred.append(column)
    order = [*[n for names in given.values() for n in names or ()], *inferred]
    by_role = {role: tuple(c for c in order if roles[c] == role) for role in ROLES}
    if not by_role["text"]:
        listed = "; ".join(f"{r} {', '.join(map(str, by_role[r]))}" for r in ROLES[1:] if by_role[r])
        raise ValueError(f"the table has no text column ({listed or 'no columns'}); name the column "
                         "that holds the text with text=['...'] (on the command line "
                         "--text-column).")
    return ColumnRoles(**by_role, inferred=tuple(inferred))


def prepared_frame(frame: pd.DataFrame, roles: ColumnRoles, join: bool, everything: bool) -> pd.DataFrame:
    """The columns the transformers read, in canonical form, under string names: text as str
    (missing ""), categories as str (missing `MISSING`), numbers as float64 (missing NaN); with
    ``join`` the text columns as one text (with ``everything``, every column joined)."""
    names = [str(c) for c in roles.columns]
    if len(set(names)) < len(names):
        raise ValueError(f"the columns {list(roles.columns)} are not distinct as text; rename them.")
    read = roles.columns if everything else roles.text
    by_column = {str(c): texts(frame[c]) for c in (read if join else roles.text)}
    data = {free_name("text", {str(c) for c in roles.categorical + roles.numeric}):
            joined(by_column)} if join else by_column
    if not everything:
        data.update({str(c): categories(frame[c]) for c in roles.categorical})
        # roles read from another table (a fitted model's): text there is the new table's
        data.update({str(c): numbers(frame[c], c, fitted=True) for c in roles.numeric})
    return pd.DataFrame(data)


def free_name(name: str, taken: set) -> str:
    """``name``, with "_" added until it is not in ``taken`` (where it is then added)."""
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def named_roles(columns) -> tuple[list, dict]:
    """The command line's ``--column`` values as ``(column names, {"categorical": [...],
    "numeric": [...]})``: ``name:categorical`` or ``name:numeric`` names a column's role, a
    plain name (or ``*``) leaves it to its values (`infer_columns`).

    Examples
    --------
    >>> named_roles(["zip:categorical", "age", "*"])
    (['zip', 'age', '*'], {'categorical': ['zip'], 'numeric': []})
    """
    names, roles = [], {"categorical": [], "numeric": []}
    for value in columns:
        name, _, kind = str(value).rpartition(":")
        if name and kind in roles:
            roles[kind].append(name)
        else:
            name = str(value)
        names.append(name)
    return names, roles


def encoded_text(frame: pd.DataFrame, roles: ColumnRoles) -> np.ndarray:
    """The text a sentence encoder reads of each row of a table (`on_table`): its one text
    column, or its text columns joined (``"title: ...\\nreview: ..."``)."""
    return prepared_frame(frame, roles, len(roles.text) > 1, False).iloc[:, 0].to_numpy(dtype=object)


def take(X, rows):
    """Rows ``rows`` (positions) of a table or an array of documents."""
    return X.iloc[rows] if isinstance(X, pd.DataFrame) else X[rows]
