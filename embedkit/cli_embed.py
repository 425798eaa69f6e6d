"""``embedkit embed`` (feature extraction to files) and ``embedkit cache info|clear``.

`register(app)` adds them to a typer app; `embedkit.cli` calls it.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Optional

import typer

__all__ = ["embed_command", "cache_info", "cache_clear", "register", "make_representation"]


def _parse_value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def make_representation(name: str, params: list[str] | None = None):
    """Build a representation from its class name (or short name) and ``key=value`` strings.

    Examples
    --------
    >>> make_representation("tfidf", ["ngram_range=(1, 2)"])
    TfidfEmbedder(ngram_range=(1, 2))
    """
    from . import representations

    names = {n.lower(): n for n in representations.__all__}
    names.update({n.lower().removesuffix("embedder"): n for n in representations.__all__})
    cls_name = names.get(name.lower())
    if cls_name is None:
        raise ValueError(f"unknown representation {name!r}; choose one of "
                         f"{sorted(representations.__all__)} (or their short names, e.g. 'transformer').")
    cls = getattr(representations, cls_name)
    kwargs = {}
    for item in params or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--param {item!r}: write key=value, e.g. --param pooling=cls.")
        kwargs[key.strip()] = _parse_value(value.strip())
    try:
        return cls(**kwargs)
    except TypeError as err:
        raise ValueError(f"{cls_name}: {err}; see `help(embedkit.{cls_name})` for its parameters.") from None


def embed_command(
    input: Path = typer.Argument(..., help="CSV/TSV, parquet or JSON Lines file with a text column."),
    output: Path = typer.Argument(..., help="Where to write: .parquet (id + vector columns) or .npy "
                                            "(vectors; ids go to <name>.ids.txt)."),
    representation: str = typer.Option("transformer", "--representation", "-r",
                                       help="Representation class or short name."),
    param: Optional[list[str]] = typer.Option(None, "--param", "-p",
                                              help="Representation parameter key=value (repeatable)."),
    text_column: str = typer.Option("text", help="Column holding the documents."),
    id_column: Optional[str] = typer.Option(None, help="Column of ids to write (default: row number)."),
    cache: Optional[str] = typer.Option(None, help="Embedding cache: 'memory', 'disk' or a folder."),
    chunk_size: int = typer.Option(10_000, help="Rows read, encoded and written at a time (bounds memory)."),
    fit_rows: int = typer.Option(10_000, help="Fit the representation on the first N documents "
                                             "(pretrained models ignore them; 0 fits on none)."),
    progress: bool = typer.Option(True, help="Show a progress bar."),
) -> None:
    """Encode every document of INPUT with a representation and write the vectors to OUTPUT.

    The file is streamed in chunks (`embedkit.streaming.embed_file`), so memory stays bounded
    however long it is. Parquet output has the id column then one column per dimension.
    """
    import numpy as np
    import pandas as pd

    from .streaming import embed_file

    suffix = output.suffix.lower()
    if suffix not in (".parquet", ".npy"):
        raise typer.BadParameter(f"output {output} must end in .parquet or .npy", param_hint="OUTPUT")
    try:
        rep = make_representation(representation, param)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--representation/--param") from None
    if getattr(rep, "output", "pooled") != "pooled":
        raise typer.BadParameter("embed writes one vector per document; use output=pooled.",
                                 param_hint="--param")
    if cache is not None:
        rep.set_params(cache=cache)
    from .io import load_texts

    try:
        head = load_texts(input, text_column=text_column, label_column=id_column)
    except (ValueError, FileNotFoundError) as err:
        raise typer.BadParameter(str(err), param_hint="INPUT") from None
    rep.fit(head["text"].tolist()[:fit_rows])
    del head
    output.parent.mkdir(parents=True, exist_ok=True)
    target = output if suffix == ".parquet" else output.with_suffix(".tmp.parquet")
    try:
        info = embed_file(rep, input, target, text_column=text_column, keep=id_column,
                          chunk_size=chunk_size, densify=True, progress=progress)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    if suffix == ".npy":
        frame = pd.read_parquet(target)
        target.unlink()
        ids = frame.pop(id_column).to_numpy() if id_column else np.arange(len(frame))
        np.save(output, frame.to_numpy(dtype=np.float32))
        output.with_suffix(".ids.txt").write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    typer.echo(f"wrote {info['rows']} x {info['dim']} vectors from {type(rep).__name__} to {output}")


def _store(directory: Optional[str]):
    from .cache import DiskCache, default_dir

    return DiskCache(default_dir() if directory in (None, "disk") else directory)


def cache_info(
    directory: Optional[str] = typer.Option(None, "--dir", help="Cache folder (default: $EMBEDKIT_HOME/embeddings)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show what a disk embedding cache holds."""
    store = _store(directory)
    if not store.path.exists():
        typer.echo(f"no cache at {store.path}")
        return
    info = store.info()
    if as_json:
        typer.echo(json.dumps(info, indent=2))
        return
    typer.echo(f"{info['path']}: {info['entries']} entries, {info['bytes'] / 1e6:.1f} MB of vectors "
               f"({info['file_bytes'] / 1e6:.1f} MB on disk, bound {info['max_bytes'] / 1e6:.0f} MB)")
    for rep in info["representations"]:
        typer.echo(f"  {rep['fingerprint'][:12]}  {rep['entries']:>8} entries  "
                   f"{rep['bytes'] / 1e6:8.1f} MB  {rep['label']}")


def cache_clear(
    directory: Optional[str] = typer.Option(None, "--dir", help="Cache folder (default: $EMBEDKIT_HOME/embeddings)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Delete every entry of a disk embedding cache."""
    store = _store(directory)
    if not store.path.exists():
        typer.echo(f"no cache at {store.path}")
        return
    if not yes:
        typer.confirm(f"delete all cached embeddings in {store.path}?", abort=True)
    n = store.info()["entries"]
    store.clear()
    typer.echo(f"deleted {n} entries from {store.path}")


def register(app: typer.Typer) -> None:
    """Add ``embed`` and the ``cache`` group (``info``, ``clear``) to ``app``."""
    app.command("embed")(embed_command)
    group = typer.Typer(help="Inspect or empty the disk embedding cache.", no_args_is_help=True)
    group.command("info")(cache_info)
    group.command("clear")(cache_clear)
    app.add_typer(group, name="cache")
