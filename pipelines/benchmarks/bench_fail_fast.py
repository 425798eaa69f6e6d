"""How soon a Pipeline reports a head's bad parameter: before the representation encodes anything.

``Pipeline([TransformerEmbedder(), MLPClassifier(lr=-1)]).fit(600 BBC articles)``: the first
step's ``fit`` validates every embedkit step of the Pipeline first (`embedkit._params`), so the
error comes before MiniLM is loaded or any document encoded. The peer, measured in the same run,
is what the error used to cost: encoding the 600 articles (``fit_transform`` of the first step),
after which the head's own ``fit`` reported it. The machine may be shared: compare the ratio,
not the seconds.

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
    from sklearn.pipeline import Pipeline

    from embedkit import MLPClassifier, TransformerEmbedder, load_dataset
    from embedkit.representations._neural import NeuralEncoder

    torch.set_num_threads(args.threads)
    bbc = load_dataset("bbc-news").head(args.n)
    docs, y = bbc.text.tolist(), bbc.label.tolist()

    NeuralEncoder.forward_counts = counts = collections.Counter()
    pipe = Pipeline([("features", TransformerEmbedder(num_threads=args.threads)),
                     ("head", MLPClassifier(lr=-1))])
    start = time.perf_counter()
    try:
        pipe.fit(docs, y)
    except ValueError as err:
        reported = time.perf_counter() - start
        message = str(err)
    encoded_before = sum(counts.values())

    counts.clear()
    start = time.perf_counter()
    TransformerEmbedder(num_threads=args.threads).fit_transform(docs)  # the work the error skips
    encoding = time.perf_counter() - start
    NeuralEncoder.forward_counts = None

    print(f"error: {message}")
    print(f"reported after {reported:.3f} s, {encoded_before} documents encoded before it")
    print(f"encoding the {args.n} documents (model load included): {encoding:.2f} s, "
          f"{sum(counts.values())} documents")
    print(f"ratio encoding / report: {encoding / reported:.0f}x")


if __name__ == "__main__":
    main()
