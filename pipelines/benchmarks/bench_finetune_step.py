"""One fine-tuning step of the packaged MiniLM on a CPU, split into forward, backward and the
AdamW update, for the choices the fine-tuning head makes (issue 13):

    python pipelines/benchmarks/bench_finetune_step.py [--batch 16] [--tokens 14] [--threads 1]

Rows: every weight trained with the default (for-loop) AdamW, then with the word-embedding
matrix frozen (``TransformerClassifier(fine_tune="last_k", k=6)`` trains every block but not
the embeddings), then the AdamW update alone with ``foreach=True`` and ``fused=True`` over the
trainable weights. A short text's batch is small, so the update of 22M weights is a large share
of a step. Seconds are wall-clock means over ``--repeat`` steps after one warm-up step;
compare them within one run only.
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
    import torch

    from embedkit.storage.resources import load_transformer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=14, help="word pieces per row")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    _, encoder, _ = load_transformer("all-minilm-l6-v2")
    encoder.train()
    head = torch.nn.Linear(encoder.config.hidden_size, 2)
    ids = torch.randint(1000, 20000, (args.batch, args.tokens))
    mask = torch.ones_like(ids)

    def trainable():
        return [p for p in encoder.parameters() if p.requires_grad] + list(head.parameters())

    def steps(label, **adamw):
        optimizer = torch.optim.AdamW(trainable(), lr=1e-5, **adamw)
        times = []
        for _ in range(args.repeat + 1):
            t0 = time.perf_counter()
            loss = head(encoder(input_ids=ids, attention_mask=mask).last_hidden_state.mean(1)).sum()
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            optimizer.step()
            optimizer.zero_grad()
            times.append((t1 - t0, t2 - t1, time.perf_counter() - t2))
        f, b, o = (sum(col) / args.repeat for col in zip(*times[1:], strict=True))
        n = sum(p.numel() for p in trainable())
        print(f"{label:<34} {n / 1e6:5.1f}M trained  forward {f:5.2f} s  backward {b:5.2f} s  "
              f"update {o:5.2f} s  step {f + b + o:5.2f} s", flush=True)

    steps("all weights, AdamW")
    encoder.embeddings.word_embeddings.weight.requires_grad_(False)
    steps("word embeddings frozen, AdamW")
    steps("word embeddings frozen, foreach", foreach=True)
    steps("word embeddings frozen, fused", fused=True)


if __name__ == "__main__":
    main()
