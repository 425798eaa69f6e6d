"""Encoding throughput on CPU: embedkit's TransformerEmbedder vs sentence-transformers.

Same model (the packaged all-MiniLM-L6-v2), same texts, same thread count, same truncation
(256 tokens): TREC-6 questions and BBC News articles. The peer runs with its default
``encode`` settings and with the best batch size of a small sweep; embedkit runs with its
defaults. Rounds are interleaved and the fastest round of each contender is kept, because the
machine may be shared: only the ratios measured in one run mean anything.

    PYTHONPATH=. python pipelines/benchmarks/bench_encode.py --trec 400 --bbc 120 --threads 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trec", type=int, default=400, help="TREC questions to encode")
    parser.add_argument("--bbc", type=int, default=120, help="BBC articles to encode")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer-batches", default="16,32,64,128",
                        help="batch sizes tried for the tuned peer")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from sentence_transformers import SentenceTransformer

    from embedkit import TransformerEmbedder, load_dataset
    from embedkit.resources import resource_path

    path = str(resource_path("all-minilm-l6-v2"))
    peer = SentenceTransformer(path, device="cpu")
    peer.max_seq_length = 256
    ours = TransformerEmbedder(max_length=256, device="cpu", num_threads=args.threads).fit(["x"])
    # not a default: bfloat16 trades exactness (cosine ~0.999) for speed on CPUs with bf16 units
    ours_bf16 = TransformerEmbedder(max_length=256, device="cpu", num_threads=args.threads,
                                    dtype="bfloat16").fit(["x"])
    rng = np.random.default_rng(0)
    trec = load_dataset("trec").text.to_numpy()
    bbc = load_dataset("bbc-news").text.to_numpy()
    sets = {
        "trec": list(rng.choice(trec, args.trec, replace=False)),
        "bbc": list(rng.choice(bbc, args.bbc, replace=False)),
    }
    batches = [int(b) for b in args.peer_batches.split(",")]
    print(f"torch threads={torch.get_num_threads()}  model={path}")
    for name, texts in sets.items():
        contenders = {"peer default (bs=32)": lambda t=texts: peer.encode(t)}
        for b in batches:
            if b != 32:
                contenders[f"peer bs={b}"] = lambda t=texts, b=b: peer.encode(t, batch_size=b)
        contenders["embedkit"] = lambda t=texts: ours.transform(t)
        contenders["embedkit bfloat16"] = lambda t=texts: ours_bf16.transform(t)
        best = {k: float("inf") for k in contenders}
        outs = {}
        for k, f in contenders.items():  # warm-up
            outs[k] = f()
        for _ in range(args.rounds):
            for k, f in contenders.items():
                start = time.perf_counter()
                f()
                best[k] = min(best[k], time.perf_counter() - start)
        ref = outs["peer default (bs=32)"]
        mine = outs["embedkit"]
        cos = (mine * ref).sum(1) / np.linalg.norm(mine, axis=1) / np.linalg.norm(ref, axis=1)
        peer_best = min(v for k, v in best.items() if k.startswith("peer"))
        peer_best_name = min((v, k) for k, v in best.items() if k.startswith("peer"))[1]
        print(f"\n{name}: {len(texts)} texts, {ours.n_truncated_} truncated at 256 tokens")
        for k, v in best.items():
            print(f"  {k:22s} {v:7.3f} s  {len(texts) / v:8.1f} texts/s")
        print(f"  ratio embedkit vs peer default: {best['peer default (bs=32)'] / best['embedkit']:.2f}x")
        print(f"  ratio embedkit vs peer best ({peer_best_name}): {peer_best / best['embedkit']:.2f}x")
        print(f"  cosine to peer vectors: min {cos.min():.6f}  mean {cos.mean():.6f}")
        low = outs["embedkit bfloat16"]
        cos16 = (low * ref).sum(1) / np.linalg.norm(low, axis=1) / np.linalg.norm(ref, axis=1)
        print(f"  embedkit bfloat16 vs peer best: {peer_best / best['embedkit bfloat16']:.2f}x, "
              f"cosine to peer vectors: min {cos16.min():.6f}  mean {cos16.mean():.6f}")


if __name__ == "__main__":
    main()
