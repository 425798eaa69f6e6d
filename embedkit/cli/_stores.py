"""The ``embedkit`` commands that look after what embedkit keeps on disk: ``embedkit cache``
(the embedding cache) and ``embedkit resources`` (the named models, word vectors and data files).

`embedkit.cli` adds both to the ``embedkit`` command; nothing here imports it.
"""

from __future__ import annotations

import typer

__all__ = ["cache_app", "resources_app"]


def _store(directory: str | None):
    from ..cache import DiskCache, default_dir

    return DiskCache(default_dir() if directory in (None, "disk") else directory)


cache_app = typer.Typer(help="Inspect or empty the disk embedding cache.", no_args_is_help=True)


@cache_app.command("info")
def cache_info(
    directory: str | None = typer.Option(
        None, "--dir", help="Cache folder (default: $EMBEDKIT_HOME/embeddings)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show what a disk embedding cache holds."""
    import json

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


@cache_app.command("clear")
def cache_clear(
    directory: str | None = typer.Option(
        None, "--dir", help="Cache folder (default: $EMBEDKIT_HOME/embeddings)."),
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


resources_app = typer.Typer(invoke_without_command=True)


@resources_app.callback()
def resources(ctx: typer.Context) -> None:
    """List every named resource (models, word vectors, data files) with its size, and whether it
    is installed or fetched; one that is not says the command that gets it.

    A resource is fetched on first use anyway; `embedkit resources fetch NAME` does it now, e.g.
    `embedkit resources fetch all-mpnet-base-v2` (404 MB, once).
    """
    if ctx.invoked_subcommand is not None:
        return
    from ..storage.resources import list_resources

    for row in list_resources():
        size = "?" if row["size"] is None else f"{row['size'] / 1e6:.1f} MB"
        how = f": {row['how']}" if row["how"] else ""
        typer.echo(f"{row['name']:<20} {row['kind']:<12} {size:>9}  {row['state']}{how}")
        typer.echo(f"{'':<22}{row['about']}")


@resources_app.command("fetch")
def resources_fetch(
    name: str = typer.Argument(..., help="A resource name, as `embedkit resources` lists it."),
) -> None:
    """Fetch a named resource now, with a progress bar, and print where it is.

    Once: later uses (and calls) read the cache. The bar is drawn on a terminal; in a log,
    plain lines say what is fetched and when it is done.
    """
    from ..storage.resources import ResourceNotFound, fetch

    try:
        path = fetch(name, progress=None)
    except (ResourceNotFound, ValueError) as err:
        typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None
    typer.echo(f"{name}: {path}")
