"""The leaderboard of a tuning search (`embedkit.Tuner`): one row per model, and each row's
pipeline for the report."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ._engine import describe

__all__ = ["leaderboard", "pipelines"]


def leaderboard(tuner) -> pd.DataFrame:
    """One row per model of the search, best first, then the ones left out or failed.

    Columns: ``rank``, ``pipeline``, ``kind`` (candidate / baseline / ensemble), ``tier``,
    ``representation``, ``head``, ``params``, ``documents`` (training rows it fitted on),
    ``<scoring>`` (on the validation rows), ``fit_seconds`` (fit and validation predictions),
    ``status`` (scored / left out / failed), ``note`` (why, and the budget that would include a
    left-out model) and ``pick``. ``attrs`` holds the split, the tiers reached and the budget.
    """
    search = tuner.search_
    name = tuner.scoring
    rows = []
    for c in search.candidates:
        trained = len(search.train) if c.rows is None else len(c.rows)
        rows.append({"pipeline": c.label, "kind": c.kind, "tier": c.tier,
                     "representation": c.representation, "head": c.head,
                     "params": describe(c.params), "documents": trained if c.kind != "ensemble"
                     else len(search.train), name: c.score,
                     "fit_seconds": c.fit_seconds + (0 if math.isnan(c.predict_seconds)
                                                     else c.predict_seconds),
                     "status": c.status, "note": c.note, "pick": c.label == tuner.pick_})
    board = pd.DataFrame(rows)
    order = board["status"].map({"scored": 0, "interrupted": 1, "left out": 2, "failed": 3,
                                 "waiting": 4})
    board = (board.assign(_order=order).sort_values(["_order", name], ascending=[True, False],
                                                      na_position="last", kind="stable")
             .drop(columns="_order").reset_index(drop=True))
    board.insert(0, "rank", np.arange(1, len(board) + 1))
    board.attrs.update(
        n_docs=len(search.docs), n_valid=len(search.valid), metrics=[name], budget_s=tuner.budget_,
        protocol=f"one validation split: {len(search.valid):,} of {len(search.docs):,} documents "
                 f"(stratified, seed {tuner.random_state}); every model trained on the other "
                 f"{len(search.train):,}",
        tiers_reached=list(tuner.tiers_reached_), interrupted=tuner.interrupted_,
        refit_interrupted=getattr(tuner, "refit_interrupted_", False),
        notes=list(getattr(tuner, "notes_", [])),
        encoder_seconds=search.encoder_seconds, refit=tuner.refit_, seeds=tuner.seeds_,
        refit_members=getattr(tuner, "refit_members_", (int(tuner.refit_), 1)))
    return board


def pipelines(tuner) -> dict:
    """Each leaderboard row's pipeline, unfitted (for the report's parameter listing); an
    ensemble's row has none of its own."""
    out = {}
    for c in tuner.search_.candidates:
        if c.kind == "ensemble":
            continue
        try:
            out[c.label] = c.build()
        except Exception:  # a left-out plan has no builder
            continue
    return {k: v for k, v in out.items() if v is not None}
