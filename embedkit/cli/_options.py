"""The options `compare` and `tune` share, declared once, and what they mean: reading ``--file``
as a text column or a table, the notes that reading left, the Dask cluster of
``--scheduler`` / ``--dask-workers``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import typer

__all__ = ["COLUMNS", "DASK_WORKERS", "ENCODING", "FILE", "HEADS", "LABEL_COLUMN", "PROGRESS",
           "REPRESENTATIONS", "SCHEDULER", "SEED", "TASK", "TEXT_COLUMNS", "cluster", "dataset",
           "notes", "read_file"]


def dataset(default: str | None, more: str = "") -> typer.Option:
    """``--dataset`` / ``-d`` with its default (compare: BBC News; tune: none, --file instead)."""
    return typer.Option(default, "--dataset", "-d",
                        help=f"Built-in dataset (see `embedkit datasets`){more}.")


FILE = typer.Option(None, "--file", "-f",
                    help="Your own CSV/TSV/parquet/JSONL file or folder-per-class (instead of "
                         "--dataset).")
#: a file's columns (`read_file`)
TEXT_COLUMNS = typer.Option(
    None, help="Text column of --file (default: text); repeat for a table with several.")
LABEL_COLUMN = typer.Option("label", help="Label column of --file.")
COLUMNS = typer.Option(
    None, "--column", help="Another column of --file to learn from (its kind read from its values, "
    "or named: --column zip:categorical, --column age:numeric); repeatable; '*' is every other.")
REPRESENTATIONS = typer.Option(
    None, "--representation", "-r",
    help="Representation name (`embedkit compare --list`); repeat for several. Default: compare's "
         "standard set; the representations tune searches.")
HEADS = typer.Option(
    None, "--head", "-H",
    help="Head name (`embedkit compare --list`); repeat for several. Default: compare's standard "
         "set; the heads tune searches.")
TASK = typer.Option(
    None, help="What the label column holds: classification, regression (a number) or "
               "multilabel (a set of labels per row, written a|b). Default: read from the values.")
ENCODING = typer.Option("utf-8", help="Text encoding of the input file, e.g. cp1252, latin-1 or "
                                       "utf-16.")
SEED = typer.Option(0, help="Seed for the split and every random choice (models, probes, sampled "
                            "settings).")
PROGRESS = typer.Option(True, help="Progress on stderr (compare: a bar, on a terminal; tune: a "
                                   "line per model with the time left).")
SCHEDULER = typer.Option(
    None, help="Dask scheduler address: run the work on that cluster (compare: the folds; tune: "
               "the sparse and static tiers' models).")
DASK_WORKERS = typer.Option(
    None, min=1, help="Start a local Dask cluster with N worker processes for that work.")


def notes(data) -> None:
    """What reading the data changed, one ``note:`` line each (`embedkit.load_texts`)."""
    for note in getattr(data, "attrs", {}).get("notes", []):
        typer.secho(f"note: {note}", fg=typer.colors.YELLOW, err=True)


def cluster(scheduler, dask_workers):
    """The Dask cluster the command's work runs on (`embedkit.distributed.dask_backend`), or
    nothing where neither --scheduler nor --dask-workers is given."""
    if not (scheduler or dask_workers):
        return contextlib.nullcontext()
    from ..distributed import dask_backend

    return dask_backend(scheduler, dask_workers)


def read_file(file: Path, text_columns, label_column, columns, encoding: str = "utf-8",
              rows: int | None = None, seed: int = 0):
    """``(data, roles)``: a table (`embedkit.data.reading.load_table`) where several text columns or any
    ``--column`` are named, with the roles named (``text_columns``, ``categorical``, ``numeric``;
    `embedkit.data.columns.named_roles`), else one text column (`embedkit.data.reading.load_texts`; None).
    Several label columns (a list, `tune`'s repeated ``--label-column``) are read as the table's
    last columns under their own names; one, as ``label``. ``rows``: a random sample of that many
    rows, drawn with ``seed``, read as the file streams (`embedkit.data.reading.read_table`)."""
    from ..data.columns import named_roles
    from ..data.reading import load_table, load_texts

    texts = list(text_columns or ["text"])
    labels = [label_column] if isinstance(label_column, str) else list(dict.fromkeys(label_column))
    if not (columns or len(texts) > 1 or len(labels) > 1):
        return load_texts(file, texts[0], labels[0], encoding, rows=rows, seed=seed), None
    names, roles = named_roles(columns or ())
    df = load_table(file, texts, labels[0], [*names, *labels[1:]], encoding, rows=rows, seed=seed)
    if len(labels) > 1:  # the others were read as columns: they go after the features
        df = df.rename(columns={"label": labels[0]})
        df = df[[c for c in df.columns if c not in labels] + labels]
    return df, ({"text_columns": texts, **roles} if columns or len(texts) > 1 else None)


