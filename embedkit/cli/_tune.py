"""``embedkit tune``: the best pipeline a time budget buys, saved, with its leaderboard."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import typer

from .._stopping import sigterm_stops
from . import _options as opt
from ._errors import fail, interrupted

__all__ = ["tune"]


#: the least budget said is this much above what the command measured: the next start of the
#: command is not exactly as quick as this one, and the least said must hold there too
HEADROOM = 1.1


def _enough(budget: str, seconds: float, spent: float, need: float, done: str, left: str,
            floor: bool = False) -> None:
    """Refuse a budget that cannot score anything, saying the least that can: ``spent`` seconds
    on what is ``done``, ``need`` more for what is ``left``, with the moment until `Tuner.fit`
    checks it again (`DECIDING`) and `HEADROOM`. A ``floor`` (said at once, before the search is
    loaded and the data sized) says that it is one."""
    from .._budget import DECIDING, BudgetError

    need += DECIDING
    if seconds < spent + need:
        least = math.ceil(HEADROOM * (spent + need))
        raise BudgetError(
            f"--budget {budget} cannot score anything here: {done} took {spent:.0f} s; {left} "
            f"need {'at least' if floor else 'about'} {need:.0f} s more; give at least --budget "
            f"{least}s" + (" (a floor: loading the search and the size of the data come on "
                           "top; given that much, the command sizes the data and says the least "
                           "that holds)." if floor else "."))


def _validation(text: str) -> float | str:
    """``--validation``: "auto" or a share of the rows."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"--validation takes auto or a share of the documents such as 0.2, not "
                         f"{text!r}.") from None


def _size_said(size: int) -> str:
    return f"{size / 1e6:,.1f} MB" if size >= 1e6 else f"{max(size / 1e3, 1):.0f} kB"


def _started() -> float:
    """The `time.monotonic` at which the command started: the process's start where it is the
    ``embedkit`` command itself (the interpreter and the imports count), else now."""
    command = Path(sys.argv[0])
    if command.name == "embedkit" or command.parent.name == "cli":  # `python -m embedkit.cli` too
        import psutil

        return time.monotonic() - (time.time() - psutil.Process().create_time())
    return time.monotonic()


def tune(
    ctx: typer.Context,
    dataset: str | None = opt.dataset(None, "; its train rows where it has an official split"),
    file: Path | None = opt.FILE,
    text_column: list[str] | None = opt.TEXT_COLUMNS,
    label_column: list[str] | None = typer.Option(
        None, help="Label column of --file (default: label); repeat for several targets, each "
                   "tuned in its own search (a column set per target in `embedkit predict`)."),
    column: list[str] | None = opt.COLUMNS,
    encoding: str = opt.ENCODING,
    representations: list[str] | None = opt.REPRESENTATIONS,
    heads: list[str] | None = opt.HEADS,
    budget: str = typer.Option("15m", "--budget", "-b",
                               help="Wall time of the whole command: 90s, 15m, 1h, 1h30m."),
    output: Path = typer.Option(Path("embedkit-tune"), "--output", "-o",
                                help="Folder for the leaderboard files, report.html and the model "
                                     "folder OUTPUT/model/: new, empty, or written by an earlier "
                                     "tune (checked before the search)."),
    overwrite: bool = typer.Option(False, "--overwrite",
                                   help="Let --output be a folder of yours: replace only the files "
                                        "tune writes there and keep every other file."),
    validation: str = typer.Option(
        "auto", help="Share of the documents held out to score every model on (0.01 to 0.5), or "
                     "auto: 0.2, but below 500 documents each model is scored on every row by "
                     "5-fold cross-validation."),
    predict_limit: float | None = typer.Option(
        None, "--predict-limit", min=0.0,
        help="Seconds a row the pick may take to predict new rows on this machine, e.g. 0.002: "
             "models above it are scored but not picked (the leaderboard says so)."),
    memory: str | None = typer.Option(
        None, "--memory",
        help="Memory the command may hold, e.g. 4GB or 512MB: a model whose measured need would "
             "pass it is left out, a fit that passes it is stopped (the leaderboard says so). "
             "Default: 90% of the memory free when it starts."),
    seed: int = opt.SEED,
    finetune: str = typer.Option("auto", help="Fine-tuning: auto (when the time left pays for it) "
                                              "or no."),
    task: str | None = opt.TASK,
    progress: bool = opt.PROGRESS,
    scheduler: str | None = opt.SCHEDULER,
    dask_workers: int | None = opt.DASK_WORKERS,
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
    Several --label-column: one search per target, each with its share of the budget, reading
    the texts through one cache; one model predicts every target. Then `embedkit predict
    OUTPUT/model new.csv -o predictions.csv`.
    """
    began = _started()
    from .._budget import BudgetError, parse_budget

    choice = {"auto": "auto", "yes": True, "no": False}
    if finetune not in choice:
        raise typer.BadParameter(f"{finetune!r}; use auto or no.", param_hint="--finetune")
    if (file is None) == (dataset is None):
        raise fail(ValueError("give either --file PATH (with --text-column/--label-column) or "
                               "-d NAME for a built-in dataset (see `embedkit datasets`)."), ctx)
    tuner = None
    try:
        with sigterm_stops():
            seconds = parse_budget(budget)  # the budget, the output and the data before any work
            share = _validation(validation)
            from ..storage.outputs import WRITE_SECONDS

            _enough(budget, seconds, time.monotonic() - began, 1 + WRITE_SECONDS, "starting",
                    "the plain TF-IDF baseline and writing the output", floor=True)  # at once
            from .._budget import format_bytes
            from ..data.datasets import load_dataset
            from ..data.sizes import READ_MEMORY, size_file
            from ..storage.outputs import check_output_folder
            from ..tuning import Tuner, least_budget, memory_limit, rows_to_read  # their time counts

            size = size_file(file) if file is not None else None
            read = None  # the rows read: every one, unless the memory holds fewer
            limit = memory_limit(memory)  # the search's too: its default is the free memory now
            if size is not None:  # sized, not read: what it says holds once the file is read
                read = rows_to_read(size.rows, size.characters, limit, str(file))
                read = None if read >= size.rows else read
                _enough(budget, seconds, time.monotonic() - began, size.seconds + least_budget(
                    rows=read or size.rows, characters=size.characters * (read or size.rows)
                    // max(size.rows, 1), output=output), "starting",
                    f"reading the file ({_size_said(size.characters)}, {size.rows:,} documents at "
                    "most), the plain TF-IDF baseline on them and writing the output")
            check_output_folder(output, overwrite=overwrite, inputs=[file] if file else [])
            labels = list(dict.fromkeys(label_column or ["label"]))
            if len(labels) > 1 and file is None:
                raise ValueError("several --label-column need --file: a built-in dataset has one "
                                 "label column.")
            df, table = (opt.read_file(file, text_column, labels, column, encoding, rows=read, seed=seed)
                         if file is not None else (load_dataset(dataset), None))
            if read is not None:
                df.attrs.setdefault("notes", []).append(
                    f"read a random {len(df):,} of the {df.attrs['file_rows']:,} rows of {file} "
                    f"(seed {seed}): as read, all of them would hold about "
                    f"{format_bytes(READ_MEMORY * size.characters)} of memory, more than the search "
                    f"keeps for its data within its limit of {format_bytes(limit)}; a larger "
                    "--memory reads more")
            targets = labels if len(labels) > 1 else ["label"]
            features = [c for c in df.columns if c not in (*targets, "split")]  # a table: several
            opt.notes(df)
            if "split" in df and set(df["split"]) >= {"train", "test"}:
                df = df[df["split"] == "train"].reset_index(drop=True)
                if progress:
                    typer.echo(f"tune: the data has an official split; tuning on its {len(df):,} "
                               "train rows", err=True)
            _enough(budget, seconds, time.monotonic() - began, least_budget(df[features[0]], output),
                    "starting and reading the data", f"the plain TF-IDF baseline on {len(df):,} "
                    "documents and writing the output")
            tuner = Tuner(seconds, validation=share, random_state=seed,
                          predict_limit=predict_limit, memory=limit,
                          finetune=choice[finetune], progress=progress, task=task,
                          **(table or {}), representations=representations or None, heads=heads or None,
                          output=output, overwrite=overwrite,
                          backend="dask" if scheduler or dask_workers else None)
            with opt.cluster(scheduler, dask_workers):
                tuner.fit(df[features] if features != ["text"] else df["text"],
                          df[targets] if len(targets) > 1 else df["label"], started=began)
    except KeyboardInterrupt:
        if tuner is not None and getattr(tuner, "published_", False):
            raise interrupted(f"after the result was written: {output} holds this run's "
                               f"leaderboard and its model ({output / 'model'})") from None
        raise interrupted(f"no model was saved; {output} was left as it was") from None
    except (ValueError, OSError, BudgetError) as err:  # OSError: unreadable input, a full disk
        raise fail(err, ctx) from None
    if len(targets) > 1:
        _said_targets(tuner, seconds, output)
        return
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


def _said_targets(tuner, seconds: float, output: Path) -> None:
    """What `tune` prints after a run of several targets: each one's pick and score."""
    from ..tuning.targets import summary

    typer.echo(summary(tuner.targets_).to_string(index=False, float_format="{:.3f}".format))
    if tuner.interrupted_ or tuner.refit_interrupted_:
        typer.echo("a search or a refit was interrupted (Ctrl-C or SIGTERM): see each target's "
                   "leaderboard")
    typer.echo(f"{tuner.budget_used_:.0f} s of {seconds:.0f} s used. Wrote {output / 'leaderboard.md'} "
               f"and each target's files under {output / 'targets'}; saved the model to "
               f"{output / 'model'}")
