"""The search's linear and MLP heads fitted at 1 core, 2 cores and every core, under the thread
policy and under the libraries' own settings (issue 33: "no slower per fit with more cores").

    python pipelines/benchmarks/bench_threads.py                 # this machine
    python pipelines/benchmarks/bench_threads.py --emulate 16     # also pools of 16 threads
    python pipelines/benchmarks/bench_threads.py --data DIR      # no packages (a lent GPU)

Data: TREC's 5,452 training questions (``embedkit.load_dataset("trec")``), of which the search
fits on 4,362 (its stratified validation split, seed 0); TF-IDF is the registry's ``tfidf``,
fitted on those rows, and the MiniLM vectors are the registry's ``minilm``, encoded once and
kept in ``DATA/trec_minilm.npy`` beside ``DATA/trec.parquet`` (carry that folder to a machine
without the packaged model and data). Heads: the registry's ``logreg-cv`` on both, and ``mlp``
on TF-IDF, trained on the CPU (``device="cpu"``): the cores are what is measured.

Each (cores, setting) runs in a fresh process pinned to that many cores (CPU affinity), so the
libraries size their pools as they would on a machine of that size. "policy": the fits run
inside ``embedkit.machine.plan_threads(workers=1).block()`` (torch and the tokenizer at the
cores, BLAS at one thread). "unmanaged": nothing set, the libraries' defaults (they size their
pools by the affinity; at one core that is the policy's one thread everywhere, so that process
is not run). ``--emulate N`` adds "pools of N": the unmanaged pools then set to N threads each
(threadpoolctl, ``torch.set_num_threads``) on the pinned cores, as a machine's defaults are when
its libraries see more cores than the process may use (a container's CPU quota) or other work
shares them. A warm-up fit on 300 rows comes first; then each head is fitted ``--repeat`` times
and the median wall-clock seconds is reported, with the process's CPU seconds (all its
threads) per fit. A fit over ``--limit``
seconds stops that head's repeats, and the processes share ``--budget`` seconds (270: the run
ends inside 5 minutes), each the time left divided by the processes left; one stopped at its
share reports the heads it finished. Figures depend on what else runs on the machine: the
results file records the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from the checkout without installing it
    sys.path.insert(0, str(ROOT))

HEADS = ("tfidf + logreg-cv", "minilm + logreg-cv", "tfidf + mlp")
DEFAULT_DATA = Path(os.environ.get("TMPDIR", "/tmp")) / "embedkit-bench-threads"


def prepare(data: Path) -> None:
    """``DATA/trec.parquet`` (TREC's training questions) and ``DATA/trec_minilm.npy`` (their
    MiniLM vectors), made once from the packaged data and model."""
    data.mkdir(parents=True, exist_ok=True)
    if not (data / "trec.parquet").exists():
        from embedkit import load_dataset

        df = load_dataset("trec")
        df[df["split"] == "train"][["text", "label"]].reset_index(drop=True).to_parquet(
            data / "trec.parquet")
    if not (data / "trec_minilm.npy").exists():
        import numpy as np
        import pandas as pd

        from embedkit.registry import REPRESENTATIONS

        texts = pd.read_parquet(data / "trec.parquet")["text"].to_numpy()
        start = time.perf_counter()
        vectors = REPRESENTATIONS["minilm"].factory().set_params(cache=None).fit_transform(texts)
        np.save(data / "trec_minilm.npy", np.asarray(vectors, dtype=np.float32))
        print(f"encoded {len(texts)} questions with MiniLM in {time.perf_counter() - start:.0f} s",
              flush=True)


def _inputs(data: Path):
    """The search's training rows: ``{name: (features, labels)}`` and a 300-row warm-up set."""
    import numpy as np
    import pandas as pd
    from sklearn.model_selection import train_test_split

    from embedkit.registry import REPRESENTATIONS

    df = pd.read_parquet(data / "trec.parquet")
    y = df["label"].to_numpy()
    # the search's split (embedkit.tuning._engine.Search.split): a fifth, at most 2,000, held out
    train, _ = train_test_split(np.arange(len(df)), test_size=min(round(0.2 * len(df)), 2000),
                                stratify=y, random_state=0)
    train = np.sort(train)
    tfidf = REPRESENTATIONS["tfidf"].factory().fit_transform(df["text"].to_numpy()[train], y[train])
    minilm = np.load(data / "trec_minilm.npy")[train]
    return {"tfidf": tfidf, "minilm": minilm}, y[train]


def _head(name: str):
    from embedkit.registry import HEADS as REGISTRY

    head = REGISTRY[name.split(" + ")[1]].factory()
    return head.set_params(device="cpu") if "device" in head.get_params() else head


def child(args) -> None:
    """One (cores, setting): fit every head, one JSON line per head on stdout."""
    import contextlib

    import numpy as np
    import torch
    from threadpoolctl import threadpool_info

    from embedkit.machine import available_cores, plan_threads

    features, y = _inputs(args.data)
    plan = plan_threads(workers=1) if args.child == "policy" else None
    if args.child.startswith("pools of"):  # pools sized for more cores than the process has
        from threadpoolctl import threadpool_limits

        threads = int(args.child.split()[-1])
        threadpool_limits(limits=threads)
        torch.set_num_threads(threads)
    block = plan.block() if plan is not None else contextlib.nullcontext()
    with block:
        pools = {"torch": torch.get_num_threads(),
                 "blas": sorted({lib["num_threads"] for lib in threadpool_info()
                                 if lib["user_api"] == "blas"})}
        for name in args.heads:
            X = features[name.split(" + ")[0]]
            _head(name).fit(X[:300], y[:300])  # warm-up: imports, first kernels
            walls, cpus = [], []
            for _ in range(args.repeat):
                wall, cpu = time.perf_counter(), time.process_time()
                _head(name).fit(X, y)
                walls.append(time.perf_counter() - wall)
                cpus.append(time.process_time() - cpu)
                if walls[-1] > args.limit:
                    break
            print(json.dumps({"head": name, "setting": args.child, "cores": available_cores(),
                              "seconds": float(np.median(walls)), "cpu": float(np.median(cpus)),
                              "fits": len(walls), "pools": pools, "rows": int(X.shape[0])}),
                  flush=True)


def run_child(setting: str, cores: int, args, timeout: float) -> list[dict]:
    allowed = sorted(os.sched_getaffinity(0))
    env = dict(os.environ)
    command = [sys.executable, __file__, "--child", setting, "--data", str(args.data),
               "--repeat", str(args.repeat), "--limit", str(args.limit), "--heads", *args.heads]

    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=timeout,
                              preexec_fn=lambda: os.sched_setaffinity(0, allowed[:cores]))
        out, err = done.stdout, done.stderr
    except subprocess.TimeoutExpired as stopped:
        out = stopped.stdout.decode() if isinstance(stopped.stdout, bytes) else stopped.stdout or ""
        err = f"stopped after its {timeout:.0f} s"
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if len(rows) < len(args.heads):
        print(f"  {setting} at {cores} cores: {len(rows)} of {len(args.heads)} heads; "
              f"{err.strip().splitlines()[-1] if err.strip() else ''}", flush=True)
    done = {r["head"] for r in rows}  # a head not reached: "stopped", with the time it had
    return rows + [{"head": h, "setting": setting, "cores": cores, "stopped": timeout}
                   for h in args.heads if h not in done]


def machine() -> str:
    from embedkit.machine import available_cores

    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    quota = ""
    try:
        quota = f", cgroup cpu.max {Path('/sys/fs/cgroup/cpu.max').read_text().strip()!r}"
    except OSError:
        pass
    return (f"{model}; os.cpu_count() {os.cpu_count()}, affinity "
            f"{len(os.sched_getaffinity(0))}, usable (joblib) {available_cores()}{quota}")


def versions() -> str:
    import numpy
    import scipy
    import sklearn
    import torch

    return (f"Python {platform.python_version()}, torch {torch.__version__}, numpy "
            f"{numpy.__version__}, scipy {scipy.__version__}, scikit-learn {sklearn.__version__}")


def table(rows: list[dict], cores_list: list[int]) -> list[str]:
    def cell(r):
        if r and "stopped" in r:
            return f"not done in {r['stopped']:.0f}"
        return f"{r['seconds']:.2f} ({r['cpu']:.1f})" if r else "-"

    def ratio(r, two):
        return (f"{r['seconds'] / two['seconds']:.2f}" if r and two and "seconds" in r
                and "seconds" in two else "-")

    by = {(r["head"], r["setting"], r["cores"]): r for r in rows}
    header = ["head", "setting", *[f"{c} core{'s' if c > 1 else ''}: s (CPU s)" for c in cores_list],
              *[f"{c} / 2 cores" for c in cores_list if c != 2]]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for head in HEADS:
        for setting in dict.fromkeys(r["setting"] for r in rows):
            got = [by.get((head, setting, c)) for c in cores_list]
            if not any(got):
                continue
            two = by.get((head, setting, 2))
            ratios = [ratio(by.get((head, setting, c)), two) for c in cores_list if c != 2]
            lines.append("| " + " | ".join([head, setting, *map(cell, got), *ratios]) + " |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="folder of trec.parquet and trec_minilm.npy (made when missing)")
    parser.add_argument("--cores", default="1,2,all", help="comma-separated; 'all': every core")
    parser.add_argument("--heads", nargs="+", default=list(HEADS), choices=HEADS)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--limit", type=float, default=20.0,
                        help="a fit longer than this stops that head's repeats")
    parser.add_argument("--budget", type=float, default=270.0,
                        help="seconds for all the fits, shared by the processes still to run")
    parser.add_argument("--emulate", type=int, default=None, metavar="N",
                        help="also fit with every pool at N threads on the pinned cores")
    parser.add_argument("--output", type=Path,
                        default=ROOT / "pipelines/benchmarks/results/bench_threads.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args)

    from embedkit.machine import available_cores

    prepare(args.data)
    every = available_cores()
    cores_list = sorted({every if c == "all" else min(int(c), every)
                         for c in args.cores.split(",")})
    load = os.getloadavg()
    started = time.perf_counter()
    rows = []
    # the unmanaged libraries at one core size their pools by the affinity: one thread, as the
    # policy's, so that process is not run twice
    settings = ["policy", "unmanaged"] + ([f"pools of {args.emulate}"] if args.emulate else [])
    runs = [(cores, setting) for cores in cores_list for setting in settings
            if not (cores == 1 and setting == "unmanaged")]
    for n, (cores, setting) in enumerate(runs):
        left = args.budget - (time.perf_counter() - started)
        got = run_child(setting, cores, args, timeout=max(left / (len(runs) - n), 10.0))
        for r in (r for r in got if "seconds" in r):
            print(f"{r['head']:20s} {setting:12s} {cores:3d} cores: {r['seconds']:7.2f} s a fit "
                  f"({r['cpu']:.1f} CPU s, {r['fits']} fits; pools {r['pools']})", flush=True)
        rows += got
    command = "python pipelines/benchmarks/bench_threads.py " + shlex.join(
        argv if argv is not None else sys.argv[1:])
    pools = sorted({(r["setting"], r["cores"], json.dumps(r["pools"])) for r in rows if "pools" in r})
    lines = [
        "# Threads: the search's heads at 1, 2 and every core", "",
        f"Written by `{command}` in {time.perf_counter() - started:.0f} s.", "",
        f"Machine: {machine()}. {versions()}. Load average before the run "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min), after "
        f"{os.getloadavg()[0]:.1f}.", "",
        f"Median wall-clock seconds per fit (the process's CPU seconds in brackets) on "
        f"{next((r['rows'] for r in rows if 'rows' in r), '?')} TREC questions; \"not done in N\": "
        "the process was stopped at its share of the budget before that head's first fit ended "
        "(warm-up included). The last columns divide a time by the 2-core time of the same "
        "setting: more cores are no slower where that is at least 1 at one core and at most 1 "
        "at more.", "",
        *table(rows, cores_list), "",
        "Pools seen by each process (torch intra-op threads, BLAS threads):", "",
        *[f"- {s} at {c} cores: {p}" for s, c, p in pools], ""]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
