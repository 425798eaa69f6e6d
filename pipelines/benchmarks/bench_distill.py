"""Distilled static MiniLM (``minilm-static``) against MiniLM itself: speed, cost, accuracy.

Three measurements in one run, on one machine (timings mean something only as ratios within
the run; say when the machine was shared):

1. **one-time distillation**: ``DistilledEmbedder().fit`` (the whole vocabulary, PCA 256,
   SIF 1e-4) in an empty temporary cache folder: model load, every token through the encoder,
   PCA, the write; then a second fit, which reads the cache;
2. **documents per second**: ``DistilledEmbedder().transform`` against
   ``TransformerEmbedder(normalize=True, max_length=256)`` (the registry's ``minilm``: the
   packaged all-MiniLM-L6-v2, ONNX Runtime on CPU when installed) on TREC questions (short)
   and BBC News articles (long), both with ``--threads`` threads (torch / ONNX Runtime
   intra-op threads for MiniLM, the tokenizer's Rayon pool for the static model); fitted
   before timing, fastest of ``--rounds`` rounds;
3. **accuracy**: the registry's ``logreg`` head (`embedkit.heads.LogisticRegressionHead`) on
   ``minilm-static``, ``glove`` and ``minilm``, beside the accuracy suite's plain
   ``GloVe-mean + LR`` and ``MiniLM + LR`` (sentence-transformers) baselines, on the suite's
   splits (`accuracy_suite.split`: official train/test, else stratified 80/20 seed 0).

    python pipelines/benchmarks/bench_distill.py                 # everything
    python pipelines/benchmarks/bench_distill.py --quick         # a smoke run
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python pipelines/benchmarks/bench_distill.py \
        --skip-distill --skip-speed --no-plain --datasets trec   # accuracy alone, one dataset

On a busy machine run the accuracy part with one BLAS thread (as above): the logreg head's
inner cross-validation with two BLAS threads per process on oversubscribed cores ran several
times slower (TREC: 16 minutes for the minilm-static row, against 4 for it and the glove row
with one thread).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import accuracy_suite as suite  # noqa: E402  (the suite's split and scoring, not a copy)

DATASETS = ("trec", "sms-spam", "disaster-tweets", "rotten-tomatoes")
REGISTRY_ROWS = ("minilm-static", "glove", "minilm")


def distillation_cost() -> dict:
    """Seconds of a cold ``fit`` (empty cache folder) and of the next, cached one."""
    from embedkit import DistilledEmbedder

    before = os.environ.get("EMBEDKIT_HOME")
    with tempfile.TemporaryDirectory() as home:
        os.environ["EMBEDKIT_HOME"] = home
        try:
            start = time.perf_counter()
            cold = DistilledEmbedder().fit([])
            cold_s = time.perf_counter() - start
            start = time.perf_counter()
            DistilledEmbedder().fit([])
            warm_s = time.perf_counter() - start
        finally:
            if before is None:
                os.environ.pop("EMBEDKIT_HOME")
            else:
                os.environ["EMBEDKIT_HOME"] = before
    return {"cold_s": cold_s, "cached_s": warm_s, "tokens": cold.n_distilled_, "dim": cold.dim_}


def speed(texts: dict[str, list[str]], minilm_docs: dict[str, int], threads: int,
          rounds: int) -> list[dict]:
    """Documents per second of each embedder on each corpus (fastest round)."""
    from embedkit import DistilledEmbedder, TransformerEmbedder

    minilm = TransformerEmbedder(normalize=True, max_length=256, num_threads=threads).fit([])
    static = DistilledEmbedder().fit([])
    rows = []
    for corpus, docs in texts.items():
        subsets = {"minilm-static": docs, f"minilm ({minilm.backend_})": docs[:minilm_docs[corpus]]}
        best = {name: float("inf") for name in subsets}
        for _ in range(rounds):  # interleaved: a burst of load hits both
            for name, part in subsets.items():
                model = static if name == "minilm-static" else minilm
                start = time.perf_counter()
                model.transform(part)
                best[name] = min(best[name], time.perf_counter() - start)
        rate = {name: len(subsets[name]) / best[name] for name in subsets}
        static_rate = rate.pop("minilm-static")
        (name, minilm_rate), = rate.items()
        tokens = sum(len(t) for t in static._loaded()[1].encode_batch_fast(
            docs[:200], add_special_tokens=False)) / min(len(docs), 200)
        rows.append({"corpus": corpus, "docs (static / minilm)":
                     f"{len(docs)} / {len(subsets[name])}", "word pieces / doc": round(tokens),
                     "minilm-static docs/s": round(static_rate), f"{name} docs/s": round(minilm_rate),
                     "ratio": round(static_rate / minilm_rate, 1)})
    return rows


def accuracy(datasets, quick: bool, plain: bool = True) -> list[dict]:
    from embedkit.data.datasets import load_dataset

    rows = []
    for name in datasets:
        train, test, protocol = suite.split(load_dataset(name), quick)
        meta = {"dataset": name, "train / test": f"{len(train)} / {len(test)}", "split": protocol}
        for rep in REGISTRY_ROWS:
            for _, scores in suite.score_heads(rep, ["logreg"], train, test):
                rows.append({**meta, "pipeline": f"{rep} + logreg", **scores})
                print(f"  {name:>16} {rep + ' + logreg':<24} acc {scores['accuracy']:.3f}", flush=True)
        for base in (suite.GLOVE, suite.MINILM) if plain else ():
            scores = suite.score_pipeline(suite.baselines()[base], train, test)
            rows.append({**meta, "pipeline": base, **scores})
            print(f"  {name:>16} {base:<24} acc {scores['accuracy']:.3f}", flush=True)
    return rows


def main(argv=None) -> None:
    import pandas as pd

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--minilm-trec", type=int, default=1000,
                        help="TREC questions MiniLM encodes per round (the static model: all)")
    parser.add_argument("--minilm-bbc", type=int, default=200,
                        help="BBC articles MiniLM encodes per round (the static model: all)")
    parser.add_argument("--quick", action="store_true",
                        help="small slices: 300 / 50 documents for speed, the suite's quick split")
    parser.add_argument("--skip-distill", action="store_true",
                        help="leave out the cold distillation (a minute or more)")
    parser.add_argument("--skip-speed", action="store_true", help="leave out the docs/s part")
    parser.add_argument("--no-plain", action="store_true",
                        help="leave out the suite's plain GloVe-mean / MiniLM + LR baselines (the "
                             "registry's glove / minilm + logreg rows stay)")
    parser.add_argument("--output", default=None, help="write the tables as markdown here")
    args = parser.parse_args(argv)
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)  # the tokenizer's pool, before it starts

    from embedkit.data.datasets import load_dataset

    print(f"cores: {os.cpu_count()}, threads: {args.threads}, load average: "
          f"{os.getloadavg()[0]:.1f} (a shared machine makes every timing noisy)", flush=True)
    parts = []
    if not args.skip_distill:
        cost = distillation_cost()
        parts.append(("One-time distillation", pd.DataFrame([{
            "tokens distilled": cost["tokens"], "dims": cost["dim"],
            "cold fit s": round(cost["cold_s"], 1), "cached fit s": round(cost["cached_s"], 2)}])))
        print(parts[-1][1].to_string(index=False), flush=True)

    if not args.skip_speed:
        trec = load_dataset("trec").text.tolist()
        bbc = load_dataset("bbc-news").text.tolist()
        n_trec, n_bbc = (300, 50) if args.quick else (len(trec), len(bbc))
        texts = {"TREC questions": trec[:n_trec], "BBC News articles": bbc[:n_bbc]}
        minilm_docs = {"TREC questions": min(args.minilm_trec, n_trec),
                       "BBC News articles": min(args.minilm_bbc, n_bbc)}
        parts.append(("Documents per second", pd.DataFrame(
            speed(texts, minilm_docs, args.threads, args.rounds))))
        print(parts[-1][1].to_string(index=False), flush=True)

    acc = pd.DataFrame(accuracy(args.datasets, args.quick, plain=not args.no_plain))
    table = acc.pivot(index="pipeline", columns="dataset", values="accuracy")[list(args.datasets)]
    table = (table * 100).round(1)
    table["mean"] = table.mean(axis=1).round(1)
    order = ["minilm-static + logreg", "glove + logreg", "minilm + logreg", suite.GLOVE, suite.MINILM]
    table = table.loc[[name for name in order if name in table.index]]
    parts.append(("Accuracy (%), logreg head unless plain", table.reset_index()))
    print(parts[-1][1].to_string(index=False), flush=True)
    if args.output:
        lines = [(f"cores {os.cpu_count()}, threads {args.threads}; datasets split as the "
                  "accuracy suite splits them")]
        for title, frame in parts:
            lines += ["", f"### {title}", "", frame.to_markdown(index=False)]
        Path(args.output).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
