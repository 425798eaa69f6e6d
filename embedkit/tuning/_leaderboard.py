"""The leaderboard of a tuning search (`embedkit.Tuner`): one row per model, each row's pipeline
for the report, and the files it is written to (`write_leaderboard`: the table, its chart and
``report.html``, the page `embedkit.report.write_html_report` draws)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..machine import largest_process_mb
from ._candidate import describe

__all__ = ["calibration_figures", "leaderboard", "pipelines", "write_leaderboard"]


def leaderboard(tuner) -> pd.DataFrame:
    """One row per model of the search, best first, then the ones left out or failed.

    Columns: ``rank``, ``pipeline``, ``kind`` (candidate / baseline / ensemble), ``tier``,
    ``representation``, ``head``, ``params``, ``documents`` (training rows it fitted on; under
    cross-validation, those of a fold's fit), ``<scoring>`` (on the validation rows: every row,
    out of fold, under cross-validation), ``vs_baseline`` and ``vs_baseline_se`` (its paired
    difference to the better baseline on the same rows, in points, and that difference's
    standard error), ``fit_seconds`` (fit and validation predictions; every fold's), ``predict_s_per_1000``
    (seconds to predict 1,000 new documents: its predictions on the validation rows, and the
    pass of the frozen encoder it read from the cache), ``memory_mb`` (what its fit grew the
    process's resident memory by, in MB; NaN for an ensemble and a fit off the cores),
    ``grown_from`` (the smaller fit of the same model it grew from), ``status`` (scored / left
    out / failed / interrupted), ``note`` (why, the budget that would include a left-out
    model, a recipe cut shorter than the documents) and ``pick``; a number's rows add
    ``rmse``; classes and label sets
    ``log_loss`` and ``ece`` (expected calibration error, 15 bins) of the validation
    probabilities; label sets the other F1 and the ``threshold`` each model scored best at.
    ``attrs`` holds the split, the tiers reached, the budget, the memory limit
    (``memory_limit_mb``) and the run's peak resident memory so far (``peak_mb``).
    """
    search = tuner.search_
    name = tuner.scoring_
    split = {"regression": "shuffled", "multilabel": "stratified by each row's rarest label"}.get(
        tuner.task_, "stratified")
    scored = search.board.scored()
    baselines = [c for c in scored if c.kind == "baseline"]
    base = max(baselines, key=lambda c: c.score) if baselines else None
    rows = []
    for c in search.board.candidates:
        vs = search.board.versus(c, base) if base is not None and c.status == "scored" else None
        note = "; ".join(n for n in (c.note, c.truncated) if n)
        rows.append({"pipeline": c.label, "kind": c.kind, "tier": c.tier,
                     "representation": c.representation, "head": c.head,
                     "params": describe(c.params), "documents": search.data.n_rows(c), name: c.score,
                     "vs_baseline": math.nan if vs is None else 100 * vs.difference,
                     "vs_baseline_se": math.nan if vs is None else 100 * vs.se,
                     "fit_seconds": c.fit_seconds + (0 if math.isnan(c.predict_seconds)
                                                     else c.predict_seconds),
                     "predict_s_per_1000": 1000 * c.row_seconds, "memory_mb": c.memory / 2**20,
                     **_also(c, search, name),
                     "grown_from": "" if c.grown_from is None else c.grown_from.label,
                     "status": c.status, "note": note, "pick": c.label == tuner.pick_})
    board = pd.DataFrame(rows)
    order = board["status"].map({"scored": 0, "interrupted": 1, "left out": 2, "failed": 3,
                                 "waiting": 4})
    board = (board.assign(_order=order).sort_values(["_order", name], ascending=[True, False],
                                                      na_position="last", kind="stable")
             .drop(columns="_order").reset_index(drop=True))
    board.insert(0, "rank", np.arange(1, len(board) + 1))
    board.attrs.update(
        n_docs=len(search.data.docs), n_valid=len(search.data.valid), metrics=[name], budget_s=tuner.budget_,
        memory_limit_mb=(search.asked.memory or math.nan) / 2**20, peak_mb=largest_process_mb(),
        protocol=(f"one validation split: {len(search.data.valid):,} of {len(search.data.docs):,} documents "
                  f"({split}, seed {tuner.random_state}); every model trained on the other "
                  f"{len(search.data.train):,}" if search.data.folds is None else
                  f"{search.data.fits_each}-fold cross-validation ({split}, seed {tuner.random_state}): "
                  f"every one of the {len(search.data.docs):,} documents scored by the fit of the "
                  "folds without it"),
        baseline=None if base is None else base.label,
        tiers_reached=list(tuner.tiers_reached_), interrupted=tuner.interrupted_,
        refit_interrupted=getattr(tuner, "refit_interrupted_", False),
        notes=list(getattr(tuner, "notes_", [])),
        encoder_seconds=search.board.encoder_seconds, refit=tuner.refit_, seeds=tuner.seeds_,
        refit_members=getattr(tuner, "refit_members_", (int(tuner.refit_), 1)),
        calibration={k: v for k, v in (getattr(tuner, "calibration_", None) or {}).items()
                     if not k.startswith("proba")})
    return board


def calibration_figures(tuner) -> dict:
    """The pick's reliability diagrams on the validation rows, as fitted and calibrated (each
    fold at the calibration of the others), by title; none for numbers and label sets."""
    from ..plots import reliability_diagram

    found = getattr(tuner, "calibration_", None)
    if not found:
        return {}
    search = tuner.search_
    shown = {"as fitted": (found["proba"], found["ece"])}
    if found["applied"]:
        mapped = ", top class mapped" if found.get("top_label") else ""
        shown[f"calibrated, temperature {found['temperature']:.2f}{mapped}"] = (
            found["proba_calibrated"], found["ece_calibrated"])
    return {f"The pick's probabilities {name}: ECE {ece:.3f}": reliability_diagram(
        search.data.y_valid, proba, search.data.classes) for name, (proba, ece) in shown.items()}


def pipelines(tuner) -> dict:
    """Each leaderboard row's pipeline, unfitted (for the report's parameter listing); an
    ensemble's row has none of its own."""
    out = {}
    for c in tuner.search_.board.candidates:
        if c.kind == "ensemble":
            continue
        try:
            out[c.label] = c.build()
        except Exception:  # a left-out plan has no builder
            continue
    return {k: v for k, v in out.items() if v is not None}


def _also(c, search, chosen_by: str) -> dict:
    """What a row shows besides the score chosen by: a number's RMSE; for classes and label sets
    the log-loss and the expected calibration error (15 bins; label sets: per label, averaged)
    of its validation probabilities; for label sets also micro- and macro-F1 (each at its best
    threshold) and the threshold chosen by ``chosen_by``; NaN where the row has no stored
    outputs."""
    from ..data.targets import expected_calibration_error, log_loss
    from ._selection import label_set_score

    if search.data.task == "regression":
        return {"rmse": math.nan if c.proba is None else float(
            np.sqrt(np.mean((np.asarray(c.proba)[:, 0] - search.data.y_valid) ** 2)))}
    calibration = {"log_loss": math.nan, "ece": math.nan} if c.proba is None else {
        "log_loss": log_loss(search.data.y_valid, c.proba, search.data.classes),
        "ece": expected_calibration_error(search.data.y_valid, c.proba, search.data.classes)}
    if search.data.task != "multilabel":
        return calibration
    out = {m: math.nan if c.proba is None else label_set_score(m, c.proba, search.data.y_valid)[0]
           for m in ("f1_micro", "f1_macro") if m != chosen_by}
    return {**out, **calibration, "threshold": math.nan if c.proba is None
            else label_set_score(chosen_by, c.proba, search.data.y_valid)[1]}


def _final(meta: dict) -> str:
    """What became of the pick, from a tune leaderboard's ``attrs`` ('' for other boards)."""
    if "refit" not in meta:
        return ""
    done, members = meta.get("refit_members", (int(bool(meta["refit"])), 1))
    if meta.get("refit_interrupted") and not meta["refit"]:
        return ("**The refit was interrupted** (Ctrl-C or SIGTERM): "
                + (f"{done} of the pick's {members} models were refit on all "
                   f"{meta.get('n_docs', 0):,} documents, the others kept" if done else
                   "the pick was kept") + " as fitted on the training rows. ")
    if not meta["refit"] and done:
        return (f"{done} of the pick's {members} models were refit on all "
                f"{meta.get('n_docs', 0):,} documents, the others kept as fitted on the training "
                "rows (no time to refit them). ")
    if not meta["refit"]:
        return "The pick was kept as fitted on the training rows (no time for a refit). "
    seeds = int(meta.get("seeds") or 1)
    return (f"The pick was refit on all {meta.get('n_docs', 0):,} documents"
            + (f", its fine-tuned model as the mean of {seeds} seeds" if seeds > 1 else "") + ". ")


def _calibrated(meta: dict) -> str:
    """Whether the pick's probabilities were calibrated, from a tune leaderboard's ``attrs``."""
    found = meta.get("calibration")
    if not found:
        return ""
    numbers = (f"validation log-loss {found['log_loss']:.3f} as fitted, "
               f"{found['log_loss_calibrated']:.3f} calibrated (each fold of the validation rows "
               "at the calibration fitted on the others); calibration error "
               f"{found['ece']:.3f}, {found['ece_calibrated']:.3f}")
    if found["applied"]:
        mapped = ", then its top class's confidence mapped" if found.get("top_label") else ""
        return (f"Its probabilities are calibrated (temperature {found['temperature']:.2f}"
                f"{mapped}; {numbers}); its predictions are its own. ")
    return f"Its probabilities are as fitted: a temperature did not lower their log-loss ({numbers}). "


def write_leaderboard(board: pd.DataFrame, output: str | Path, *, title: str = "embedkit tune",
                      top: int = 20, dataset: pd.DataFrame | None = None,
                      pipelines: dict | None = None, figures: dict | None = None) -> list[Path]:
    """Write a tuning search's ``leaderboard.csv`` (every row), ``leaderboard.md`` (the scored
    rows, then what was left out, failed or interrupted and why; first, where a Ctrl-C or SIGTERM
    ended the search, that it did), ``leaderboard.png`` (the ``top`` scored rows as bars,
    `embedkit.plots.score_chart`) and ``report.html`` (`embedkit.report.write_html_report`: the scored rows,
    sortable, the score-versus-time chart, the ``dataset`` summary and each row's parameters
    from ``pipelines``, keyed by the ``pipeline`` column, then the charts of ``figures`` by
    caption) into the folder ``output``; returns their paths. ``board`` is
    `embedkit.tuning.leaderboard`'s frame."""
    from ..plots import score_chart
    from ..report import write_html_report

    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    meta = board.attrs
    metric = (meta.get("metrics") or ["accuracy"])[0]
    csv_path, md_path, png_path = (out / f"leaderboard.{ext}" for ext in ("csv", "md", "png"))
    board.to_csv(csv_path, index=False)
    scored = board[board["status"] == "scored"].copy()
    n_valid = int(meta.get("n_valid") or 0)
    # a single split's spread: the binomial standard error of an accuracy on the validation rows
    scored[f"{metric}_std"] = (np.sqrt(scored[metric] * (1 - scored[metric]) / n_valid)
                               if metric == "accuracy" and n_valid else np.nan)
    shown = scored.head(top).copy()
    over = shown["note"].fillna("").str.contains("over the predict limit")
    shown["pick"] = np.where(shown["pick"], "**pick**", np.where(over, "over the predict limit", ""))
    if "vs_baseline" in shown:  # the paired difference, in points, with its standard error
        shown["vs baseline"] = [f"{d:+.1f} ± {e:.1f}" if d == d else "" for d, e in
                                zip(shown["vs_baseline"], shown["vs_baseline_se"], strict=True)]
    also = [c for c in ("rmse", "f1_micro", "f1_macro", "threshold", "log_loss", "ece")
            if c != metric]  # by task
    columns = ["rank", "pipeline", "kind", "tier", "documents", metric, *also, "vs baseline",
               "fit_seconds", "predict_s_per_1000", "memory_mb", "pick"]
    table = shown[[c for c in columns if c in shown]].to_markdown(index=False, floatfmt=".3f")
    rest = board[board["status"] != "scored"]
    cut = board.loc[board["status"] == "interrupted", "pipeline"].tolist()
    lines = [f"# {title}", ""]
    lines += [f"*Note:* {note}." for note in meta.get("notes", [])] + ([""] if meta.get("notes") else [])
    if meta.get("interrupted"):
        lines += ["**The search was interrupted** (Ctrl-C or SIGTERM): the pick is the best model "
                  "scored before it" + (f"; {', '.join(cut)} was stopped and not scored" if cut
                                        else "") + ".", ""]
    lines += [f"{metric} on {meta.get('protocol', 'the validation rows')}. "
              f"Tiers reached: {', '.join(meta.get('tiers_reached', [])) or 'none'}"
              + ("; the search was interrupted" if meta.get("interrupted") else "") + ". "
              + _final(meta) + _calibrated(meta)
              + "*documents*: the training rows a model fitted on; *vs baseline*: its paired "
              f"difference to {meta.get('baseline') or 'the better baseline'} on the same rows, in "
              "points, ± its standard error (the pick beats the baseline by more than that, or is "
              "the baseline); *fit_seconds*: its fit and its predictions on the validation rows, "
              "wall clock; *predict_s_per_1000*: seconds to predict 1,000 documents"
              + ("; *memory_mb*: what its fit grew the process's resident memory by, in MB (the "
                 f"run's peak: {meta['peak_mb']:,.0f} MB, its limit "
                 f"{meta['memory_limit_mb']:,.0f} MB)" if meta.get("peak_mb") else "")
              + ("; *log_loss*, *ece*: the log-loss and expected calibration error (15 bins) of "
                 "its probabilities on the validation rows" if "ece" in shown else "")
              + ".", "", table, ""]
    if len(rest):
        lines += ["## Left out, failed or interrupted", "",
                  rest[["pipeline", "tier", "status", "note"]].to_markdown(index=False), ""]
    md_path.write_text("\n".join(lines))
    results = scored.rename(columns={metric: f"{metric}_mean"})
    results["pipeline"] = [label + (" [pick]" if pick else "")
                           for label, pick in zip(scored["pipeline"], scored["pick"], strict=True)]
    results.attrs.update(meta)
    score_chart(results.head(top), png_path, title=title, metric=metric)
    html_path = write_html_report(
        results, out / "report.html", dataset=dataset, metric=metric, title=title, figures=figures,
        pipelines={shown_as: pipelines[label] for label, shown_as
                   in zip(scored["pipeline"], results["pipeline"], strict=True)
                   if pipelines and label in pipelines})
    return [csv_path, md_path, png_path, html_path]
