"""Seconds per fine-tuning epoch of TransformerClassifier at max_length 64, before and after the
fused AdamW update (issue 16 item 4), with TREC accuracy of each, in one run:

    PYTHONPATH=. python pipelines/benchmarks/bench_finetune_epoch.py [--train 1000] [--epochs 2]

Rows, each fitted from the same seed on the same stratified TREC training slice and scored on
the official 500-question test set:

* ``before``: the code path before the change — AdamW's per-parameter for-loop update;
* ``now``: the default (``fused=True`` AdamW on CPU/CUDA);
* ``now, embeddings frozen``: ``fine_tune="last_k", k=6`` (every block trains, the 30k x 384
  word-embedding matrix does not): the registry's ``finetune-short`` choice.

Seconds per epoch come from skorch's history (``dur``), averaged over the epochs; the ratio to
``before`` is what to read, since absolute times depend on the (shared) machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv=None):
    import numpy as np
    import torch

    from embedkit import load_dataset
    from embedkit.data.datasets import stratified_sample
    from embedkit.heads.finetune import TransformerClassifier

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, default=1000, help="training questions (stratified)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    data = load_dataset("trec")
    train = data[data.split == "train"]
    if args.train < len(train):
        train = stratified_sample(train, args.train, seed=0)
    test = data[data.split == "test"]

    class Before(TransformerClassifier):
        """The optimizer as it was: AdamW without the fused kernel."""

        def _optimizer(self):
            settings = super()._optimizer()
            settings.pop("optimizer__fused", None)
            return settings

    variants = {
        "before (AdamW for-loop)": (Before, {}),
        "now (fused AdamW)": (TransformerClassifier, {}),
        "now, embeddings frozen": (TransformerClassifier, {"fine_tune": "last_k", "k": 6}),
    }
    print(f"TREC: {len(train)} training questions, {len(test)} test; max_length 64, "
          f"{args.epochs} epochs, {args.threads} torch threads", flush=True)
    base = None
    for label, (cls, extra) in variants.items():
        params = {"fine_tune": "full", "epochs": args.epochs, "max_length": 64,
                  "random_state": 0, **extra}
        model = cls(**params)
        start = time.perf_counter()
        model.fit(train.text.tolist(), train.label.to_numpy())
        wall = time.perf_counter() - start
        per_epoch = float(np.mean([epoch["dur"] for epoch in model.history_]))
        accuracy = float(np.mean(model.predict(test.text.tolist()) == test.label.to_numpy()))
        base = base or per_epoch
        print(f"{label:<26} {per_epoch:7.1f} s/epoch  {base / per_epoch:5.2f}x before  "
              f"fit {wall:6.1f} s  TREC accuracy {accuracy:.3f}", flush=True)


if __name__ == "__main__":
    main()
