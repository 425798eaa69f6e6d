"""Predicting a file with a saved model, chunk by chunk, in bounded memory: `predict_file`, the
engine behind ``embedkit predict``, and the columns a model reads (`predict_columns`: a table
model's own, or one text column) and writes (`prediction_columns`: the label and its
probabilities, or the prediction; each target's under its name for a `embedkit.TargetSet`).
The file is read by `embedkit.data.reading.read_chunks` and written by
`embedkit.streaming.FrameWriter`, as ``embedkit embed`` reads and writes.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from .data.reading import read_chunks
from .streaming import FrameWriter

__all__ = ["predict_columns", "predict_file", "prediction_columns"]


def _targets(model) -> list | None:
    """``(target, model)`` for each target of a model of several (`embedkit.TargetSet`: its
    class names them, ``targets_``, and holds a fitted model each); None for another model."""
    return list(model.estimators_) if hasattr(type(model), "targets_") else None


def _table_columns(model) -> list | None:
    """The columns a model of a table reads by name: the ``feature_names_in_`` scikit-learn
    keeps of a DataFrame fitted on, asked of the model, else of its pipeline's first step that
    is not ``"passthrough"`` (an ensemble of table models after one; each target's model of a
    `embedkit.TargetSet`); None for a model of one text column."""
    several = _targets(model)
    if several is not None:
        found = [c for _, m in several for c in (_table_columns(m) or [])]
        return list(dict.fromkeys(found)) or None
    first = next((s for _, s in getattr(model, "steps", []) if not isinstance(s, str)), None)
    for step in (model, first):
        try:
            names = step.feature_names_in_
        except AttributeError:
            continue
        return [str(n) for n in names]
    return None


def predict_columns(model, text_column: str | None = None,
                    id_column: str | None = None) -> tuple[list[str], str]:
    """The columns `predict_file` reads with ``model`` (the id column last), and the fix said
    where the file lacks one. A model of a table reads the columns it was fitted on by name, so
    a ``text_column`` named for it is refused (it would be ignored); a model of one text column
    reads ``text_column`` (``"text"`` by default).

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.linear_model import LogisticRegression
    >>> from embedkit import TfidfEmbedder
    >>> model = make_pipeline(TfidfEmbedder(), LogisticRegression()).fit(["a", "b"], [0, 1])
    >>> predict_columns(model, id_column="id")[0]
    ['text', 'id']
    """
    table = _table_columns(model)
    if table is None:
        text_column = "text" if text_column is None else text_column
        if id_column == text_column:
            raise ValueError(f"id_column={id_column!r} is the text column; name another column.")
        named = ("text_column=, id_column=; on the command line --text-column, --id-column"
                 if id_column is not None else "text_column=; on the command line --text-column")
        return [text_column] + ([id_column] if id_column is not None else []), (
            f"Name the column of documents{' and the id column' if id_column else ''} ({named}).")
    shown = ", ".join(map(repr, table))
    if text_column is not None:
        raise ValueError(
            f"text_column={text_column!r} names a column of documents, but this model was fitted "
            f"on a table: it reads the columns it was fitted on by name ({shown}), and would "
            "ignore that one. Leave it out (text_column=None; on the command line drop "
            "--text-column); the file needs those columns.")
    fix = (f"This model was fitted on a table and reads the columns it was fitted on by name "
           f"({shown}): the file needs each of them under that name (an empty cell is a missing "
           "value, which the model takes)")
    if id_column is None:
        return table, fix + "."
    return list(dict.fromkeys([*table, id_column])), (
        fix + "; and the id column to copy (id_column=; on the command line --id-column).")


def _label_set_threshold(model) -> float | None:
    """The threshold above which a model of label sets predicts a label (its head's, fitted on
    label sets); None for a model of one class per row."""
    head = model.steps[-1][1] if hasattr(model, "steps") else model
    return float(head.threshold_) if getattr(head, "multilabel_", False) else None


def _label_sets(decisions: np.ndarray, classes) -> list[str]:
    """Each row's predicted labels, joined by ``|`` as a label-set cell is read."""
    from .data.reading import LABEL_SEPARATOR

    names = np.asarray(classes).astype(str)
    return [LABEL_SEPARATOR.join(names[row]) for row in decisions]


def predict_file(model_dir, input, output, text_column: str | None = None,
                 id_column: str | None = None, chunksize: int = 10_000,
                 progress: bool = False, *, encoding: str = "utf-8",
                 overwrite: bool = False) -> dict:
    """Predict every row of a CSV/TSV/JSONL/parquet file with a saved model, in bounded memory.

    The input is read ``chunksize`` rows at a time (`embedkit.data.reading.read_chunks`, the same reader
    as ``embedkit embed``); each chunk's predictions are appended to ``output``, so memory
    depends on ``chunksize`` and the model, not on the file. Each output row holds the id (when
    ``id_column`` is given), the predicted ``label`` and, for a classifier with
    ``predict_proba``, one ``proba_<class>`` column per class (for a `embedkit.TargetSet`, each
    target's under its name: ``<target>``, ``<target>_proba_<class>``). The output is written under a
    temporary name and renamed at the end: an interrupted run leaves no partial file. Before
    anything is read, ``output`` is checked (`embedkit.storage.outputs.check_predictions_file`): it may
    not be the input or a folder, and an existing file is replaced only when it is one predict
    wrote (its columns say so) or when ``overwrite``.

    Parameters
    ----------
    model_dir : str, Path or fitted estimator
        A model folder written by `embedkit.save` (or an already loaded model).
    input : str or Path
        ``.csv``, ``.tsv``, ``.jsonl`` (optionally ``.gz``) or ``.parquet``.
    output : str or Path
        ``.csv``, ``.tsv``, ``.jsonl`` or ``.parquet``; its name decides the format.
    text_column : str, optional
        The column of documents (``"text"`` when not given). A model of a table
        (`embedkit.TableEmbedder` first) reads the columns it was fitted on by name instead: a
        ``text_column`` given for it is refused, and so is a file that lacks one of its columns,
        before any row is predicted (`predict_columns`).
    id_column : str, optional
        A column copied to the output, e.g. the row's id.
    chunksize : int, default=10_000
        Rows per chunk.
    progress : bool, default=False
        Show a progress bar (rows).
    encoding : str, default="utf-8"
        Text encoding of a CSV/TSV/JSON Lines ``input``.
    overwrite : bool, default=False
        Replace an existing ``output`` that predict did not write.

    Returns
    -------
    dict
        ``{"path", "rows", "chunks", "classes"}``.

    Notes
    -----
    The label is the class of highest probability (the rows' ``predict_proba`` is computed
    once, so the representation encodes each text once); for a model of label sets, the labels
    whose probability exceeds its threshold, joined by ``|`` (``drama|comedy``; empty for
    none). A model without ``predict_proba`` (a regressor) writes ``prediction`` only.

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.linear_model import LogisticRegression
    >>> from embedkit import TfidfEmbedder, save
    >>> folder = tempfile.mkdtemp()
    >>> docs, y = ["good film", "great plot", "bad film", "awful plot"], ["pos", "pos", "neg", "neg"]
    >>> model = save(make_pipeline(TfidfEmbedder(), LogisticRegression()).fit(docs, y),
    ...              f"{folder}/model")
    >>> pd.DataFrame({"id": [7, 8], "text": ["a good plot", "bad"]}).to_csv(f"{folder}/new.csv",
    ...                                                                    index=False)
    >>> predict_file(model, f"{folder}/new.csv", f"{folder}/out.csv", id_column="id")["rows"]
    2
    >>> pd.read_csv(f"{folder}/out.csv").columns.tolist()
    ['id', 'label', 'proba_neg', 'proba_pos']
    """
    from tqdm.auto import tqdm

    from .storage.files import file_format
    from .storage.outputs import check_predictions_file
    from .storage.persist import load

    check_predictions_file(output, input, overwrite=overwrite)
    model = load(model_dir) if isinstance(model_dir, (str, os.PathLike)) else model_dir
    targets = _targets(model) or [("", model)]  # several targets: each one's columns, named
    writes = prediction_columns(model, id_column)
    kind = file_format(output)
    table = _table_columns(model)  # a model of a table reads its columns by name
    columns, fix = predict_columns(model, text_column, id_column)
    text_column = columns[0]
    rows = chunks = 0
    output = Path(output)
    with FrameWriter(output, kind) as writer, tqdm(unit="docs", disable=not progress,
                                                   desc=f"predicting {Path(input).name}") as bar:
        for chunk in read_chunks(input, columns, chunksize, encoding=encoding, hint=fix):
            where = f"{input}, rows {rows}-{rows + len(chunk) - 1}"
            texts = chunk[table] if table is not None else chunk[text_column]
            try:
                frame = pd.concat([_predicted(m, texts, chunk.index, name) for name, m in targets],
                                  axis=1)
            except ValueError as err:
                raise ValueError(f"{where}: {err}") from None
            if id_column is not None:
                frame.insert(0, id_column, chunk[id_column])
            writer.write(frame)
            rows += len(chunk)
            chunks += 1
            bar.update(len(chunk))
        if not rows:
            writer.write(pd.DataFrame({c: [] for c in writes}))
    classes = getattr(model, "classes_", None)
    return {"path": str(output), "rows": rows, "chunks": chunks,
            "classes": None if classes is None else np.asarray(classes).tolist()}


def prediction_columns(model, id_column: str | None = None) -> list[str]:
    """The columns `predict_file` writes with ``model``: the id column (where named), then
    `_names` of the model, or of each target's model of a `embedkit.TargetSet`.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from embedkit import TfidfEmbedder
    >>> model = make_pipeline(TfidfEmbedder(), LogisticRegression()).fit(["a", "b"], ["x", "y"])
    >>> prediction_columns(model, "id")
    ['id', 'label', 'proba_x', 'proba_y']
    """
    targets = _targets(model) or [("", model)]
    return [*([id_column] if id_column else []), *(c for name, m in targets for c in _names(m, name))]


def _names(model, target: str = "") -> list[str]:
    """The columns `predict_file` writes for ``model``: ``label`` and ``proba_<class>`` for a
    model with probabilities, else ``prediction``; for one of several targets, ``<target>``
    and ``<target>_proba_<class>``."""
    classes = getattr(model, "classes_", None)
    if hasattr(model, "predict_proba") and classes is not None:
        return [target or "label", *(f"{target}_proba_{c}" if target else f"proba_{c}" for c in classes)]
    return [target or "prediction"]


def _predicted(model, texts, index, target: str = "") -> pd.DataFrame:
    """``model``'s columns (`_names`) for a chunk of rows: the label of highest probability
    (label sets: those over the threshold, joined by ``|``) and the probabilities, or the
    prediction."""
    names = _names(model, target)
    if len(names) == 1:
        return pd.DataFrame({names[0]: model.predict(texts)}, index=index)
    classes, threshold = model.classes_, _label_set_threshold(model)
    p = np.asarray(model.predict_proba(texts), dtype=np.float64)
    frame = pd.DataFrame(p, columns=names[1:], index=index)
    frame.insert(0, names[0], np.asarray(classes)[p.argmax(axis=1)]
                 if threshold is None else _label_sets(p > threshold, classes))
    return frame
