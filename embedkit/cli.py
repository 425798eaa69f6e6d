"""The ``embedkit`` command.

Examples
--------
    embedkit compare                              # every default pipeline on BBC News
    embedkit compare --quick                      # a smoke run: 300 documents, 3 folds
    embedkit compare -d trec -r tfidf -r lsa -H mlp -p head.epochs=3
    embedkit compare -d sms-spam --metric f1 --metric accuracy   # spam F1 first
    embedkit compare --file my.csv --text-column review --label-column stars
    embedkit compare -e pipelines/experiments/tfidf_variants.py   # an experiment file
    embedkit tune --file my.csv --text-column review --label-column stars --budget 15m
    embedkit predict embedkit-tune/model new.csv -o predictions.csv
    embedkit embed corpus.csv vectors.parquet -r minilm --id-column id
    embedkit cache info
    embedkit datasets
    embedkit resources                            # named models and data: size, fetched or not

``-h`` / ``--help`` is help on every command.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import typer

from ._cli_errors import fail as _fail
from ._cli_errors import in_flags as _in_flags
from ._cli_errors import interrupted as _interrupted
from ._cli_stores import cache_app, resources_app
from ._cli_words import analogy, neighbors
from ._stopping import sigterm_stops

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="embedkit: compare text representations and neural heads as scikit-learn pipelines.",
)
app.add_typer(cache_app, name="cache")
app.add_typer(resources_app, name="resources")


def _listing() -> None:
    from . import experiments, registry

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


#: a file's columns, as `compare` and `tune` take them (`_read_file`)
_TEXT_COLUMNS = typer.Option(
    None, help="Text column of --file (default: text); repeat for a table with several.")
_COLUMNS = typer.Option(
    None, "--column", help="Another column of --file to learn from (its kind read from its values, "
    "or named: --column zip:categorical, --column age:numeric); repeatable; '*' is every other.")


@app.command()
def compare(
    ctx: typer.Context,
    dataset: str = typer.Option("bbc-news", "--dataset", "-d",
                                help="Built-in dataset (see `embedkit datasets`)."),
    file: Path | None = typer.Option(None, "--file", "-f",
                                     help="Your own CSV/TSV/parquet/JSONL file or folder-per-class; "
                                          "overrides --dataset."),
    text_column: list[str] | None = _TEXT_COLUMNS,
    label_column: str = typer.Option("label", help="Label column of --file."),
    column: list[str] | None = _COLUMNS,
    representations: list[str] | None = typer.Option(
        None, "--representation", "-r",
        help="Representation name; repeat for several. Default: the standard set."),
    heads: list[str] | None = typer.Option(
        None, "--head", "-H", help="Head name; repeat for several. Default: the standard set."),
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
    task: str | None = typer.Option(
        None, help="What the label column holds: classification, regression (a number) or "
                   "multilabel (a list, or labels joined by |). Default: read from the values."),
    experiment: str | None = typer.Option(
        None, "--experiment", "-e",
        help="A built-in experiment (see --list), e.g. course_comparison, or the path of an "
             "experiment file (.py with PAIRS); instead of -r/-H."),
    folds: int = typer.Option(5, min=2, help="Cross-validation folds (datasets without an official split)."),
    holdout: float | None = typer.Option(
        None,
        help="Score on one stratified held-out fraction (e.g. 0.2) instead of CV: for slow experiments."),
    output: Path = typer.Option(Path("embedkit-results"), "--output", "-o", help="Folder for the report."),
    seed: int = typer.Option(0, help="Seed for splits and every model."),
    quick: bool = typer.Option(
        False, "--quick",
        help="A smoke run: a 300-document sample, 3 folds, TF-IDF with logreg and mlp (and the baselines)."),
    list_: bool = typer.Option(
        False, "--list", help="List the representation, head, baseline and experiment names, then exit."),
    scheduler: str | None = typer.Option(None, help="Dask scheduler address: run the folds on that cluster."),
    dask_workers: int | None = typer.Option(None, help="Start a local Dask cluster with N worker processes."),
    progress: bool = typer.Option(True, help="Progress bar (on a terminal only)."),
    n_jobs: int | None = typer.Option(
        None, "--n-jobs", "-j", min=1,
        help="Jobs (representation x fold) at once, each with cores / n-jobs threads. "
             "Default: every core; 1 runs them one after another."),
):
    """Score representation x head pipelines and write results.csv, results.md and results.png."""
    from . import compare as runner
    from .report import format_table

    if list_:
        _listing()
        raise typer.Exit()
    try:
        table = None
        if file is not None:
            data, table = _read_file(file, text_column, label_column, column)
            name = file.stem
            _notes(data)
        else:
            data, name = dataset, dataset
        n_jobs = -1 if scheduler or dask_workers else n_jobs
        with _cluster(scheduler, dask_workers):
            results = runner.run_compare(data, representations, heads, folds=folds, output=output,
                                         seed=seed, quick=quick, dataset_name=name, n_jobs=n_jobs,
                                         experiment=experiment, holdout=holdout, params=param or (),
                                         metrics=metric or None,
                                         pos_label=pos_label, baselines=baselines,
                                         progress=progress, task=task,
                                         **(table or {}))
    except (ValueError, FileNotFoundError) as err:
        raise _fail(err, ctx) from None
    meta = results.attrs
    typer.echo(f"\n{meta['dataset']}: {meta['n_docs']} documents, {meta['protocol']}, "
               f"{meta['task']}\n")
    if meta.get("columns"):
        typer.echo(meta["columns"] + "; the baselines read the first text column")
    for note in meta.get("notes") or ():
        typer.echo(f"note: {note}")
    typer.echo(format_table(results).to_markdown(index=False))
    if meta.get("pos_label") is not None:
        from .tasks import POSITIVE_CLASS_METRICS

        scored = ", ".join(m for m in meta["metrics"] if m in POSITIVE_CLASS_METRICS)
        typer.echo(f"\nPositive class of {scored}: {meta['pos_label']!r} (--pos-label to change).")
    typer.echo(f"\nWall time {meta['wall_seconds']:.0f} s. Wrote {output / 'results.csv'}, "
               f"{output / 'results.md'}, {output / 'results.png'}, {output / 'results_time.png'} "
               f"and {output / 'report.html'}")


def _notes(data) -> None:
    """What reading the data changed, one ``note:`` line each (`embedkit.load_texts`)."""
    for note in getattr(data, "attrs", {}).get("notes", []):
        typer.secho(f"note: {note}", fg=typer.colors.YELLOW, err=True)


def _enough(budget: str, seconds: float, spent: float, need: float, data: str = "") -> None:
    """Refuse a budget that cannot score anything, saying the least that can (with the moment
    until `Tuner.fit` checks it again, `DECIDING`)."""
    from ._budget import DECIDING, BudgetError

    need += DECIDING
    if seconds < spent + need:
        raise BudgetError(f"--budget {budget} cannot score anything here: starting (and reading the "
                          f"data) took {spent:.0f} s, the plain TF-IDF baseline{data} and writing "
                          f"the output need about {need:.0f} s more; give at least --budget "
                          f"{math.ceil(spent + need)}s" + ("." if data else " (more for a large file)."))


def _started() -> float:
    """The `time.monotonic` at which the command started: the process's start where it is the
    ``embedkit`` command itself (the interpreter and the imports count), else now."""
    if Path(sys.argv[0]).name in ("embedkit", "cli.py"):
        import psutil

        return time.monotonic() - (time.time() - psutil.Process().create_time())
    return time.monotonic()


def _cluster(scheduler, dask_workers):
    """The Dask cluster the command's work runs on (`embedkit.distributed.dask_backend`), or
    nothing where neither --scheduler nor --dask-workers is given."""
    import contextlib

    if not (scheduler or dask_workers):
        return contextlib.nullcontext()
    from .distributed import dask_backend

    return dask_backend(scheduler, dask_workers)


def _read_file(file: Path, text_columns, label_column: str, columns, encoding: str = "utf-8"):
    """``(data, roles)``: a table (`embedkit.io.load_table`) where several text columns or any
    ``--column`` are named, with the roles named (``text_columns``, ``categorical``, ``numeric``;
    `embedkit.tables.named_roles`), else one text column (`embedkit.io.load_texts`; None)."""
    from .io import load_table, load_texts
    from .tables import named_roles

    texts = list(text_columns or ["text"])
    if columns or len(texts) > 1:
        names, roles = named_roles(columns or ())
        return load_table(file, texts, label_column, names, encoding), {"text_columns": texts, **roles}
    return load_texts(file, texts[0], label_column, encoding), None


@app.command()
def tune(
    ctx: typer.Context,
    dataset: str | None = typer.Option(None, "--dataset", "-d",
                                       help="Built-in dataset (see `embedkit datasets`); its train "
                                            "rows where it has an official split."),
    file: Path | None = typer.Option(None, "--file", "-f",
                                     help="Your own CSV/TSV/parquet/JSONL file or folder-per-class."),
    text_column: list[str] | None = _TEXT_COLUMNS,
    label_column: str = typer.Option("label", help="Label column of --file."),
    column: list[str] | None = _COLUMNS,
    encoding: str = typer.Option("utf-8", help="Text encoding of --file, e.g. cp1252, latin-1 or "
                                               "utf-16."),
    representations: list[str] | None = typer.Option(
        None, "--representation", "-r",
        help="Search only these representations (repeatable). Default: the suite's winners."),
    heads: list[str] | None = typer.Option(
        None, "--head", "-H", help="Search only these heads (repeatable)."),
    budget: str = typer.Option("15m", "--budget", "-b",
                               help="Wall time of the whole command: 90s, 15m, 1h, 1h30m."),
    output: Path = typer.Option(Path("embedkit-tune"), "--output", "-o",
                                help="Folder for the leaderboard files, report.html and the model "
                                     "folder OUTPUT/model/: new, empty, or written by an earlier "
                                     "tune (checked before the search)."),
    overwrite: bool = typer.Option(False, "--overwrite",
                                   help="Let --output be a folder of yours: replace only the files "
                                        "tune writes there and keep every other file."),
    validation: float = typer.Option(0.2, min=0.01, max=0.5,
                                     help="Share of the documents every model is scored on."),
    seed: int = typer.Option(0, help="Seed for the split, the probes and the sampled settings."),
    finetune: str = typer.Option("auto", help="Fine-tuning: auto (when the time left pays for it) "
                                              "or no."),
    task: str | None = typer.Option(
        None, help="What the label column holds: classification, regression (a number) or "
                   "multilabel (a set of labels per row, written a|b). Default: read from the "
                   "values."),
    progress: bool = typer.Option(True, help="A line per model on stderr, with the time left."),
    scheduler: str | None = typer.Option(
        None, help="Dask scheduler address: fit the sparse and static tiers' models on that cluster."),
    dask_workers: int | None = typer.Option(
        None, min=1, help="Start a local Dask cluster with N worker processes for those models."),
):
    """Find the best pipeline for your data within a time budget, save it, write a leaderboard.

    By tier (`embedkit.Tuner`): sparse features with linear heads, static vectors, the frozen
    MiniLM encoder (one pass, cached), fine-tuning sized to the time left, in order of expected
    gain per measured second (on a GPU fine-tuning trains beside the rest), then more settings
    of the pairs that can still change the pick and an ensemble of what was scored. Every model,
    and the two five-line baselines (plain TF-IDF + LR, plain MiniLM + LR), is scored on the
    same validation rows. The pick is refit on all the rows when time allows, a fine-tuned one
    as the mean of up to four seeds. OUTPUT, the input and the budget are checked before the
    search; OUTPUT is published whole at the end (a kill leaves the earlier result or the new
    one). Ctrl-C or SIGTERM stops the search and keeps the best so far. --dask-workers or
    --scheduler fit the sparse and static tiers on a Dask cluster. The label may be a class, a
    number (regressors, RMSE/R²) or a set of labels written a|b (F1 at each model's best
    threshold); a table (several --text-column, --column NAME or '*') is read by every model.
    Then `embedkit predict OUTPUT/model new.csv -o predictions.csv`.
    """
    began = _started()
    from ._budget import BudgetError, parse_budget
    from .outputs import WRITE_SECONDS

    choice = {"auto": "auto", "yes": True, "no": False}
    if finetune not in choice:
        raise typer.BadParameter(f"{finetune!r}; use auto or no.", param_hint="--finetune")
    if (file is None) == (dataset is None):
        raise _fail(ValueError("give either --file PATH (with --text-column/--label-column) or "
                               "-d NAME for a built-in dataset (see `embedkit datasets`)."), ctx)
    tuner = None
    try:
        with sigterm_stops():
            seconds = parse_budget(budget)  # the budget, the output and the data before any work
            _enough(budget, seconds, time.monotonic() - began, 1 + WRITE_SECONDS)
            from .datasets import load_dataset
            from .outputs import check_output_folder
            from .tuning import Tuner, least_budget

            check_output_folder(output, overwrite=overwrite, inputs=[file] if file else [])
            df, table = (_read_file(file, text_column, label_column, column, encoding)
                         if file is not None else (load_dataset(dataset), None))
            features = [c for c in df.columns if c not in ("label", "split")]  # a table: several
            _notes(df)
            if "split" in df and set(df["split"]) >= {"train", "test"}:
                df = df[df["split"] == "train"].reset_index(drop=True)
                if progress:
                    typer.echo(f"tune: the data has an official split; tuning on its {len(df):,} "
                               "train rows", err=True)
            _enough(budget, seconds, time.monotonic() - began, least_budget(df[features[0]], output),
                    f" on {len(df):,} documents")
            tuner = Tuner(seconds, validation=validation, random_state=seed,
                          finetune=choice[finetune], progress=progress, task=task,
                          **(table or {}), representations=representations or None, heads=heads or None,
                          output=output, overwrite=overwrite,
                          backend="dask" if scheduler or dask_workers else None)
            with _cluster(scheduler, dask_workers):
                tuner.fit(df[features] if features != ["text"] else df["text"], df["label"],
                          started=began)
    except KeyboardInterrupt:
        if tuner is not None and getattr(tuner, "published_", False):
            raise _interrupted(f"after the result was written: {output} holds this run's "
                               f"leaderboard and its model ({output / 'model'})") from None
        raise _interrupted(f"no model was saved; {output} was left as it was") from None
    except (ValueError, OSError, BudgetError) as err:  # OSError: unreadable input, a full disk
        raise _fail(err, ctx) from None
    board = tuner.leaderboard_
    metric = board.attrs["metrics"][0]
    scored = board[board["status"] == "scored"]
    shown = ["rank", "pipeline", "kind", "documents", metric, *(["rmse"] if "rmse" in board else []),
             "fit_seconds", "pick"]
    typer.echo(scored.head(15)[shown].to_string(index=False, float_format="{:.3f}".format))
    for _, row in board[board["status"].isin(["left out", "interrupted"])].iterrows():
        typer.echo(f"{row['status']}: {row['pipeline']}: {row['note']}")
    if tuner.interrupted_:
        typer.echo("the search was interrupted (Ctrl-C or SIGTERM): the pick is the best model "
                   "scored before it")
    if tuner.refit_interrupted_:
        typer.echo("the refit was interrupted (Ctrl-C or SIGTERM): what it had not refit was kept "
                   "as fitted on the training rows")
    typer.echo(f"{tuner.budget_used_:.0f} s of {seconds:.0f} s used; tiers reached: "
               f"{', '.join(tuner.tiers_reached_)}. Wrote {output / 'leaderboard.md'}, "
               f"{output / 'report.html'}; saved the model to {output / 'model'}")


@app.command()
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
    from .configure import make_representation, parse_params
    from .io import read_chunks
    from .streaming import embed_file, parquet_to_npy

    suffix = output.suffix.lower()
    if suffix not in (".parquet", ".npy"):
        raise typer.BadParameter(f"{output} must end in .parquet or .npy", param_hint="OUTPUT")
    try:
        rep = make_representation(representation, param or ())
        if "cache" in rep.get_params() and all(p.name != "cache" for p in parse_params(param)):
            rep.set_params(cache=cache)  # the registry's in-memory cache is no use to one pass
    except ValueError as err:
        raise typer.BadParameter(_in_flags(str(err), ctx), param_hint="--representation/--param") from None
    if getattr(rep, "output", "pooled") != "pooled":
        raise typer.BadParameter(f"embed writes one vector per document; {representation!r} gives "
                                 f"output={rep.output!r}: pick a pooled representation or pass "
                                 "-p output=pooled.", param_hint="--param")
    columns = [text_column] + ([id_column] if id_column else [])
    try:  # the first chunk only: checks the columns and gives the documents to fit on
        first = next(read_chunks(input, columns, max(fit_rows, 1)), None)
    except (ValueError, FileNotFoundError) as err:
        raise typer.BadParameter(_in_flags(str(err), ctx), param_hint="INPUT") from None
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
        raise typer.BadParameter(_in_flags(str(err), ctx)) from None
    except OSError as err:  # a full disk, a file-size limit (WriteError names the fix)
        raise _fail(err, ctx) from None
    typer.echo(f"wrote {info['rows']} x {info['dim']} vectors from {type(rep).__name__} to {output}")


app.command()(neighbors)
app.command()(analogy)


@app.command()
def datasets():
    """List the built-in datasets."""
    from .datasets import list_datasets

    for row in list_datasets().itertuples():
        typer.echo(f"{row.name:<10} {row.about}")


@app.command()
def predict(
    ctx: typer.Context,
    model_dir: Path = typer.Argument(..., help="Model folder written by embedkit.save or `embedkit tune`."),
    input: Path = typer.Argument(..., help="CSV/TSV, parquet or JSON Lines file with a text column."),
    output: Path = typer.Option(Path("predictions.csv"), "--output", "-o",
                                help="Where to write: .csv, .tsv, .jsonl or .parquet. Not the input, "
                                     "not a folder; an existing file is replaced only when predict "
                                     "wrote it (or with --overwrite)."),
    text_column: str = typer.Option("text", help="Column holding the documents."),
    id_column: str | None = typer.Option(None, help="Column copied to the output (e.g. an id)."),
    encoding: str = typer.Option("utf-8", help="Text encoding of INPUT, e.g. cp1252, latin-1 or "
                                               "utf-16."),
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
    from .io import WriteError
    from .outputs import check_predictions_file
    from .persist import is_model_folder, load
    from .streaming import predict_file

    try:
        with sigterm_stops():
            try:
                check_predictions_file(output, input, overwrite=overwrite)
            except ValueError as err:
                raise typer.BadParameter(_in_flags(str(err), ctx), param_hint="--output") from None
            try:
                model = load(model_dir)
            except (ValueError, FileNotFoundError) as err:
                hint = (f" It holds the model folder {model_dir / 'model'}: pass that."
                        if is_model_folder(model_dir / "model") else "")
                raise typer.BadParameter(_in_flags(str(err), ctx) + hint,
                                         param_hint="MODEL_DIR") from None
            try:
                info = predict_file(model, input, output, text_column=text_column,
                                    id_column=id_column, chunksize=chunk_size, progress=progress,
                                    encoding=encoding, overwrite=overwrite)
            except WriteError as err:  # a full disk, a file-size limit: not the input's fault
                raise _fail(err, ctx) from None
            except (ValueError, OSError) as err:  # OSError: an unreadable input
                raise typer.BadParameter(_in_flags(str(err), ctx), param_hint="INPUT") from None
    except KeyboardInterrupt:
        raise _interrupted(f"{output} was not written") from None
    typer.echo(f"wrote {info['rows']} predictions to {output}")


if __name__ == "__main__":  # pragma: no cover
    app()
