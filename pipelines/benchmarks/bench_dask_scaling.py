"""Throughput of distributed feature extraction: 1 vs 2 (vs N) Dask workers, against one process.

Repeats the real TREC questions to ``--docs`` documents, fits
``TfidfEmbedder(n_components=100)`` (LSA) once on the TREC training split, then for each worker
count starts a ``LocalCluster(n_workers=k, processes=True, threads_per_worker=1)`` and runs
``write_parquet(extract_features(rep, dd.read_parquet(corpus), keep="id"), folder)`` (read,
encode and write parquet by partition). The peer is the same representation in this one
process: ``pd.read_parquet``, ``rep.transform`` over the whole column, ``DataFrame.to_parquet``,
once with its default threads (BLAS and arrow on every core) and once limited to one thread, as
each Dask worker here runs. Each configuration is timed ``--repeat`` times and the best run is kept
(the model broadcast and the worker warm-up are inside the timing).

Usage::

    PYTHONPATH=. python pipelines/benchmarks/bench_dask_scaling.py --docs 200000 --workers 1 2
    # against a real cluster (workers must import embedkit):
    PYTHONPATH=. python pipelines/benchmarks/bench_dask_scaling.py --scheduler tcp://HOST:8786

On a shared machine the absolute numbers are noisy; read the ratios.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def corpus(n_docs: int) -> pd.DataFrame:
    from embedkit import load_dataset

    texts = load_dataset("trec").text.to_numpy()
    ids = np.arange(n_docs)
    return pd.DataFrame({"id": ids, "text": texts[ids % len(texts)]})


def timed(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--scheduler", default=None, help="address of an existing cluster")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from embedkit import TfidfEmbedder, load_dataset
    from embedkit.distributed import extract_features, write_parquet

    trec = load_dataset("trec")
    rep = TfidfEmbedder(n_components=100).fit(trec.text[trec.split == "train"])
    df = corpus(args.docs)
    tmp = Path(tempfile.mkdtemp())

    # the corpus lives in parquet files that the workers read themselves, as on a cluster
    # with shared storage (a pandas frame embedded in the graph would travel via the scheduler)
    dd.from_pandas(df, npartitions=args.partitions).to_parquet(tmp / "corpus",
                                                               compute_kwargs={"scheduler": "sync"})

    def local():
        df = pd.read_parquet(tmp / "corpus")
        X = rep.transform(df.text)
        out = pd.DataFrame(X, columns=rep.get_feature_names_out())
        out.insert(0, "id", df.id.to_numpy())
        out.to_parquet(tmp / "local.parquet")

    import pyarrow as pa
    from threadpoolctl import threadpool_limits

    base = timed(local, args.repeat)
    cpus = pa.cpu_count()
    pa.set_cpu_count(1)
    with threadpool_limits(1):  # as a Dask worker runs (Dask sets OMP_NUM_THREADS=1 there)
        single = timed(local, args.repeat)
    pa.set_cpu_count(cpus)
    print(f"{args.docs:,} docs, TfidfEmbedder(n_components=100), {args.partitions} partitions")
    print(f"{'one process (peer)':>22}: {args.docs / base:9,.0f} docs/s  (1.00)  "
          "BLAS and arrow use every core")
    print(f"{'one process, 1 thread':>22}: {args.docs / single:9,.0f} docs/s  "
          f"({base / single:.2f} x peer)")

    def distributed(client):
        ddf = dd.read_parquet(tmp / "corpus")

        def run():
            feats = extract_features(rep, ddf, keep="id", client=client)
            summary = client.compute(write_parquet(feats, tmp / "dist", overwrite=True,
                                                   compute=False)).result()
            assert sum(summary["rows"]) == len(df)
        return timed(run, args.repeat)

    configs = [("scheduler", args.scheduler)] if args.scheduler else [("local", k) for k in args.workers]
    results = {}
    for kind, value in configs:
        if kind == "scheduler":
            with Client(value) as client:
                n = len(client.scheduler_info()["workers"])
                seconds = distributed(client)
                label = f"{n} remote workers"
        else:
            with LocalCluster(n_workers=value, processes=True, threads_per_worker=1,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                client.wait_for_workers(value)
                seconds = distributed(client)
                label = f"{value} local worker{'s' if value > 1 else ''}"
        results[label] = seconds
        print(f"{label:>22}: {args.docs / seconds:9,.0f} docs/s  ({base / seconds:.2f} x peer)")
    labels = list(results)
    if len(labels) > 1:
        print(f"speed-up {labels[-1]} vs {labels[0]}: x{results[labels[0]] / results[labels[-1]]:.2f}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
