"""The AutoML peers a user would pick instead of `embedkit tune` (AutoGluon, FLAML, SetFit), on
the tuning benchmark's rows, budget and machine, paired row by row with its kept `tune` runs.

    ./run.sh peers --quick                                     # smoke: AutoGluon on a trec slice
    ./run.sh peers --quick --peers flaml setfit                # other peers' paths
    ./run.sh peers --budget 10m                                # the seven sets, every peer
    ./run.sh peers --budget 2m --datasets trec --peers autogluon-tabular --output peers-2m
    ./run.sh peers --report-only --output peers

Protocol: each set is split exactly as `tune_budget.py` splits it (its `sides`: the official
split where the set has one, else stratified 80/20 with seed 0; ``--quick``: the suite's small
slices), written as ``train.parquet`` / ``test.parquet`` (``text``, ``label``) under
``OUTPUT/splits/``, and each peer runs on it in its own environment (``.venv-peers``:
``pipelines/peers/run_peers.py`` says what each peer is and how it is called), one after another,
never two at a time, with the budget as its time limit. The machine is the one `tune` ran on
when the numbers are compared: the results file records it.

Output (``--output``, default ``peers``): ``runs.jsonl`` (one line per set, peer, budget and seed;
a rerun skips finished ones; each keeps which held-out rows the peer got right), ``logs/`` (each
run's own output) and ``results.md``: per set and peer, held-out accuracy, wall seconds (the
whole fit) and its share of the budget, peak memory, what the peer picked, and `tune` (the run
of the same set and budget in ``--tune-runs``, by default the kept 10-minute runs
``pipelines/benchmarks/results/tune_budget_runs.jsonl``) minus the peer, paired row by row:
the difference, its standard error and the exact McNemar p-value (`tune_budget.paired`). A
second table pairs `tune` with the best peer of each set.

``./run.sh peers`` makes the peers' environment on first use and passes its interpreter as
``--python``; run directly (``.venv/bin/python pipelines/benchmarks/peers.py``), it looks for
``.venv-peers`` in the checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout without installing it
    sys.path.insert(0, str(ROOT))

from pipelines.benchmarks.tune_budget import DATASETS, machine, paired, sides  # noqa: E402

RUNNER = ROOT / "pipelines" / "peers" / "run_peers.py"
TUNE_RUNS = ROOT / "pipelines" / "benchmarks" / "results" / "tune_budget_runs.jsonl"
#: peer -> the embedkit resource it fine-tunes (None: none)
PEERS = {"autogluon-tabular": None, "autogluon-multimodal-minilm": "all-minilm-l6-v2",
         "autogluon-multimodal-mpnet": "all-mpnet-base-v2", "flaml": None,
         "setfit": "all-mpnet-base-v2"}
#: the tuning benchmark's peers; SetFit belongs to the few-label benchmark (name it to run it)
DEFAULT_PEERS = ("autogluon-tabular", "autogluon-multimodal-minilm", "autogluon-multimodal-mpnet",
                 "flaml")
QUICK_PEER, QUICK_SET, QUICK_BUDGET = "autogluon-tabular", "trec", "1m"


def export(name: str, folder: Path, quick: bool = False, data: Path | None = None,
           sample: int | None = None) -> dict:
    """Write set ``name``'s two sides, split by `tune_budget.sides`, to ``folder`` as
    ``train.parquet`` and ``test.parquet`` (``text``, ``label``, the split's row order).

    Returns
    -------
    dict
        ``dataset`` (the label `tune_budget` gives the set), ``protocol``, ``n_train``,
        ``n_test``.
    """
    train, test, protocol, label = sides(name, quick=quick, data=data, sample=sample)
    folder.mkdir(parents=True, exist_ok=True)
    for side, frame in (("train", train), ("test", test)):
        frame[["text", "label"]].to_parquet(folder / f"{side}.parquet", index=False)
    return {"dataset": label, "protocol": protocol, "n_train": len(train), "n_test": len(test)}


def runner_module():
    """`RUNNER` as a module, importable here: it is a script of the peers' environment, whose top
    level imports only numpy and pandas (what reads its constants and helpers from this one)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_peers", RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def model_folder(peer: str) -> Path | None:
    """The local model folder ``peer`` fine-tunes (fetched once into embedkit's cache), or None."""
    if PEERS[peer] is None:
        return None
    from embedkit.storage.resources import fetch

    return fetch(PEERS[peer])


def peers_python(given: Path | None = None) -> Path:
    """The peers' interpreter: ``given``, else ``$EMBEDKIT_PEERS_VENV`` or the checkout's
    ``.venv-peers``.

    Raises
    ------
    FileNotFoundError
        No such interpreter: the peers' environment is not set up.
    """
    if given is None:
        venv = Path(os.environ.get("EMBEDKIT_PEERS_VENV", ".venv-peers"))
        given = (venv if venv.is_absolute() else ROOT / venv) / "bin" / "python"
    if not given.exists():
        raise FileNotFoundError(f"no peers' environment at {given}: `./run.sh peers` sets it up "
                                "(pipelines/peers/requirements.txt) and then runs this script")
    return given


def run_peer(python: Path, peer: str, split: Path, meta: dict, budget_s: float, seed: int,
             out: Path, quick: bool = False, timeout: float | None = None,
             threads: int | None = None) -> dict:
    """Run one peer on one exported split in the peers' environment and return its result line
    (with the split's ``protocol``); a run that fails or times out returns a line with
    ``error`` and the end of its output, so one peer's failure does not end the sweep.
    ``threads``: the peer's OpenMP and MKL threads (default: theirs, every core)."""
    result = out / "pending.jsonl"
    result.unlink(missing_ok=True)
    command = [str(python), str(RUNNER), "--peer", peer, "--split", str(split), "--budget",
               str(budget_s), "--set", meta["dataset"], "--seed", str(seed), "--result", str(result),
               "--work", str(out / "work")]
    folder = model_folder(peer)
    command += ["--model", str(folder)] if folder is not None else []
    command += ["--quick"] if quick else []
    log = out / "logs" / f"{split.name}-{peer}-{budget_s:g}s-seed{seed}{'-quick' * quick}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    if threads is not None:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    base = {"peer": peer, "dataset": meta["dataset"], "budget_s": budget_s, "seed": seed,
            "quick": quick, "protocol": meta["protocol"]}
    start = time.perf_counter()
    with log.open("w") as fh:
        try:
            done = subprocess.run(command, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                  timeout=timeout or 3 * budget_s + 900)
        except subprocess.TimeoutExpired:
            return {**base, "error": f"timed out after {time.perf_counter() - start:.0f} s",
                    "log": str(log)}
    if done.returncode != 0 or not result.exists():
        tail = log.read_text(errors="replace").splitlines()[-15:]
        return {**base, "error": f"exit status {done.returncode}", "log": str(log),
                "output_tail": tail}
    row = json.loads(result.read_text().splitlines()[-1])
    result.unlink()
    return {**row, "protocol": meta["protocol"], "log": str(log)}


def _key(row: dict) -> tuple:
    return row["dataset"], row["peer"], row["budget_s"], row["seed"], row.get("quick", False)


def latest(rows: list[dict]) -> list[dict]:
    """The last line of each set, peer, budget, seed and mode, in first-seen order: a run that
    failed and was run again shows once, as it ended the second time."""
    last = {}
    for row in rows:
        last[_key(row)] = row  # a dict keeps the place of the key's first line
    return list(last.values())


def shown_arguments(argv: list[str]) -> list[str]:
    """The command-line arguments as the results file shows them: without ``--python PATH``,
    which names this machine's folders (``./run.sh peers`` adds it)."""
    shown, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--python":
            skip = True
        elif not arg.startswith("--python="):
            shown.append(arg)
    return shown


def _tune_run(row: dict, tune_runs: list[dict]) -> dict | None:
    """The kept `tune` run of ``row``'s set at the same budget, on as many held-out rows."""
    for run in tune_runs:
        if (run["dataset"] == row["dataset"] and run["budget_s"] == row["budget_s"]
                and len(run.get("held_out_right", "")) == len(row["held_out_right"])):
            return run
    return None


def pair_with_tune(rows: list[dict], tune_runs: list[dict]) -> list[dict]:
    """Each scored peer row with `tune` − peer, paired row by row (`tune_budget.paired`) where
    ``tune_runs`` has the same set at the same budget: ``tune``, ``points`` (tune − peer),
    ``se_points``, ``p``, ``only_tune``, ``only_peer``, and the five-line baselines that run scored
    on the same held-out rows (``tfidf``, ``minilm``); None where there is no such run."""
    out = []
    for row in rows:
        if "error" in row:
            out.append({**row})
            continue
        tune = _tune_run(row, tune_runs)
        if tune is None:
            out.append({**row, "tune": None})
            continue
        pair = paired(tune, row)  # tune is the "new" side: its points are tune - peer
        out.append({**row, "tune": pair["new"], "tune_pick": tune.get("pick"),
                    "tfidf": tune.get("tfidf_acc"), "minilm": tune.get("minilm_acc"),
                    "points": pair["points"], "se_points": pair["se_points"], "p": pair["p"],
                    "only_tune": pair["only_new"], "only_peer": pair["only_old"]})
    return out


def _verdict(points: float, p: float) -> str:
    if p >= 0.05:
        return "no difference shown"
    return "tune better" if points > 0 else "peer better"


def table(rows: list[dict]) -> pd.DataFrame:
    """The results table: one row per set and peer run (`pair_with_tune`'s rows)."""
    from embedkit._budget import format_seconds

    def cell(row, key, form):
        value = row.get(key)
        return "" if value is None or (isinstance(value, float) and np.isnan(value)) \
            else form.format(value)

    out = []
    for r in rows:
        scored = "error" not in r
        out.append({
            "set": r["dataset"], "budget": format_seconds(r["budget_s"]), "peer": r["peer"],
            "tune held out": cell(r, "tune", "{:.3f}"),
            "peer held out": f"{r['accuracy']:.3f}" if scored else f"failed: {r['error']}",
            "plain TF-IDF + LR": cell(r, "tfidf", "{:.3f}"),
            "plain MiniLM + LR": cell(r, "minilm", "{:.3f}"),
            "wall s (share)": f"{r['wall_s']:.0f} ({r['wall_s'] / r['budget_s']:.0%})" if scored
            else "",
            "peak memory": f"{r['peak_mb'] / 1024:.1f} GB" if scored else "",
            "pick": r.get("pick", ""),
            "tune − peer (points)": cell(r, "points", "{:+.1f}"),
            "standard error (points)": cell(r, "se_points", "{:.1f}"),
            "McNemar p": cell(r, "p", "{:.2f}"),
            "verdict (p < 0.05)": _verdict(r["points"], r["p"]) if r.get("p") is not None else "",
        })
    return pd.DataFrame(out)


def best_peers(rows: list[dict]) -> pd.DataFrame:
    """`tune` against the best peer (by held-out accuracy) of each set and budget, paired."""
    scored = [r for r in rows if "error" not in r and r.get("p") is not None]
    best = {}
    for r in scored:
        key = (r["dataset"], r["budget_s"])
        if key not in best or r["accuracy"] > best[key]["accuracy"]:
            best[key] = r
    return table(list(best.values()))


def write(rows: list[dict], out: Path, command: str, tune_runs: Path) -> str:
    """``results.md`` from the run lines; its text."""
    kept = [json.loads(line) for line in tune_runs.read_text().splitlines() if line.strip()] \
        if tune_runs.exists() else []
    pairs = pair_with_tune(rows, kept)
    where = tune_runs.relative_to(ROOT) if tune_runs.is_relative_to(ROOT) else tune_runs
    text = (f"# `embedkit tune` against the AutoML peers, held out\n\nCommand: `{command}`\n\n"
            f"Machine: {machine()}\n\n`tune`: the kept run of the same set and budget in "
            f"`{where}`, paired row by row on the same held-out side; the plain baselines are that "
            "run's, on the same held-out rows.\n\n"
            + table(pairs).to_markdown(index=False, disable_numparse=True) + "\n")
    best = best_peers(pairs)
    if not best.empty:
        text += ("\n## `tune` against the best peer of each set\n\n"
                 + best.to_markdown(index=False, disable_numparse=True) + "\n")
    (out / "results.md").write_text(text)
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=None,
                        help=f"default: the tuning benchmark's seven sets ({QUICK_SET} with --quick)")
    parser.add_argument("--peers", nargs="+", choices=list(PEERS), default=None,
                        help=f"default: {', '.join(DEFAULT_PEERS)} ({QUICK_PEER} with --quick)")
    parser.add_argument("--budget", default=None, help=f"default 10m ({QUICK_BUDGET} with --quick)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="peers")
    parser.add_argument("--quick", action="store_true",
                        help="the suite's small slices, a short budget and smoke settings: checks "
                             "the path in a few minutes")
    parser.add_argument("--data", type=Path, default=None,
                        help="read DATA/<dataset>.parquet instead of the packaged sets "
                             "(tune_budget.py's --data)")
    parser.add_argument("--sample", type=int, default=None,
                        help="a stratified slice of this many documents (tune_budget.py's --sample)")
    parser.add_argument("--tune-runs", type=Path, default=TUNE_RUNS,
                        help="the tune runs to pair with (a tune_budget.py runs.jsonl)")
    parser.add_argument("--python", type=Path, default=None,
                        help="the peers' interpreter (./run.sh peers passes .venv-peers')")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds after which a peer's run is ended (default 3 x budget + 15 min)")
    parser.add_argument("--report-only", action="store_true",
                        help="rebuild results.md from runs.jsonl without running anything")
    args = parser.parse_args(argv)
    from embedkit._budget import parse_budget

    datasets = args.datasets or ([QUICK_SET] if args.quick else list(DATASETS))
    peers = args.peers or ([QUICK_PEER] if args.quick else list(DEFAULT_PEERS))
    budget_s = parse_budget(args.budget or (QUICK_BUDGET if args.quick else "10m"))
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    runs = out / "runs.jsonl"
    done = [json.loads(line) for line in runs.read_text().splitlines()] if runs.exists() else []
    command = "./run.sh peers " + " ".join(shown_arguments(sys.argv[1:] if argv is None else argv))
    python = None if args.report_only else peers_python(args.python)
    for name in [] if args.report_only else datasets:
        label = name if args.sample is None else f"{name} ({args.sample:,})"  # as sides() names it
        meta = None
        for peer in peers:
            if not args.quick and any(_key(r) == (label, peer, budget_s, args.seed, False)
                                      and "error" not in r for r in done):
                continue  # finished: a rerun resumes an interrupted sweep
            if meta is None:  # exported once per set, the first time a peer needs it
                split = out / "splits" / (name if args.sample is None else f"{name}-{args.sample}")
                meta = export(name, split, quick=args.quick, data=args.data, sample=args.sample)
            print(f"{meta['dataset']}: {peer}, {budget_s:.0f} s ...", file=sys.stderr, flush=True)
            row = run_peer(python, peer, split, meta, budget_s, args.seed, out, quick=args.quick,
                           timeout=args.timeout)
            print(f"  {row['accuracy']:.3f} held out, {row['wall_s']:.0f} s" if "error" not in row
                  else f"  failed ({row['error']}): see {row['log']}", file=sys.stderr, flush=True)
            with runs.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            done.append(row)
    print(write(latest(done), out, command, args.tune_runs))


if __name__ == "__main__":
    main()
