"""The picks of finished `embedkit tune` runs replayed at the pick's bar of today and at the one
standard error a challenger had to pass before (issue 62): which runs' picks the bar changes.

    python pipelines/benchmarks/pick_bar.py OUT/*-10m* --output pick_bar.md

Each argument is a `tune` output folder (as `tune_budget.py` writes them: ``OUT/<set>-<budget>``,
``-seed<k>`` after it for another seed). Its ``leaderboard.csv`` holds every scored model's
validation score, its paired difference to the better baseline with that difference's standard
error, and its seconds; the rule of `embedkit.tuning._pick.choose` is replayed on them: the
better baseline stands, the other best-scoring models (`PICK_TOP` + 1 in all) are compared with
it, and those ahead by more than the bar (`bar` of their number; before: `PICK_Z` each) are in the
running, the best-scoring of them picked. A pick the run chose as a cheaper model within the
noise of the best one (its `PREDICT_RATIO` rule, whose paired evidence the leaderboard does not
hold) is kept where it passes the bar too, else said to change. Runs whose leaderboards are the
same file are read once. Where the folder's parent has ``runs.jsonl``, the held-out accuracy of
the pick and of both baselines is shown beside it; with ``--held-out``, that of a pick the bar
changes too: a baseline's from the same record, a registry pair's fitted here as the finish refits
a pick (its settings, every training document of `tune_budget.sides`' split) and scored on the
same held-out rows. Standing models other than a baseline (few labels: SetFit's pair under
cross-validation) are not replayed: such runs are left out.

    python pipelines/benchmarks/pick_bar.py OUT/*-10m* --held-out --output pick_bar.md
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import math
import re
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout without installing it
    sys.path.insert(0, str(ROOT))

NAME = re.compile(r"(?P<set>.+)-(?P<budget>\d+(?:\.\d+)?[smh])(?:-seed(?P<seed>\d+))?$")


def ahead(board: pd.DataFrame, z_of) -> tuple[pd.DataFrame, float]:
    """The models ahead of the better baseline by more than ``z_of(challengers)`` standard
    errors, best first, and that bar."""
    from embedkit.tuning._settings import PICK_TOP

    cost = board.fit_seconds + board.predict_s_per_1000.fillna(math.inf) / 1000
    ranked = board.assign(cost=cost).sort_values(["score", "cost"], ascending=[False, True])
    base = ranked[ranked.kind == "baseline"].iloc[0]
    challengers = ranked.iloc[:PICK_TOP + 1]
    challengers = challengers[challengers.pipeline != base.pipeline]
    z = z_of(len(challengers))
    passing = (challengers.vs_baseline > z * challengers.vs_baseline_se) & (challengers.vs_baseline > 0)
    return challengers[passing], z


def replay(folder: Path, held_out: bool = False) -> dict | None:
    from embedkit.tuning._pick import bar
    from embedkit.tuning._settings import PICK_Z

    board = pd.read_csv(folder / "leaderboard.csv")
    metric = next((m for m in ("accuracy", "f1_micro", "f1_macro", "r2") if m in board), None)
    if metric is None or "vs_baseline" not in board or not (board.kind == "baseline").any():
        return None
    board = board[board.status == "scored"].rename(columns={metric: "score"})
    picked = board[board.pick.astype(str) == "True"].pipeline
    picked = picked.iloc[0] if len(picked) else "the baseline"
    before, z_before = ahead(board, lambda k: PICK_Z)
    now, z_now = ahead(board, bar)
    top = before.pipeline.iloc[0] if len(before) else None
    base = board[board.kind == "baseline"].sort_values("score", ascending=False).iloc[0].pipeline
    if picked not in (set(before.pipeline) if top else {base, "the baseline"}):
        return None  # not this rule's pick (a predict limit, a standing pair): not replayed
    kept = top is None or {top, picked} <= set(now.pipeline)
    chosen = picked if kept else (now.pipeline.iloc[0] if len(now) else base)
    new = board[board.pipeline == (chosen if chosen in set(board.pipeline) else base)].iloc[0]
    found = NAME.match(folder.name)
    row = {"run": f"{folder.parent.name}/{folder.name}", "set": found["set"] if found else folder.name,
           "seed": int(found["seed"] or 0) if found else 0, "picked": picked,
           "z": float((before.vs_baseline / before.vs_baseline_se).iloc[0]) if top else math.nan,
           "bar": z_now, "bar before": z_before, "pick now": new.pipeline, "changed": not kept}
    runs = folder.parent / "runs.jsonl"
    if runs.exists() and found:
        key = (row["set"], row["seed"], picked)
        records = [r for r in map(json.loads, runs.read_text().splitlines())
                   if (r.get("dataset"), r.get("seed", 0), r.get("pick")) == key]
        if records:  # the run's own record: its set, seed and pick
            r = records[-1]
            row.update({"held out": r.get("pick_acc"), "TF-IDF + LR": r.get("tfidf_acc"),
                        "MiniLM + LR": r.get("minilm_acc")})
            if held_out and not kept:
                row["held out now"] = (r.get("tfidf_acc") if new.pipeline.startswith("plain TF-IDF")
                                       else r.get("minilm_acc") if new.pipeline.startswith("plain MiniLM")
                                       else refit_score(new, row["set"]))
    return row


def refit_score(pick: pd.Series, name: str) -> float:
    """Held-out accuracy of a leaderboard row's registry pair with its settings, fitted on every
    training document of ``name``'s split (as the finish refits a pick)."""
    from embedkit.tuning._candidate import build_pipeline
    from pipelines.benchmarks.tune_budget import sides

    train, test, *_ = sides(name)
    pipe = build_pipeline(pick.representation, pick.head, {}, None)
    steps = pipe.named_steps
    text = pick.params if isinstance(pick.params, str) else ""  # "a=1, b=(1, 2)"; empty: NaN
    for part in re.split(r", (?=\w+=)", text) if text else []:
        key, value = part.split("=", 1)
        step = "features" if key in steps["features"].get_params() else "head"
        pipe.set_params(**{f"{step}__{key}": ast.literal_eval(value)})
    pipe.fit(train["text"], train["label"].to_numpy())
    return float((pipe.predict(test["text"]) == test["label"].to_numpy()).mean())


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--held-out", action="store_true",
                        help="score a pick the bar changes on the set's held-out rows")
    args = parser.parse_args(argv)
    seen, rows = set(), []
    for folder in args.folders:
        board = folder / "leaderboard.csv"
        digest = hashlib.sha256(board.read_bytes()).hexdigest() if board.exists() else None
        if digest is None or digest in seen:
            continue
        seen.add(digest)
        row = replay(folder, args.held_out)
        if row is not None:
            rows.append(row)
    table = pd.DataFrame(rows).sort_values(["set", "seed", "run"])
    changed = int(table.changed.sum())
    text = "\n".join([
        "# The pick's bar replayed on finished runs (issue 62)", "",
        f"Command: `python pipelines/benchmarks/pick_bar.py FOLDERS` on {len(args.folders)} `tune` "
        "output folders (the *run* column: parent/folder).", "",
        f"{len(table)} distinct runs; the pick changes in {changed}. *z*: the best model ahead of "
        "the better baseline, its paired difference over that difference's standard error; *bar*: "
        "what it must pass now (before: *bar before*); held-out accuracies from the run's "
        "``runs.jsonl``.", "",
        table.to_markdown(index=False, floatfmt=".3f"), ""])
    print(text)
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
    return table


if __name__ == "__main__":
    main()
