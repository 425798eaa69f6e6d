"""The commands that read one file and write another: ``embedkit predict`` (a saved model's
predictions), ``embedkit embed`` (a representation's vectors); and ``embedkit datasets``."""

from __future__ import annotations

from pathlib import Path

import typer

from .._stopping import sigterm_stops
from . import _options as opt
from ._errors import fail, in_flags, interrupted

__all__ = ["datasets", "embed", "predict"]


def predict(
    ctx: typer.Context,
    model_dir: Path = typer.Argument(..., help="Model folder written by embedkit.save or `embedkit tune`."),
    input: Path = typer.Argument(..., help="CSV/TSV, parquet or JSON Lines file with a text column."),
    output: Path = typer.Option(Path("predictions.csv"), "--output", "-o",
                                help="Where to write: .csv, .tsv, .jsonl or .parquet. Not the input, "
                                     "not a folder; an existing file is replaced only when predict "
                                     "wrote it (or with --overwrite)."),
    text_column: str | None = typer.Option(
        None, help="Column holding the documents (default: text). A model fitted on a table reads "
                   "the columns it was fitted on by name, and refuses this flag."),
    id_column: str | None = typer.Option(None, help="Column copied to the output (e.g. an id)."),
    encoding: str = opt.ENCODING,
    overwrite: bool = typer.Option(False, "--overwrite",
                                   help="Replace an existing OUTPUT file that predict did not write."),
    chunk_size: int = typer.Option(10_000, min=1, help="Rows read, predicted and written at a time."),
    progress: bool = typer.Option(True, help="Show a progress bar."),
) -> None:
    """Predict every row of INPUT with a saved model: the label and one probability per class.

    OUTPUT is checked before the model is loaded; INPUT is streamed in chunks
    (`embedkit.predict_file`), so memory stays bounded however long it is; OUTPUT appears only
    when every row is written (Ctrl-C or SIGTERM leaves it as it was). Example:
    `embedkit predict my-model/ new.csv -o predictions.csv --id-column id`.
    """
    from ..predicting import predict_columns, predict_file
    from ..storage.files import WriteError
    from ..storage.outputs import check_predictions_file
    from ..storage.persist import is_model_folder, load

    before = _identity(output)
    try:
        with sigterm_stops():
            try:
                check_predictions_file(output, input, overwrite=overwrite)
            except ValueError as err:
                raise typer.BadParameter(in_flags(str(err), ctx), param_hint="--output") from None
            try:
                model = load(model_dir)
            except (ValueError, FileNotFoundError) as err:
                hint = (f" It holds the model folder {model_dir / 'model'}: pass that."
                        if is_model_folder(model_dir / "model") else "")
                raise typer.BadParameter(in_flags(str(err), ctx) + hint,
                                         param_hint="MODEL_DIR") from None
            try:  # the columns the model reads: a table model's own, or --text-column
                predict_columns(model, text_column, id_column)
            except ValueError as err:
                raise typer.BadParameter(in_flags(str(err), ctx), param_hint="--id-column" if str(
                    err).startswith("id_column=") else "--text-column") from None
            try:
                info = predict_file(model, input, output, text_column=text_column,
                                    id_column=id_column, chunksize=chunk_size, progress=progress,
                                    encoding=encoding, overwrite=overwrite)
            except WriteError as err:  # a full disk, a file-size limit: not the input's fault
                raise fail(err, ctx) from None
            except (ValueError, OSError) as err:  # OSError: an unreadable input
                raise typer.BadParameter(in_flags(str(err), ctx), param_hint="INPUT") from None
    except KeyboardInterrupt:  # the last rename finishes before a Ctrl-C takes effect
        if _identity(output) not in (before, None):
            raise interrupted(f"after every row was written: {output} holds this run's "
                              "predictions") from None
        raise interrupted(f"{output} was not written (left as it was)") from None
    typer.echo(f"wrote {info['rows']} predictions to {output}")


def _identity(path: Path) -> tuple | None:
    """Which file ``path`` is (its inode and last change), or None where there is none."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


def embed(
    ctx: typer.Context,
    input: Path = typer.Argument(..., help="CSV/TSV, parquet or JSON Lines file with a text column."),
    output: Path = typer.Argument(..., help="Where to write: .parquet (id + vector columns) or .npy "
                                            "(vectors; ids go to <name>.ids.txt)."),
    representation: str = typer.Option("minilm", "--representation", "-r",
                                       help="Representation name, as in `embedkit compare --list` "
                                            "(class names and short names are aliases)."),
    param: list[str] | None = typer.Option(None, "--param", "-p",
                                           help="Representation parameter name=value (repeatable), "
                                                "e.g. -p pooling=cls."),
    text_column: str = typer.Option("text", help="Column holding the documents."),
    id_column: str | None = typer.Option(None, help="Column of ids to write (default: row number)."),
    cache: str | None = typer.Option(None, help="Embedding cache: 'memory', 'disk' or a folder."),
    chunk_size: int = typer.Option(10_000, help="Rows read, encoded and written at a time (bounds memory)."),
    fit_rows: int = typer.Option(10_000, min=0, help="Fit the representation on the first N documents "
                                                    "(pretrained models ignore them; 0 fits on none)."),
    progress: bool = typer.Option(True, help="Show a progress bar."),
) -> None:
    """Encode every document of INPUT with a representation and write the vectors to OUTPUT.

    The representation is fitted on the first --fit-rows documents, then the whole file is
    streamed in chunks (`embedkit.streaming.embed_file`), so memory stays bounded however long
    it is. Parquet output has the id column then one column per dimension. A row without text
    (a JSON or parquet null) is an error that names it; an empty CSV cell is an empty document.
    """
    from ..base import takes_cache
    from ..configure import make_representation, parse_params
    from ..data.reading import read_chunks
    from ..streaming import EMBED_COLUMNS, embed_file, parquet_to_npy

    suffix = output.suffix.lower()
    if suffix not in (".parquet", ".npy"):
        raise typer.BadParameter(f"{output} must end in .parquet or .npy", param_hint="OUTPUT")
    try:
        rep = make_representation(representation, param or ())
        if takes_cache(rep) and all(p.name != "cache" for p in parse_params(param)):
            rep.set_params(cache=cache)  # the registry's in-memory cache is no use to one pass
    except ValueError as err:
        raise typer.BadParameter(in_flags(str(err), ctx), param_hint="--representation/--param") from None
    if getattr(rep, "output", "pooled") != "pooled":
        raise typer.BadParameter(f"embed writes one vector per document; {representation!r} gives "
                                 f"output={rep.output!r}: pick a pooled representation or pass "
                                 "-p output=pooled.", param_hint="--param")
    columns = [text_column] + ([id_column] if id_column else [])
    try:  # the first chunk only: checks the columns and gives the documents to fit on
        first = next(read_chunks(input, columns, max(fit_rows, 1), hint=EMBED_COLUMNS), None)
    except (ValueError, FileNotFoundError) as err:
        raise typer.BadParameter(in_flags(str(err), ctx), param_hint="INPUT") from None
    rep.fit([] if first is None or fit_rows == 0 else first[text_column].tolist())
    del first
    output.parent.mkdir(parents=True, exist_ok=True)
    target = output if suffix == ".parquet" else output.with_suffix(".tmp.parquet")
    try:
        info = embed_file(rep, input, target, text_column=text_column, keep=id_column,
                          chunk_size=chunk_size, densify=True, progress=progress)
        if suffix == ".npy":
            parquet_to_npy(target, output, id_column, info["rows"], info["dim"])
    except ValueError as err:
        raise typer.BadParameter(in_flags(str(err), ctx)) from None
    except OSError as err:  # a full disk, a file-size limit (WriteError names the fix)
        raise fail(err, ctx) from None
    typer.echo(f"wrote {info['rows']} x {info['dim']} vectors from {type(rep).__name__} to {output}")


def datasets():
    """List the built-in datasets."""
    from ..data.datasets import list_datasets

    for row in list_datasets().itertuples():
        typer.echo(f"{row.name:<10} {row.about}")


