"""``embedkit compare``: every representation x head pipeline scored on one dataset."""

from __future__ import annotations

from pathlib import Path

import typer

from . import _options as opt
from ._errors import fail

__all__ = ["compare"]


def _listing() -> None:
    from .. import experiments, registry

    known = registry.aliases()

    def also(kind, name):
        names = [a for a, target in known[kind].items() if target == name]
        return f" (also: {', '.join(names)})" if names else ""

    typer.echo("representations (-r NAME):")
    for name, entry in registry.REPRESENTATIONS.items():
        typer.echo(f"  {name:<14} [{registry.representation_form(entry)}]  {entry.about}"
                   f"{also('representation', name)}")
    typer.echo("heads (-H NAME):")
    for name, entry in registry.HEADS.items():
        typer.echo(f"  {name:<14} [{', '.join(registry.head_forms(entry))}]  {entry.about}"
                   f"{also('head', name)}")
    typer.echo("baselines (in every report; --no-baselines leaves them out):")
    base = experiments.BASELINES
    for rep, head in base.pairs:
        typer.echo(f"  {rep} + {head}: {base.representations[rep].about}; "
                   f"{base.heads[head].about}")
    typer.echo("experiments (-e NAME, or the path of your own .py file):")
    for name, about in experiments.experiments().items():
        typer.echo(f"  {name:<22} {about}")



def compare(
    ctx: typer.Context,
    dataset: str = opt.dataset("bbc-news"),
    file: Path | None = opt.FILE,
    text_column: list[str] | None = opt.TEXT_COLUMNS,
    label_column: str = opt.LABEL_COLUMN,
    column: list[str] | None = opt.COLUMNS,
    representations: list[str] | None = opt.REPRESENTATIONS,
    heads: list[str] | None = opt.HEADS,
    param: list[str] | None = typer.Option(
        None, "--param", "-p",
        help="Step parameter [step.]name=value, repeatable: -p head.epochs=3, "
             "-p features.pooling=sif, -p glove.pooling=sif (one step). Checked before any work."),
    metric: list[str] | None = typer.Option(
        None, "--metric", "-m",
        help="scikit-learn scorer name, repeatable; the first ranks the table and is charted. "
             "Default: accuracy and f1_macro. On two classes `f1` scores the minority class "
             "(see --pos-label)."),
    pos_label: str | None = typer.Option(
        None, help="Positive class of f1/precision/recall/... on a two-class dataset (default: "
                   "the minority class)."),
    baselines: bool = typer.Option(
        True, "--baselines/--no-baselines",
        help="Add the majority-class, plain TF-IDF + LR and plain MiniLM + LR rows (on numbers: "
             "the mean, plain TF-IDF + Ridge and plain MiniLM + Ridge)."),
    task: str | None = opt.TASK,
    experiment: str | None = typer.Option(
        None, "--experiment", "-e",
        help="A built-in experiment (see --list), e.g. course_comparison, or the path of an "
             "experiment file (.py with PAIRS); instead of -r/-H."),
    folds: int = typer.Option(5, min=2, help="Cross-validation folds (datasets without an official split)."),
    holdout: float | None = typer.Option(
        None,
        help="Score on one stratified held-out fraction (e.g. 0.2) instead of CV: for slow experiments."),
    output: Path = typer.Option(Path("embedkit-results"), "--output", "-o", help="Folder for the report."),
    seed: int = opt.SEED,
    quick: bool = typer.Option(
        False, "--quick",
        help="A smoke run: a 300-document sample, 3 folds, TF-IDF with logreg and mlp (and the baselines)."),
    list_: bool = typer.Option(
        False, "--list", help="List the representation, head, baseline and experiment names, then exit."),
    scheduler: str | None = opt.SCHEDULER,
    dask_workers: int | None = opt.DASK_WORKERS,
    progress: bool = opt.PROGRESS,
    n_jobs: int | None = typer.Option(
        None, "--n-jobs", "-j", min=1,
        help="Jobs (representation x fold) at once, each with cores / n-jobs threads. "
             "Default: every core; 1 runs them one after another."),
):
    """Score representation x head pipelines and write results.csv, results.md and results.png."""
    from .. import compare as runner
    from ..report import format_table

    if list_:
        _listing()
        raise typer.Exit()
    try:
        table = None
        if file is not None:
            data, table = opt.read_file(file, text_column, label_column, column)
            name = file.stem
            opt.notes(data)
        else:
            data, name = dataset, dataset
        n_jobs = -1 if scheduler or dask_workers else n_jobs
        with opt.cluster(scheduler, dask_workers):
            results = runner.run_compare(data, representations, heads, folds=folds, output=output,
                                         seed=seed, quick=quick, dataset_name=name, n_jobs=n_jobs,
                                         experiment=experiment, holdout=holdout, params=param or (),
                                         metrics=metric or None,
                                         pos_label=pos_label, baselines=baselines,
                                         progress=progress, task=task,
                                         **(table or {}))
    except (ValueError, FileNotFoundError) as err:
        raise fail(err, ctx) from None
    meta = results.attrs
    typer.echo(f"\n{meta['dataset']}: {meta['n_docs']} documents, {meta['protocol']}, "
               f"{meta['task']}\n")
    if meta.get("columns"):
        typer.echo(meta["columns"] + "; the baselines read the first text column")
    for note in meta.get("notes") or ():
        typer.echo(f"note: {note}")
    typer.echo(format_table(results).to_markdown(index=False))
    if meta.get("pos_label") is not None:
        from ..data.targets import POSITIVE_CLASS_METRICS

        scored = ", ".join(m for m in meta["metrics"] if m in POSITIVE_CLASS_METRICS)
        typer.echo(f"\nPositive class of {scored}: {meta['pos_label']!r} (--pos-label to change).")
    typer.echo(f"\nWall time {meta['wall_seconds']:.0f} s. Wrote {output / 'results.csv'}, "
               f"{output / 'results.md'}, {output / 'results.png'}, {output / 'results_time.png'} "
               f"and {output / 'report.html'}")


