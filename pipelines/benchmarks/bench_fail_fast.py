"""How soon a pipeline embedkit builds reports a head's bad parameter: before the
representation encodes anything.

``make_pipeline("minilm", "mlp", ["head.lr=-1"])`` (what ``compare -p head.lr=-1`` and tune build
on) checks every step as it builds (`embedkit._params.validate_steps`), so the error comes before
MiniLM is loaded or any document encoded. The peer, measured in the same run, is what the error
costs in a ``Pipeline`` of the user's own, where the head checks itself at its own ``fit``: after
encoding the 600 articles (``fit_transform`` of the first step). The machine may be shared:
compare the ratio, not the seconds.

    PYTHONPATH=. python pipelines/benchmarks/bench_fail_fast.py --n 600 --threads 2
"""

from __future__ import annotations

import argparse
import collections
import time


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=600, help="BBC News articles")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    import torch

    from embedkit import TransformerEmbedder, load_dataset
    from embedkit.configure import make_pipeline
    from embedkit.representations._neural import NeuralEncoder

    torch.set_num_threads(args.threads)
    bbc = load_dataset("bbc-news").head(args.n)
    docs, y = bbc.text.tolist(), bbc.label.tolist()

    NeuralEncoder.forward_counts = counts = collections.Counter()
    start = time.perf_counter()
    try:
        make_pipeline("minilm", "mlp", ["head.lr=-1", f"features.num_threads={args.threads}"]).fit(docs, y)
    except ValueError as err:
        reported = time.perf_counter() - start
        message = str(err)
    encoded_before = sum(counts.values())

    counts.clear()
    start = time.perf_counter()
    # what a Pipeline of one's own pays before its head checks itself
    TransformerEmbedder(num_threads=args.threads).fit_transform(docs)
    encoding = time.perf_counter() - start
    NeuralEncoder.forward_counts = None

    print(f"error: {message}")
    print(f"reported after {reported:.3f} s, {encoded_before} documents encoded before it")
    print(f"encoding the {args.n} documents (model load included): {encoding:.2f} s, "
          f"{sum(counts.values())} documents")
    print(f"ratio encoding / report: {encoding / reported:.0f}x")


if __name__ == "__main__":
    main()
