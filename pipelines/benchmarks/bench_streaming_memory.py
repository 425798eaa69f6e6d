"""Peak memory of `embedkit.streaming.embed_file`: chunked streaming versus one chunk.

Builds a synthetic-size corpus by repeating the real TREC questions (5,952 texts, each copy
tagged with its copy number so documents are not byte-identical) to ``--docs`` rows in a CSV,
fits ``TfidfEmbedder(n_components=100)`` (LSA) on the TREC training split, then embeds the
CSV into parquet twice, each run in a fresh subprocess so peak RSS (``ru_maxrss``) belongs to
that run alone:

* ``chunked``: ``embed_file(..., chunk_size=--chunk)`` (the streaming engine);
* ``one-chunk``: the same call with ``chunk_size >= n_docs`` (read all, encode all, write all).

Prints peak RSS, the RSS growth over the process after imports and fit, docs/s, and ratios.

Usage::

    PYTHONPATH=. python pipelines/benchmarks/bench_streaming_memory.py --docs 1000000 --chunk 20000
    PYTHONPATH=. python pipelines/benchmarks/bench_streaming_memory.py --docs 200000   # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def run_one(csv: str, out: str, chunk: int) -> None:
    """Child process: fit, embed, print a JSON line."""
    from embedkit import TfidfEmbedder, load_dataset
    from embedkit.streaming import embed_file

    trec = load_dataset("trec")
    rep = TfidfEmbedder(n_components=100).fit(trec.text[trec.split == "train"])
    import psutil

    base = psutil.Process().memory_info().rss / 2**20
    t = time.perf_counter()
    summary = embed_file(rep, csv, out, keep="id", chunk_size=chunk)
    seconds = time.perf_counter() - t
    print(json.dumps({"rows": summary["rows"], "chunks": summary["chunks"], "seconds": seconds,
                      "peak_mb": _rss_mb(), "base_mb": base}))


def make_corpus(path: Path, n_docs: int) -> None:
    import pandas as pd

    from embedkit import load_dataset

    texts = load_dataset("trec").text.to_numpy()
    with open(path, "w") as f:
        f.write("id,text\n")
        step = 100_000
        for start in range(0, n_docs, step):
            ids = np.arange(start, min(start + step, n_docs))
            copy = ids // len(texts)
            docs = [f"{texts[i % len(texts)]} copy{c}" for i, c in zip(ids, copy, strict=True)]
            pd.DataFrame({"id": ids, "text": docs}).to_csv(f, header=False, index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=20_000)
    parser.add_argument("--child", nargs=3, metavar=("CSV", "OUT", "CHUNK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_one(args.child[0], args.child[1], int(args.child[2]))
        return

    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "corpus.csv"
        t = time.perf_counter()
        make_corpus(csv, args.docs)
        print(f"corpus: {args.docs:,} docs (TREC x {args.docs / 5952:.0f}), "
              f"{csv.stat().st_size / 2**20:.0f} MiB CSV, built in {time.perf_counter() - t:.0f}s")
        results = {}
        for name, chunk in [("chunked", args.chunk), ("one-chunk", args.docs)]:
            env = dict(os.environ, PYTHONPATH=str(ROOT))
            proc = subprocess.run([sys.executable, __file__, "--child", str(csv),
                                   str(Path(tmp) / f"{name}.parquet"), str(chunk)],
                                  capture_output=True, text=True, env=env, check=True)
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            results[name] = res
            print(f"{name:>9}: chunk_size={chunk:>9,}  chunks={res['chunks']:>3}  "
                  f"peak RSS {res['peak_mb']:7.0f} MiB (+{res['peak_mb'] - res['base_mb']:6.0f} "
                  f"over imports+fit)  {res['rows'] / res['seconds']:9,.0f} docs/s")
        c, o = results["chunked"], results["one-chunk"]
        print(f"ratio one-chunk / chunked: peak RSS x{o['peak_mb'] / c['peak_mb']:.1f}, "
              f"growth x{(o['peak_mb'] - o['base_mb']) / max(c['peak_mb'] - c['base_mb'], 1):.1f}, "
              f"time x{o['seconds'] / c['seconds']:.2f}")


if __name__ == "__main__":
    main()
