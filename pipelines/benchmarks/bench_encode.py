"""Encoding throughput on CPU: embedkit's TransformerEmbedder vs sentence-transformers.

Same model folder (the packaged all-MiniLM-L6-v2), same texts, same thread count, same
truncation (256 tokens): TREC-6 questions and BBC News articles. The peer runs
``SentenceTransformer.encode`` at several batch sizes and its best one is the reference;
embedkit runs with the defaults a user gets (``TransformerEmbedder()``: ONNX Runtime on CPU when
the onnx extra is installed), plus a ``backend="torch"`` row. ``--extra`` adds PyTorch without the
oneDNN routing of the linear layers and the opt-in ``dtype="int8"``; ``--bf16`` adds
``dtype="bfloat16"``; ``--batches 128/4096`` adds both backends at other batch settings
(``batch_size`` / ``max_tokens_per_batch``). Rounds are interleaved and the fastest round of each
contender is kept, because the machine may be shared: only the ratios measured in one run mean
anything.

    PYTHONPATH=. python pipelines/benchmarks/bench_encode.py --trec 400 --bbc 64 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def _embedders(extra: bool, bf16: bool, batches=()) -> dict:
    from embedkit import TransformerEmbedder
    from embedkit.representations import encoders

    out = {}
    start = time.perf_counter()
    out["embedkit"] = TransformerEmbedder().fit(["x"])  # the defaults a user gets
    print(f"embedkit defaults: backend_={out['embedkit'].backend_}, fit "
          f"{time.perf_counter() - start:.1f} s (exports to ONNX on the first run only)")
    out["embedkit backend=torch"] = TransformerEmbedder(backend="torch").fit(["x"])
    if extra:
        out["embedkit int8"] = TransformerEmbedder(dtype="int8").fit(["x"])
        before = os.environ.get("EMBEDKIT_ONEDNN")
        os.environ["EMBEDKIT_ONEDNN"] = "0"
        encoders.load_encoder.cache_clear()  # load a second, plain copy of the weights
        try:
            out["embedkit torch, no oneDNN"] = TransformerEmbedder(backend="torch").fit(["x"])
        finally:
            if before is None:
                os.environ.pop("EMBEDKIT_ONEDNN")
            else:
                os.environ["EMBEDKIT_ONEDNN"] = before
    for rows, tokens in batches:  # other batch settings than the defaults, both backends
        for backend in ("auto", "torch"):
            out[f"embedkit {backend} {rows}/{tokens}"] = TransformerEmbedder(
                backend=backend, batch_size=rows, max_tokens_per_batch=tokens).fit(["x"])
    if bf16:  # slow where the CPU has no bf16 units (lscpu | grep bf16)
        out["embedkit bfloat16"] = TransformerEmbedder(dtype="bfloat16").fit(["x"])
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trec", type=int, default=400, help="TREC questions to encode")
    parser.add_argument("--bbc", type=int, default=64, help="BBC articles to encode")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer-batches", default="16,32,64,128",
                        help="batch sizes tried for the peer (its best one is the reference)")
    parser.add_argument("--extra", action="store_true",
                        help="also time torch without oneDNN, and dtype='int8'")
    parser.add_argument("--bf16", action="store_true", help="also time dtype='bfloat16'")
    parser.add_argument("--batches", nargs="*", default=[], metavar="ROWS/TOKENS",
                        help="also time embedkit (both backends) at these batch_size/"
                             "max_tokens_per_batch settings, e.g. 128/4096 16/1024")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from sentence_transformers import SentenceTransformer

    from embedkit import load_dataset
    from embedkit.storage.resources import resource_path

    path = str(resource_path("all-minilm-l6-v2"))
    peer = SentenceTransformer(path, device="cpu")
    peer.max_seq_length = 256
    try:
        batch_settings = [tuple(int(v) for v in b.split("/")) for b in args.batches]
    except ValueError:
        parser.error(f"--batches {args.batches}: expected ROWS/TOKENS pairs such as 128/4096")
    ours = _embedders(args.extra, args.bf16, batch_settings)
    rng = np.random.default_rng(0)
    sets = {
        "trec": list(rng.choice(load_dataset("trec").text.to_numpy(), args.trec, replace=False)),
        "bbc": list(rng.choice(load_dataset("bbc-news").text.to_numpy(), args.bbc, replace=False)),
    }
    batches = [int(b) for b in args.peer_batches.split(",")]
    print(f"threads={torch.get_num_threads()}  max_length=256  model={path}")
    summary = []
    for name, texts in sets.items():
        contenders = {f"peer bs={b}": (lambda t=texts, b=b: peer.encode(t, batch_size=b))
                      for b in batches}
        for label, emb in ours.items():
            contenders[label] = lambda t=texts, e=emb: e.transform(t)
        best = dict.fromkeys(contenders, float("inf"))
        outs = {k: f() for k, f in contenders.items()}  # warm-up, and the vectors compared
        for _ in range(args.rounds):
            for k, f in contenders.items():
                start = time.perf_counter()
                f()
                best[k] = min(best[k], time.perf_counter() - start)
        peer_time, peer_name = min((v, k) for k, v in best.items() if k.startswith("peer"))
        ref = outs[peer_name]
        print(f"\n{name}: {len(texts)} texts, {ours['embedkit'].n_truncated_} truncated at "
              f"256 tokens; peer best: {peer_name}")
        for k, v in best.items():
            line = f"  {k:26s} {v:7.3f} s  {len(texts) / v:8.1f} texts/s  {peer_time / v:5.2f}x"
            if not k.startswith("peer"):
                line += f"  min cosine to peer {_cosine(outs[k], ref).min():.6f}"
            print(line)
        ratio = peer_time / best["embedkit"]
        summary.append(f"{name}: embedkit defaults {ratio:.2f}x the peer's best ({peer_name}), "
                       f"backend=torch {peer_time / best['embedkit backend=torch']:.2f}x, min cosine "
                       f"{_cosine(outs['embedkit'], ref).min():.6f}")
    print("\n" + "\n".join(summary))


if __name__ == "__main__":
    main()
