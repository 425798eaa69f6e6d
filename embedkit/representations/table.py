"""`TableEmbedder`: a table (text, categorical and numeric columns) as one feature matrix.

Each text column goes through its own copy of a representation, categorical columns are one-hot
encoded, numeric ones imputed and standardised, all in one scikit-learn ``ColumnTransformer``;
any head or scikit-learn estimator can follow it in a ``Pipeline``, and `embedkit.save` stores the
whole pipeline. The columns' roles and values are `embedkit.data.columns`'. `on_table` and
`text_only` give any representation a table to read, for `compare` and `tune` alike.
"""

from __future__ import annotations

from numbers import Integral
from typing import ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from .._params import HasMethods, Interval, RealNotInt, StrOptions
from .._suggest import did_you_mean
from ..base import CheckedKeywords, check_finite, output_form, store_params
from ..data.columns import (
    MISSING,
    ColumnRoles,
    distinct_columns,
    free_name,
    infer_columns,
    names_given,
    prepared_frame,
)

__all__ = ["TableEmbedder", "on_table", "text_only"]


class TableEmbedder(CheckedKeywords, TransformerMixin, BaseEstimator):
    """A table (text, categorical and numeric columns) as one feature matrix.

    At ``fit`` the columns get their roles (`infer_columns`: the ones you name keep theirs) and a
    scikit-learn ``ColumnTransformer`` is built and fitted: each text column through its own
    clone of ``text`` (a 1-D array of str; a missing text is the empty document), the
    categorical columns through ``OneHotEncoder(handle_unknown="ignore")`` (a missing value is
    the category ``"missing"``), the numeric ones through ``SimpleImputer(strategy="median",
    add_indicator=True)`` (a 0/1 column per column that had missing values) and
    ``StandardScaler``. The parts are side by side in one float32 matrix, scipy-sparse when a
    text part is (TF-IDF), dense otherwise: the "pooled" form, so any embedkit head or
    scikit-learn estimator can follow in a ``Pipeline``.

    Parameters
    ----------
    text : representation, "passthrough" or None, default=None
        The representation of every text column, cloned per column; it must give pooled vectors
        (one per document). None means `~embedkit.TfidfEmbedder` with its defaults.
        ``"passthrough"`` (with ``join_text=True``) hands on the joined text instead of a
        matrix: one str per row, every column (categorical and numeric ones too) written as a
        ``name: value`` line, for the representation or text head that follows (a
        sequence head's representation, `~embedkit.TransformerClassifier`).
    text_columns, categorical, numeric : list of str, str or None, default=None
        The columns of each role; the others are inferred from the data at ``fit``.
    join_text : bool, default=False
        Join the text columns into one text per row, ``"title: ...\\nreview: ..."`` (empty
        fields left out), and encode that once: what a Transformer encoder reads best.
    min_frequency : int >= 1, float in (0, 1) or None, default=2
        Categories seen fewer times at fit (or in a smaller share of the rows) share one
        column (scikit-learn's "infrequent" category); None keeps every category.
    remainder : {"infer", "drop"}, default="infer"
        The columns not named in ``text_columns``, ``categorical`` or ``numeric``: read, with
        the role their values suggest, or left out (as scikit-learn's ``ColumnTransformer``
        drops its remainder).

    Attributes
    ----------
    roles_ : ColumnRoles
        The role of every column read.
    column_transformer_ : sklearn.compose.ColumnTransformer or None
        The fitted parts (None with ``text="passthrough"``).
    sparse_output_ : bool
        Whether ``transform`` gives a scipy-sparse matrix.
    dim_ : int or None
        The number of output columns (None with ``text="passthrough"``).
    feature_names_in_ : ndarray of str
        The columns of the table seen at fit.
    n_features_in_ : int

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> df = pd.DataFrame({"title": ["Lovely dress", "Poor fit", "Great colour", "Too small"],
    ...                    "review": ["fits well and looks great", "the seams came apart",
    ...                               "bright and soft fabric", "returned it the same day"],
    ...                    "department": ["Dresses", "Tops", "Dresses", "Tops"],
    ...                    "age": [34, 51, None, 28]})
    >>> table = TableEmbedder().fit(df)
    >>> table.roles_.describe()
    'columns: text title, review; categorical department; numeric age (inferred; ...)'
    >>> X = table.transform(df)
    >>> X.shape, X.dtype
    ((4, 28), dtype('float32'))
    >>> table.get_feature_names_out()[-4:].tolist()
    ['categorical__department_Dresses', 'categorical__department_Tops', 'numeric__age',
     'numeric__missingindicator_age']
    >>> make_pipeline(TableEmbedder(), LogisticRegression()).fit(df, [1, 0, 1, 0]).predict(df).tolist()
    [1, 0, 1, 0]
    >>> print(TableEmbedder(text="passthrough", join_text=True).fit_transform(df)[2])
    title: Great colour
    review: bright and soft fabric
    department: Dresses
    """

    _parameter_constraints: ClassVar[dict] = {
        "text": [None, StrOptions({"passthrough"}), HasMethods(["fit", "transform"])],
        "text_columns": [None, str, list, tuple],
        "categorical": [None, str, list, tuple],
        "numeric": [None, str, list, tuple],
        "join_text": ["boolean"],
        "min_frequency": [None, Interval(Integral, 1, None, closed="left"),
                          Interval(RealNotInt, 0, 1, closed="neither")],
        "remainder": [StrOptions({"infer", "drop"})],
    }

    def __init__(self, text=None, text_columns=None, categorical=None, numeric=None,
                 join_text: bool = False, min_frequency=2, remainder: str = "infer"):
        store_params(self, locals())

    # -- fitting ------------------------------------------------------------------------------
    def fit(self, X: pd.DataFrame, y=None):
        """Give every column its role and fit the parts on the table ``X``."""
        self._fit(X, y)
        return self

    def fit_transform(self, X: pd.DataFrame, y=None, **fit_params):
        """Fit on the table ``X`` and return its features (each text encoded once)."""
        if fit_params:
            raise TypeError(f"TableEmbedder.fit_transform() got unexpected keyword arguments "
                            f"{sorted(fit_params)}; it takes only X and y.")
        return self._fit(X, y)

    def _text_step(self):
        """The representation of the text columns, its form checked before any fitting."""
        from ..representations.tfidf import TfidfEmbedder

        step = TfidfEmbedder() if self.text is None else self.text
        form = output_form(step)
        if form == "text" and not self.join_text:
            raise ValueError("TableEmbedder(text='passthrough') hands on one joined text per row, "
                             "so it needs join_text=True.")
        if form not in ("pooled", "text"):
            shown = f"{type(step).__name__}(output={form!r})"
            raise ValueError(
                f"TableEmbedder(text={shown}): the text step must give one vector per document, "
                f"since the table becomes one feature matrix: pass {type(step).__name__}"
                "(output='pooled'). For a head that reads sequences or raw text, join the table "
                "into one text instead: TableEmbedder(text='passthrough', join_text=True), then "
                f"{shown} and its head, or a passthrough / Transformer head (TransformerClassifier).")
        return step

    def _fit(self, X, y):
        from .._params import validate_steps

        validate_steps(self)  # this step and its text step, before any work
        step = self._text_step()
        frame = _frame(X)
        named = {"text": self.text_columns, "categorical": self.categorical, "numeric": self.numeric}
        if self.remainder == "drop":
            read = {c for v in named.values() for c in names_given(v) or ()}
            if read <= set(frame.columns):  # else the error below names the absent one
                frame = frame[[c for c in frame.columns if c in read]]
        roles = infer_columns(frame, **named)
        passthrough = isinstance(step, str)
        prepared = prepared_frame(frame, roles, self.join_text, passthrough)
        self.roles_ = roles
        self.feature_names_in_ = np.asarray([str(c) for c in frame.columns], dtype=object)
        self.n_features_in_ = frame.shape[1]
        if passthrough:
            self.column_transformer_, self.sparse_output_, self.dim_ = None, False, None
            return prepared.iloc[:, 0].to_numpy(dtype=object)
        ct = self._column_transformer(step, prepared, roles)
        out = ct.fit_transform(prepared, y)
        self.column_transformer_ = ct
        self.sparse_output_ = any(_gives_sparse(part) for name, part, _ in ct.transformers_
                                  if name not in ("categorical", "numeric", "remainder"))
        self.dim_ = int(out.shape[1])
        return self._finish(out)

    def _column_transformer(self, step, prepared: pd.DataFrame, roles: ColumnRoles):
        from sklearn.compose import ColumnTransformer
        from sklearn.impute import SimpleImputer
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import OneHotEncoder, StandardScaler

        texts = list(prepared.columns[:1] if self.join_text else prepared.columns[:len(roles.text)])
        taken = {"categorical", "numeric", "remainder"}  # a text part is named by its column
        parts = [(free_name(column.replace("__", "_") or "text", taken), clone(step), column)
                 for column in texts]  # a scalar column: the step gets a 1-D Series
        if roles.categorical:
            parts.append(("categorical", OneHotEncoder(
                handle_unknown="ignore", min_frequency=self.min_frequency, dtype=np.float32),
                [str(c) for c in roles.categorical]))
        if roles.numeric:
            parts.append(("numeric", Pipeline([
                ("impute", SimpleImputer(strategy="median", add_indicator=True,
                                         keep_empty_features=True)),
                ("scale", StandardScaler())]), [str(c) for c in roles.numeric]))
        # sparse whenever a part is; `_finish` makes it dense again when no text part is
        return ColumnTransformer(parts, remainder="drop", sparse_threshold=1.0)

    # -- transforming -------------------------------------------------------------------------
    def transform(self, X: pd.DataFrame):
        """The features of the table ``X`` (it needs every column read at fit; others are
        ignored): float32, scipy-sparse when a text part is; with ``text="passthrough"`` one
        joined str per row."""
        check_is_fitted(self)
        frame = _frame(X)
        absent = [c for c in self.roles_.columns if c not in frame.columns]
        if absent:
            hints = "".join(did_you_mean(c, list(frame.columns)) for c in absent)
            raise ValueError(
                f"TableEmbedder was fitted on the columns {list(self.roles_.columns)}; this table "
                f"lacks {absent}.{hints} Add them (a missing value is fine: an empty text, the "
                f"category {MISSING!r}, the median number) or refit on the columns you have.")
        passthrough = self.column_transformer_ is None
        prepared = prepared_frame(frame, self.roles_, self.join_text, passthrough)
        if passthrough:
            return prepared.iloc[:, 0].to_numpy(dtype=object)
        if not len(prepared):  # scikit-learn's encoders refuse zero rows
            empty = sp.csr_matrix((0, self.dim_), dtype=np.float32)
            return empty if self.sparse_output_ else empty.toarray()
        return self._finish(self.column_transformer_.transform(prepared))

    def _finish(self, out):
        if sp.issparse(out):
            out = sp.csr_matrix(out, dtype=np.float32) if self.sparse_output_ else out.toarray()
        if not sp.issparse(out):
            out = np.ascontiguousarray(out, dtype=np.float32)
        check_finite(out, "TableEmbedder")
        return out

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """The output columns' names, ``<part>__<feature>``: ``title__cat``,
        ``categorical__department_Dresses``, ``numeric__age``, ``numeric__missingindicator_age``
        (``<part>__<i>`` where a text step names no features)."""
        check_is_fitted(self)
        ct = self.column_transformer_
        if ct is None:
            raise ValueError("TableEmbedder(text='passthrough') gives text, which has no feature "
                             "columns; the representation that follows names its features.")
        try:
            return ct.get_feature_names_out()
        except AttributeError:  # a text step without feature names
            return np.asarray([f"{name}__{i}" for name, part in ct.output_indices_.items()
                               for i in range(part.stop - part.start)], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        tags.input_tags.allow_nan = True
        tags.requires_fit = True
        return tags


def _frame(X) -> pd.DataFrame:
    if not isinstance(X, pd.DataFrame):
        raise ValueError(
            f"TableEmbedder takes a pandas DataFrame, one row per document and one column per "
            f"field; got a {type(X).__name__}. For a single text column, give the column to a "
            "representation directly (e.g. TfidfEmbedder().fit(df['text'])).")
    distinct_columns(X)
    return X


def _gives_sparse(step) -> bool:
    """Whether a fitted text step encodes to a scipy-sparse matrix (asked of one empty text)."""
    return sp.issparse(step.transform(pd.Series([""], dtype=object)))


def on_table(step, roles):
    """``step`` (a representation, or "passthrough" before a head that reads text) reading the
    table: pooled vectors through `embedkit.TableEmbedder` (a sentence encoder, one that
    ``joins_fields``, reads the text columns joined, `encoded_text`: one pass a row, not one a
    column); a form that a matrix cannot hold (sequences, token ids, raw text) from the table
    joined into one text per row."""
    from sklearn.pipeline import Pipeline

    named = {"text_columns": list(roles.text), "categorical": list(roles.categorical),
             "numeric": list(roles.numeric), "remainder": "drop"}
    if output_form(step) == "pooled":
        joins = getattr(step, "joins_fields", False) and len(roles.text) > 1
        return TableEmbedder(step, join_text=joins, **named)
    joined = TableEmbedder("passthrough", join_text=True, **named)
    return joined if isinstance(step, str) else Pipeline([("table", joined), ("text", step)])


def text_only(step, column):
    """``step`` reading one column of the table (a baseline's text)."""
    from sklearn.compose import ColumnTransformer

    return step if isinstance(step, str) else ColumnTransformer([("text", step, column)])


