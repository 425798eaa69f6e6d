"""A large set of short labelled texts for `embedkit tune` at scale: the texts of eight built-in
sets (each cut to 200 characters, labelled by the set it came from), repeated with a seeded 15%
of their words dropped until there are ``--rows``, shuffled.

    python pipelines/benchmarks/make_short_texts.py --rows 1000000 --output short-texts-1m.csv
    embedkit tune -f short-texts-1m.csv --budget 2m -o tune-1m     # results/tune_budget.md
    python pipelines/benchmarks/make_short_texts.py --rows 1000000 --output train.csv \\
        --test-output test.csv                                     # results/tune_large.md

``--test-output`` holds a share of the built-in texts out (``--test-share``, 10% by default,
drawn with the seed): the training file is made of the others only, each held-out text is
written once (its words dropped the same way) to the test file, so no test row is a copy of a
training row with other words dropped. 1,000,000 rows average about 80 characters in eight
classes (a 98 MB CSV).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

SETS = ("rotten-tomatoes", "trec", "disaster-tweets", "vader-tweets", "nyt-editorials",
        "election-tweets", "sms-spam", "wordnet-glosses")


def _dropped(words: pd.Series, rng: np.random.Generator) -> list[str]:
    return [" ".join(w for w in ws if rng.random() > 0.15) or ws[0] for ws in words]


def make(rows: int, seed: int = 0, test_share: float = 0.0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(train, test)``: ``rows`` training rows from the built-in texts not held out, and each
    held-out text once (``test_share`` of them; none where it is 0)."""
    from embedkit import load_dataset

    base = pd.concat([pd.DataFrame({"text": load_dataset(name)["text"].astype(str).str.slice(0, 200),
                                    "label": name}) for name in SETS], ignore_index=True)
    base = base[base["text"].str.split().str.len() > 0].reset_index(drop=True)
    rng = np.random.default_rng(seed)
    # no draw where nothing is held out: the file is the one this script wrote before it could
    held = rng.random(len(base)) < test_share if test_share else np.zeros(len(base), bool)
    kept, test = base[~held], base[held]
    test = pd.DataFrame({"text": _dropped(test["text"].str.split(), rng), "label": test["label"]})
    words = kept["text"].str.split()
    out, n = [], 0
    while n < rows:
        out.append(pd.DataFrame({"text": _dropped(words, rng), "label": kept["label"]}))
        n += len(kept)
    train = pd.concat(out, ignore_index=True).iloc[:rows].sample(frac=1, random_state=seed)
    return train, test.sample(frac=1, random_state=seed)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--output", type=Path, default=Path("short-texts-1m.csv"))
    parser.add_argument("--test-output", type=Path, default=None,
                        help="write the held-out texts here (the training file then has none of them)")
    parser.add_argument("--test-share", type=float, default=0.1,
                        help="the share of the built-in texts held out with --test-output")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    train, test = make(args.rows, args.seed, args.test_share if args.test_output else 0.0)
    train.to_csv(args.output, index=False)
    print(f"wrote {len(train):,} rows to {args.output}")
    if args.test_output is not None:
        test.to_csv(args.test_output, index=False)
        print(f"wrote {len(test):,} held-out rows to {args.test_output}")


if __name__ == "__main__":
    main()
