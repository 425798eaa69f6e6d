"""Few labels, the product: `embedkit tune` on a few labelled documents a class, against the two
methods a user would fit alone on the same draw, frozen MiniLM + LR and embedkit's SetFit.

    PYTHONPATH=. python pipelines/benchmarks/few_labels_tune.py             # the reported run
    PYTHONPATH=. python pipelines/benchmarks/few_labels_tune.py --datasets trec --seeds 0 1
    PYTHONPATH=. python pipelines/benchmarks/few_labels_tune.py --report-only
    # SetFit alone cut to a number of training steps, as tune cuts it to fit its time
    PYTHONPATH=. python pipelines/benchmarks/few_labels_tune.py --datasets trec --seeds 0 \
        --steps 40 80 160 400
    # an earlier commit's tune on the same draws: this script copied into that commit's
    # checkout and run there, its records appended to this one's runs file
    cd CHECKOUT && PYTHONPATH=. python pipelines/benchmarks/few_labels_tune.py --output OUT

Protocol: `few_labels.py`'s (its datasets' splits, the fixed test sample of ``--test-size``
documents, ``n`` documents a class drawn with the seed). On each draw, ``Tuner(budget,
random_state=seed)`` with every default, fitted in this process (two cores, nothing else
running), then scored on the test sample; the record keeps the commit of the embedkit it
imported (so an earlier commit's tune is reported beside today's),
the pick and the seconds used. The yardsticks on the same draw and test documents are
`few_labels.py`'s records where it has them (``frozen + LR``, ``setfit``: its
``few_labels_runs.jsonl``), else run here with its functions and kept in this run's file.

Output (``--output``): ``few_labels_tune_runs.jsonl`` and ``few_labels_tune.md``: per set and
commit, tune's accuracy against the better of the two yardsticks, paired draw by draw; each
run's leaderboard and progress lines in ``leaderboards/`` (not kept in the repository); and,
with ``--steps``, SetFit alone (the registry's ``setfit``) at each ``max_steps`` on the same
draws: what a cut recipe keeps (`embedkit.heads.setfit.LEAST_STEPS`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import few_labels as fl  # noqa: E402

RESULTS = fl.ROOT / "pipelines" / "benchmarks" / "results"
RUNS = "few_labels_tune_runs.jsonl"
TUNE, STEPS = "tune", "setfit-steps"
YARDSTICKS = (fl.FROZEN, fl.SETFIT)
#: the sets of the few-label benchmark, and two of more classes: trec (6, questions) and
#: 20newsgroups (20, long posts). The search's few-label rules (`FEW_LABEL_PAIRS`) are decided
#: on few_labels.py's four sets, by its measurements of each method alone, never on tune's runs
#: here; trec and 20newsgroups are report sets only
DATASETS = (*fl.DATASETS, "trec", "20newsgroups")


def commit() -> str:
    """The commit of the embedkit this process imported (``+`` where its tree has changes)."""
    import embedkit

    where = Path(embedkit.__file__).resolve().parent
    head = subprocess.run(["git", "-C", str(where), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--", "."],
                           capture_output=True, text=True).stdout.strip()
    return head + ("+" if dirty else "")


def run_tune(name: str, n: int, seed: int, budget: float, test_size: int,
             board: Path | None = None) -> dict:
    """`embedkit.Tuner` on one draw, scored on the test sample; its leaderboard and progress
    lines written into ``board`` (a folder) where given."""
    from embedkit import Tuner

    train, test = fl.data(name, test_size)
    part = fl.labelled(train, n, seed)
    lines: list[str] = []
    tuner = Tuner(budget=budget, random_state=seed, progress=lines.append)
    start = time.perf_counter()
    tuner.fit(part["text"].tolist(), part["label"].to_numpy())
    seconds = time.perf_counter() - start
    pred = tuner.predict(test["text"].tolist())
    if board is not None:  # every model's validation score, for reading the pick
        board.mkdir(parents=True, exist_ok=True)
        stem = board / f"{name}-{n}-{seed}-{commit()}"
        tuner.leaderboard_.to_csv(stem.with_suffix(".csv"), index=False)
        stem.with_suffix(".log").write_text("\n".join(lines) + "\n")
    return {"dataset": name, "n_per_class": n, "seed": seed, "method": TUNE,
            **fl._scores(test["label"], pred), "fit_seconds": seconds, "budget_s": budget,
            "pick": tuner.pick_, "n_train": len(part), "n_test": len(test), "commit": commit()}


def run_steps(name: str, n: int, seed: int, steps: int, test_size: int) -> dict:
    """The registry's SetFit alone on one draw, cut to ``steps`` training steps."""
    train, test = fl.data(name, test_size)
    part = fl.labelled(train, n, seed)
    model = fl.tuned_head(fl.SETFIT, seed).set_params(max_steps=steps)
    start = time.perf_counter()
    model.fit(part["text"].tolist(), part["label"].to_numpy())
    seconds = time.perf_counter() - start
    pred = model.predict(test["text"].tolist())
    return {"dataset": name, "n_per_class": n, "seed": seed, "method": STEPS, "max_steps": steps,
            **fl._scores(test["label"], pred), "fit_seconds": seconds, "commit": commit()}


def yardsticks(name: str, n: int, seed: int, test_size: int, have: set) -> list[dict]:
    """The yardsticks this draw lacks, run with `few_labels.py`'s functions."""
    out = []
    if (name, n, seed, fl.FROZEN) not in have:
        out += [r for r in fl.run_frozen(name, [(n, seed, (fl.FROZEN,))], test_size)
                if r["method"] == fl.FROZEN]
    if (name, n, seed, fl.SETFIT) not in have:
        out += fl.run_tuned(name, n, seed, fl.SETFIT, test_size)
    return out


def records(out: Path) -> pd.DataFrame:
    """This run's records and `few_labels.py`'s yardsticks (today's settings), one frame."""
    mine = fl.read_runs(out / RUNS)
    theirs = [r for r in fl.current(fl.read_runs(RESULTS / fl.RUNS))
              if r["method"] in (*YARDSTICKS, fl.TFIDF)]
    return pd.DataFrame(theirs + mine)


def run(datasets, sizes, seeds, budget: float, test_size: int, out: Path, steps=()) -> None:
    out.mkdir(parents=True, exist_ok=True)
    now = commit()
    for name in datasets:
        for n in sizes:
            for seed in seeds:
                if steps:
                    new = [run_steps(name, n, seed, s, test_size) for s in steps]
                    with (out / RUNS).open("a") as fh:
                        fh.writelines(json.dumps(r) + "\n" for r in new)
                    continue
                frame = records(out)
                have = set() if frame.empty else set(zip(
                    frame.dataset, frame.n_per_class, frame.seed, frame.method, strict=True))
                done = (not frame.empty and ((frame.method == TUNE) & (frame.dataset == name)
                        & (frame.n_per_class == n) & (frame.seed == seed)
                        & (frame.get("commit") == now)).any())
                new = yardsticks(name, n, seed, test_size, have)
                if not done:
                    new.append(run_tune(name, n, seed, budget, test_size, out / "leaderboards"))
                with (out / RUNS).open("a") as fh:
                    fh.writelines(json.dumps(r) + "\n" for r in new)
                for r in new:
                    print(f"{name:16s} n={n:<3d} seed={seed} {r['method']:12s} "
                          f"acc={r['accuracy']:.3f} ({r['fit_seconds']:.0f} s)"
                          + (f" pick: {r['pick']}" if "pick" in r else ""), flush=True)


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per set, size and commit of tune: its accuracy, the yardsticks' on the same draws, and
    tune minus the better yardstick of each draw (mean ± standard error over the draws)."""
    rows = []
    tuned = runs[runs.method == TUNE]
    for (name, n, at), group in tuned.groupby(["dataset", "n_per_class", "commit"], sort=False):
        draws = []
        for _, r in group.iterrows():
            same = runs[(runs.dataset == name) & (runs.n_per_class == n) & (runs.seed == r.seed)]
            marks = {m: same[same.method == m].accuracy.iloc[-1] for m in YARDSTICKS
                     if (same.method == m).any()}
            if len(marks) == len(YARDSTICKS):
                plain = same[same.method == fl.TFIDF].accuracy
                draws.append({"tune": r.accuracy, **marks, fl.TFIDF: plain.iloc[-1] if len(plain)
                              else float("nan"), "seconds": r.fit_seconds,
                              "pick": r.pick, "diff": r.accuracy - max(marks.values())})
        if not draws:
            continue
        d = pd.DataFrame(draws)
        se = d["diff"].std(ddof=1) / len(d) ** 0.5 if len(d) > 1 else float("nan")
        rows.append({"dataset": name, "n/class": n, "commit": at, "draws": len(d),
                     "tune": 100 * d.tune.mean(), fl.TFIDF: 100 * d[fl.TFIDF].mean(skipna=False),
                     "frozen + LR": 100 * d[fl.FROZEN].mean(),
                     "setfit": 100 * d[fl.SETFIT].mean(), "tune − better": 100 * d["diff"].mean(),
                     "± se": 100 * se, "seconds used": d.seconds.mean(),
                     "picks": "; ".join(d.pick)})
    return pd.DataFrame(rows)


def report(out: Path) -> str:
    runs = records(out)
    budget = runs.loc[runs.method == TUNE, "budget_s"].max() if (runs.method == TUNE).any() else 0
    t = table(runs)
    lines = ["# Few labels: `embedkit tune` against frozen MiniLM + LR and SetFit", "",
             "Written by `pipelines/benchmarks/few_labels_tune.py` (protocol in its docstring): "
             f"`Tuner(budget={budget:.0f})` on a draw of labelled documents a class, scored on "
             "`few_labels.py`'s test sample, beside frozen MiniLM + LR and embedkit's SetFit "
             "(MiniLM) fitted alone on the same draw. Accuracy in %; \"tune − better\": tune "
             "minus the better of the two on each draw, averaged over the draws (± its standard "
             "error). Plain TF-IDF + LR on the same draws beside them, from `few_labels.py`'s "
             "runs where it has every draw (nan: trec and 20newsgroups, which it does not run). "
             "A commit ending in + ran with changes not yet committed.", ""]
    if not t.empty:
        draws = t.assign(w=t.draws)
        overall = draws.groupby("commit", sort=False).apply(lambda g: pd.Series({
            "draws": g.w.sum(), "tune": (g.tune * g.w).sum() / g.w.sum(),
            "tune − better": (g["tune − better"] * g.w).sum() / g.w.sum()}), include_groups=False)
        overall["draws"] = overall["draws"].astype(int)
        lines += ["Over every draw, per commit (means weighted by draws):", "",
                  overall.reset_index().to_markdown(index=False, floatfmt=".1f"), ""]
        shown = t.drop(columns="picks")
        lines += [shown.to_markdown(index=False, floatfmt=".1f"), "",
                  "Picks, draw by draw:", ""]
        lines += [f"* {r.dataset} {r['n/class']}/class at {r.commit}: {r.picks}"
                  for _, r in t.iterrows()]
    if (runs.method == STEPS).any():
        cut = runs[runs.method == STEPS].drop_duplicates(
            ["dataset", "n_per_class", "seed", "max_steps"], keep="last")
        cut = cut.assign(accuracy=100 * cut.accuracy, max_steps=cut.max_steps.astype(int))
        lines += ["", "## SetFit alone, cut to a number of training steps", "",
                  "The registry's `setfit` (MiniLM, 64 word pieces, SetFit's own pairs) fitted "
                  "alone on the draw with ``max_steps`` (`--steps`): what `tune` keeps when it "
                  "cuts SetFit's steps to fit its time. Accuracy in %.", "",
                  cut[["dataset", "n_per_class", "seed", "max_steps", "accuracy", "fit_seconds",
                       "commit"]].rename(columns={"n_per_class": "n/class", "max_steps": "steps",
                                                  "fit_seconds": "seconds"})
                  .to_markdown(index=False, floatfmt=".1f")]
    text = "\n".join(lines) + "\n"
    (out / "few_labels_tune.md").write_text(text)
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[16])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--budget", default="5m")
    parser.add_argument("--test-size", type=int, default=400)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--steps", nargs="+", type=int, default=[],
                        help="instead of tune: SetFit alone at each of these max_steps")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.report_only:
        from embedkit._budget import parse_budget

        run(args.datasets, args.sizes, args.seeds, parse_budget(args.budget), args.test_size,
            args.output, args.steps)
    print(report(args.output))


if __name__ == "__main__":
    main()
