"""The ``embedkit`` command.

Examples
--------
    embedkit compare                              # every default pipeline on BBC News
    embedkit compare --quick                      # a one-minute smoke run
    embedkit compare -d trec -r tfidf -r lsa -h mlp
    embedkit compare --file my.csv --text-column review --label-column stars
    embedkit datasets
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["--help"]},
    help="embedkit: compare text representations and neural heads as scikit-learn pipelines.",
)


@app.command()
def compare(
    dataset: str = typer.Option("bbc-news", "--dataset", "-d",
                                help="Built-in dataset (see `embedkit datasets`)."),
    file: Optional[Path] = typer.Option(None, "--file", "-f",
                                        help="Your own CSV/TSV/parquet/JSONL file or folder-per-class; overrides --dataset."),
    text_column: str = typer.Option("text", help="Text column of --file."),
    label_column: str = typer.Option("label", help="Label column of --file."),
    representations: Optional[list[str]] = typer.Option(
        None, "--representation", "-r", help="Representation name; repeat for several. Default: the standard set."),
    heads: Optional[list[str]] = typer.Option(
        None, "--head", "-h", help="Head name; repeat for several. Default: the standard set."),
    experiment: Optional[str] = typer.Option(
        None, "--experiment", "-e",
        help="A named experiment (see --list), e.g. course_comparison; instead of -r/-h."),
    folds: int = typer.Option(5, min=2, help="Cross-validation folds (datasets without an official split)."),
    holdout: Optional[float] = typer.Option(
        None, help="Score on one stratified held-out fraction (e.g. 0.2) instead of CV: for slow experiments."),
    output: Path = typer.Option(Path("embedkit-results"), "--output", "-o", help="Folder for the report."),
    seed: int = typer.Option(0, help="Seed for splits and every model."),
    quick: bool = typer.Option(False, "--quick", help="300-document sample, 3 folds, small selection: about a minute."),
    list_: bool = typer.Option(False, "--list", help="List the representation and head names, then exit."),
    scheduler: Optional[str] = typer.Option(None, help="Dask scheduler address: run the folds on that cluster."),
    dask_workers: Optional[int] = typer.Option(None, help="Start a local Dask cluster with N worker processes."),
    n_jobs: Optional[int] = typer.Option(None, help="Folds in parallel on this machine (joblib)."),
):
    """Score representation x head pipelines and write results.csv, results.md and results.png."""
    from pipelines import compare as runner
    from pipelines import grids

    if list_:
        for title, registry in (("representations", grids.REPRESENTATIONS), ("heads", grids.HEADS)):
            typer.echo(f"{title}:")
            for name, entry in registry.items():
                typer.echo(f"  {name:<14} [{', '.join(entry.forms)}]  {entry.about}")
        from pipelines import experiments

        typer.echo("experiments (--experiment):")
        for name, about in experiments.available().items():
            typer.echo(f"  {name:<22} {about}")
        raise typer.Exit()
    try:
        if file is not None:
            from embedkit.datasets import load_texts

            data, name = load_texts(file, text_column, label_column), file.stem
        else:
            data, name = dataset, dataset
        if scheduler or dask_workers:
            from embedkit.distributed import dask_backend

            context, n_jobs = dask_backend(scheduler, dask_workers), -1
        else:
            import contextlib

            context = contextlib.nullcontext()
        with context:
            results = runner.run_compare(data, representations, heads, folds=folds, output=output,
                                         seed=seed, quick=quick, dataset_name=name, n_jobs=n_jobs,
                                         experiment=experiment, holdout=holdout)
    except (ValueError, FileNotFoundError) as err:
        typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None
    meta = results.attrs
    typer.echo(f"\n{meta['dataset']}: {meta['n_docs']} documents, {meta['protocol']}\n")
    typer.echo(runner.format_table(results).to_markdown(index=False))
    typer.echo(f"\nWall time {meta['wall_seconds']:.0f} s. Wrote {output / 'results.csv'}, "
               f"{output / 'results.md'}, {output / 'results.png'} and {output / 'results_time.png'}")


from .cli_embed import register as _register_embed  # noqa: E402  (embed, cache info|clear)

_register_embed(app)


def _word_vectors(vectors: str):
    from embedkit import GloveEmbedder

    return GloveEmbedder(vectors=vectors).fit([])


def _print_words(query) -> None:
    """Run a word-vector query and print its (word, score) pairs, or a clean error."""
    try:
        found = query()
    except (ValueError, FileNotFoundError) as err:
        typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None
    for other, score in found:
        typer.echo(f"{other:<20} {score:.3f}")


_VECTORS_HELP = "Word vectors: a named resource (glove-6b-50d) or a GloVe/word2vec/fastText file."


@app.command()
def neighbors(word: str = typer.Argument(..., help="The word to look up."),
              topn: int = typer.Option(10, min=1, help="How many neighbours."),
              vectors: str = typer.Option("glove-6b-50d", help=_VECTORS_HELP)):
    """Nearest words by cosine similarity."""
    _print_words(lambda: _word_vectors(vectors).most_similar(word, topn=topn))


@app.command()
def analogy(a: str = typer.Argument(..., help="a, as in a : b :: c : ?"),
            b: str = typer.Argument(...), c: str = typer.Argument(...),
            topn: int = typer.Option(5, min=1, help="How many answers."),
            vectors: str = typer.Option("glove-6b-50d", help=_VECTORS_HELP)):
    """Solve a : b :: c : ? by b - a + c (e.g. `embedkit analogy man king woman`)."""
    _print_words(lambda: _word_vectors(vectors).analogy(a, b, c, topn=topn))


@app.command()
def datasets():
    """List the built-in datasets."""
    from embedkit.datasets import list_datasets

    for row in list_datasets().itertuples():
        typer.echo(f"{row.name:<10} {row.about}")


if __name__ == "__main__":  # pragma: no cover
    app()
