"""A fine-tuned pick's recipe refit on every training document, all its steps, scored on the
held-out rows of `tune_budget.py`'s split: what `embedkit tune`'s finish builds when its refit's
training is not cut (results/tune_budget.md, the section on the refit's cut).

    python pipelines/benchmarks/refit_full.py --dataset nyt-editorials --head finetune-mpnet \
        --set epochs=1 k=6 max_length=48 early_stopping=False random_state=2

``--set`` takes the head's parameters that the pick's saved model sets apart from the registry's
(a recipe of epochs trains every row: `early_stopping=False`).
Prints the training steps, the seconds of the fit and the held-out accuracy.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--head", required=True, help="a registry head that fine-tunes")
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE")
    args = parser.parse_args(argv)

    from embedkit.configure import configure, parse_params
    from embedkit.registry import HEADS
    from pipelines.benchmarks.tune_budget import sides

    head = configure(HEADS[args.head].factory(), {p.name: p.value for p in parse_params(args.set)},
                     args.head)
    train, test, _, label = sides(args.dataset)
    began = time.monotonic()
    head.fit(train["text"].tolist(), train["label"].to_numpy())
    took = time.monotonic() - began
    right = np.mean(head.predict(test["text"].tolist()) == test["label"].to_numpy())
    print(f"{label}: {args.head} ({', '.join(args.set)}) on {len(train):,} documents: "
          f"{head.n_steps_} steps in {took:.0f} s; held out {right:.3f} on {len(test):,} rows")


if __name__ == "__main__":
    main()
