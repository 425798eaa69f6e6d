"""`embedkit tune` on a large file, run as a user runs it: the command under ``/usr/bin/time -v``
(the whole command's wall time and peak resident memory), ``embedkit predict`` on held-out rows,
and the plain TF-IDF baseline fitted on every training row, scored on the same held-out rows.

    python pipelines/benchmarks/make_short_texts.py --rows 1000000 --output DIR/train.csv \\
        --test-output DIR/test.csv
    python pipelines/benchmarks/tune_large.py --train DIR/train.csv --test DIR/test.csv \\
        --budget 10m --output OUT
    python pipelines/benchmarks/tune_large.py --train DIR/big.csv --test DIR/test.csv \\
        --budget 10m --memory 4GB --no-baseline --output OUT      # a file larger than the limit

On a machine with a memory limit: ``--cgroup-limit 4GB`` runs the command in a new memory cgroup
of that size (Linux, as root; cgroup v1 or v2), as a container or a batch job would, without
``--memory`` unless given: tune reads the limit itself. The table then says whether the kernel
killed it (``oom kills``) and the group's own peak.

A file larger than memory: ``DIR/big.csv`` is ``DIR/train.csv``'s rows written again until it
has the size asked (``--grow-to 5GB`` makes it, once). ``--no-baseline`` skips the baseline (it
would read every row into memory, the thing such a file does not allow). The plain MiniLM + LR
baseline is not fitted here: encoding 1,000,000 texts takes about half an hour on two cores.

Output (``--output``): ``runs.jsonl`` (a line per run: the pick, its held-out accuracy, the
baseline's, the command's wall seconds and peak memory, what tune said of the rows it read) and
``results.md``, the table; ``pipelines/benchmarks/results/tune_large.md`` is this file's copy.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout without installing it
    sys.path.insert(0, str(ROOT))


def grown(train: Path, size: str) -> Path:
    """``train``'s rows written again (the header once) until the file holds ``size`` bytes."""
    from embedkit._budget import parse_memory

    want = parse_memory(size)
    out = train.with_name(f"{train.stem}-{size}{train.suffix}")
    if out.exists() and out.stat().st_size >= want:
        return out
    with train.open("rb") as fh:
        header, body = fh.readline(), fh.read()
    part = out.with_name(out.name + ".part")
    with part.open("wb") as fh:
        fh.write(header)
        written = len(header)
        while written < want:
            fh.write(body)
            written += len(body)
    part.replace(out)
    return out


def _embedkit() -> list[str]:
    return [sys.executable, "-c", "import sys; from embedkit.cli import app; sys.argv[0] = 'embedkit'; app()"]


def memory_group(limit: str) -> Path:
    """A new memory cgroup of ``limit`` bytes (v1's memory controller, else v2's), for the
    command to run in."""
    from embedkit._budget import parse_memory

    v1 = Path("/sys/fs/cgroup/memory")
    folder = (v1 if v1.is_dir() else Path("/sys/fs/cgroup")) / f"embedkit-bench-{os.getpid()}"
    folder.mkdir()
    (folder / ("memory.limit_in_bytes" if v1.is_dir() else "memory.max")).write_text(
        str(int(parse_memory(limit))))
    return folder


def group_said(folder: Path) -> dict:
    """What the kernel says of a group the command ran in: its peak and its OOM kills."""
    peak = folder / "memory.max_usage_in_bytes"
    peak = peak if peak.exists() else folder / "memory.peak"
    events = folder / "memory.oom_control"
    events = events if events.exists() else folder / "memory.events"
    kills = re.search(r"oom_kill (\d+)", events.read_text()) if events.exists() else None
    return {"group_peak_gb": int(peak.read_text()) / 2**30 if peak.exists() else float("nan"),
            "oom_kills": int(kills.group(1)) if kills else None}


def timed(args: list[str], log: Path, group: Path | None = None) -> dict:
    """Run ``args`` under ``/usr/bin/time -v`` (in ``group``, a cgroup, where given): its return
    code, wall seconds, peak memory."""
    began = time.perf_counter()
    enter = None if group is None else (lambda: (group / "cgroup.procs").write_text(str(os.getpid())))
    with log.open("w") as fh:
        code = subprocess.run(["/usr/bin/time", "-v", *args], stdout=fh, stderr=subprocess.STDOUT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=enter).returncode
    text = log.read_text()
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    return {"code": code, "wall_s": time.perf_counter() - began,
            "peak_gb": int(peak.group(1)) / 2**20 if peak else float("nan")}


def run(train: Path, test: Path, budget: str, out: Path, memory: str | None, seed: int,
        baseline: bool, cgroup: str | None = None) -> dict:
    from sklearn.base import clone

    from embedkit.data.reading import load_texts
    from embedkit.data.sizes import size_file
    from embedkit.tuning import TFIDF_BASELINE, baseline_pipelines

    name = (f"{train.stem}-{budget}-seed{seed}" + (f"-memory{memory}" if memory else "")
            + (f"-cgroup{cgroup}" if cgroup else ""))
    folder = out / name
    tune = ["tune", "-f", str(train), "--budget", budget, "--seed", str(seed), "-o",
            str(folder / "tune"), "--overwrite"] + (["--memory", memory] if memory else [])
    folder.mkdir(parents=True, exist_ok=True)
    group = memory_group(cgroup) if cgroup else None
    try:
        ran = timed(_embedkit() + tune, folder / "tune.log", group)
        said = group_said(group) if group else {}
    finally:
        if group is not None:
            group.rmdir()
    size = size_file(train)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    row = {"commit": commit, "file": train.name, "rows": size.rows, "bytes": size.characters,
           "budget": budget,
           "memory": memory, "cgroup": cgroup, "seed": seed, "tune_code": ran["code"],
           "tune_wall_s": ran["wall_s"], "tune_peak_gb": ran["peak_gb"], **said}
    said = [line for line in (folder / "tune.log").read_text().splitlines() if "read a sample" in line
            or " s of " in line and "used" in line]
    row["said"] = said
    if ran["code"] != 0:
        return row
    board = pd.read_csv(folder / "tune" / "leaderboard.csv")
    pick = board[board["pick"]].iloc[0]
    row.update(pick=str(pick["pipeline"]), pick_documents=int(pick["documents"]),
               pick_valid=float(pick["accuracy"]))
    predicted = timed(_embedkit() + ["predict", str(folder / "tune" / "model"), str(test), "-o",
                                     str(folder / "pred.csv")], folder / "predict.log")
    truth = load_texts(test)
    pred = pd.read_csv(folder / "pred.csv")
    row["pick_acc"] = float((pred[pred.columns[0]].astype(str).to_numpy()
                             == truth["label"].astype(str).to_numpy()).mean())
    row["predict_s"] = predicted["wall_s"]
    if baseline:
        data = load_texts(train)
        began = time.perf_counter()
        five_lines = baseline_pipelines("memory", solver="lbfgs")[TFIDF_BASELINE]
        model = clone(five_lines).fit(data["text"], data["label"])
        row["tfidf_fit_s"] = time.perf_counter() - began
        row["tfidf_acc"] = float(np.mean(np.asarray(model.predict(truth["text"])) == truth["label"]))
        row["vs_tfidf_points"] = 100 * (row["pick_acc"] - row["tfidf_acc"])
    return row


def table(rows: list[dict]) -> str:
    shown = []
    for r in rows:
        shown.append({
            "file": f"{r['file']} ({r['rows']:,} rows, {r['bytes'] / 1e9:.2f} GB)",
            "budget": r["budget"], "--memory": r["memory"] or "",
            "machine's limit": r.get("cgroup") or "", "seed": r["seed"],
            "exit": r["tune_code"], "oom kills": "" if r.get("oom_kills") is None else r["oom_kills"],
            "wall s": f"{r['tune_wall_s']:.0f}",
            "peak GiB": f"{r['tune_peak_gb']:.2f}", "pick": r.get("pick", ""),
            "held out": f"{r['pick_acc']:.3f}" if "pick_acc" in r else "",
            "plain TF-IDF + LR, every row": f"{r['tfidf_acc']:.3f}" if "tfidf_acc" in r else "not fitted",
            "difference (points)": f"{r['vs_tfidf_points']:+.1f}" if "vs_tfidf_points" in r else ""})
    return pd.DataFrame(shown).to_markdown(index=False, disable_numparse=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=Path, required=True)
    parser.add_argument("--test", type=Path, required=True)
    parser.add_argument("--budget", default="10m")
    parser.add_argument("--memory", default=None, help="tune's --memory, e.g. 4GB")
    parser.add_argument("--cgroup-limit", default=None,
                        help="run tune in a new memory cgroup of this size, e.g. 4GB (root)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grow-to", default=None,
                        help="tune on --train's rows written again to this size, e.g. 5GB")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--output", type=Path, default=Path("tune-large"))
    args = parser.parse_args(argv)
    args.output.mkdir(parents=True, exist_ok=True)
    train = grown(args.train, args.grow_to) if args.grow_to else args.train
    row = run(train, args.test, args.budget, args.output, args.memory, args.seed, not args.no_baseline,
              args.cgroup_limit)
    runs = args.output / "runs.jsonl"
    with runs.open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    rows = [json.loads(line) for line in runs.read_text().splitlines()]
    command = "python pipelines/benchmarks/tune_large.py " + " ".join(argv or sys.argv[1:])
    text = f"# `embedkit tune` on large files, held out\n\nCommand: `{command}`\n\n{table(rows)}\n"
    (args.output / "results.md").write_text(text)
    print(text)
    for line in row["said"]:
        print(line)


if __name__ == "__main__":
    main()
