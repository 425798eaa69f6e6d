"""A large set of short labelled texts for `embedkit tune` at scale: the texts of eight built-in
sets (each cut to 200 characters, labelled by the set it came from), repeated with a seeded 15%
of their words dropped until there are ``--rows``, shuffled.

    python pipelines/benchmarks/make_short_texts.py --rows 1000000 --output short-texts-1m.csv
    embedkit tune -f short-texts-1m.csv --budget 2m -o tune-1m     # results/tune_budget.md

1,000,000 rows average about 80 characters in eight classes (a 62 MB CSV).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

SETS = ("rotten-tomatoes", "trec", "disaster-tweets", "vader-tweets", "nyt-editorials",
        "election-tweets", "sms-spam", "wordnet-glosses")


def make(rows: int, seed: int = 0) -> pd.DataFrame:
    from embedkit import load_dataset

    base = pd.concat([pd.DataFrame({"text": load_dataset(name)["text"].astype(str).str.slice(0, 200),
                                    "label": name}) for name in SETS], ignore_index=True)
    rng = np.random.default_rng(seed)
    words = base["text"].str.split()
    out, n = [], 0
    while n < rows:
        kept = [" ".join(w for w in ws if rng.random() > 0.15) or ws[0] for ws in words]
        out.append(pd.DataFrame({"text": kept, "label": base["label"]}))
        n += len(base)
    return pd.concat(out, ignore_index=True).iloc[:rows].sample(frac=1, random_state=seed)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--output", type=Path, default=Path("short-texts-1m.csv"))
    args = parser.parse_args(argv)
    make(args.rows).to_csv(args.output, index=False)
    print(f"wrote {args.rows:,} rows to {args.output}")


if __name__ == "__main__":
    main()
