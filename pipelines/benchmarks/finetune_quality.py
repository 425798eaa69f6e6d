"""Accuracy and cost of fine-tuning MiniLM end to end (TransformerClassifier) versus frozen
MiniLM features + logistic regression. Run by hand, on CPU:

    PYTHONPATH=. python pipelines/benchmarks/finetune_quality.py cost
    PYTHONPATH=. python pipelines/benchmarks/finetune_quality.py trec --epochs 3
    PYTHONPATH=. python pipelines/benchmarks/finetune_quality.py bbc --train 600 --test 400

* ``trec``: the official TREC-6 split (5,452 train / 500 test).
* ``bbc``: BBC News, a stratified split (optionally subsampled: say so when reporting).
* ``cost``: seconds per epoch per 1,000 documents at max_length 64 and 256 (documents long
  enough to fill max_length), for TransformerClassifier (skorch loop) and, as the peer, a plain
  PyTorch loop over the same model, batches and optimizer; the ratio is what to compare, since
  absolute times depend on the (shared) machine.

Everything runs on ``--threads`` torch threads (default 2). On a machine whose cores are
oversubscribed by other processes, ``--threads 1`` can be several times faster than 2 (thread
synchronisation stalls); the numbers in the issue note say which was used.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score
from sklearn.model_selection import train_test_split

from embedkit.data.datasets import load_dataset
from embedkit.heads.finetune import TransformerClassifier
from embedkit.sequences import masked_pool
from embedkit.storage.resources import load_transformer


def frozen_features(docs: list[str], max_length: int, batch_size: int = 64) -> np.ndarray:
    """Mean-pooled token vectors of the pretrained MiniLM (length-sorted batches)."""
    tokenizer, encoder, _ = load_transformer("all-minilm-l6-v2")
    order = np.argsort([len(d) for d in docs], kind="stable")
    out = np.zeros((len(docs), encoder.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for start in range(0, len(docs), batch_size):
            rows = order[start:start + batch_size]
            batch = tokenizer([docs[i] for i in rows], padding=True, truncation=True,
                              max_length=max_length, return_tensors="pt")
            hidden = encoder(input_ids=batch["input_ids"],
                             attention_mask=batch["attention_mask"]).last_hidden_state
            out[rows] = masked_pool(hidden, batch["attention_mask"].bool(), "mean").numpy()
    return out


def compare(name, train_docs, y_train, test_docs, y_test, max_length, epochs, batch_size, lr,
            head_lr=1e-3):
    t0 = time.perf_counter()
    Xtr = frozen_features(train_docs, max_length)
    Xte = frozen_features(test_docs, max_length)
    logreg = LogisticRegression(max_iter=3000, C=10.0).fit(Xtr, y_train)
    pred = logreg.predict(Xte)
    frozen_s = time.perf_counter() - t0
    frozen_acc = accuracy_score(y_test, pred)
    frozen_f1 = f1_score(y_test, pred, average="macro")
    print(f"[{name}] frozen MiniLM mean + LogisticRegression: acc={frozen_acc:.4f} "
          f"macro-F1={frozen_f1:.4f} wall={frozen_s:.0f}s", flush=True)

    t0 = time.perf_counter()
    clf = TransformerClassifier(fine_tune="full", epochs=epochs, batch_size=batch_size, lr=lr,
                                head_lr=head_lr, max_length=max_length, early_stopping=False,
                                random_state=0, device="cpu", verbose=1)
    clf.fit(train_docs, y_train)
    fit_s = time.perf_counter() - t0
    pred = clf.predict(test_docs)
    tuned_s = time.perf_counter() - t0
    tuned_acc = accuracy_score(y_test, pred)
    tuned_f1 = f1_score(y_test, pred, average="macro")
    print(f"[{name}] fine-tuned MiniLM ({epochs} epochs): acc={tuned_acc:.4f} macro-F1={tuned_f1:.4f} "
          f"wall={tuned_s:.0f}s (fit {fit_s:.0f}s), losses "
          f"{[round(float(h['train_loss']), 4) for h in clf.history_]}", flush=True)
    print(f"[{name}] fine-tuned - frozen accuracy: {tuned_acc - frozen_acc:+.4f}; "
          f"wall-time ratio {tuned_s / frozen_s:.1f}x", flush=True)
    return clf


def trec(args):
    df = load_dataset("trec")
    train, test = df[df.split == "train"], df[df.split == "test"]
    if args.train:
        train = train.sample(n=args.train, random_state=0)
    print(f"TREC-6 official split: {len(train)} train / {len(test)} test, max_length={args.max_length}")
    compare("trec", train.text.tolist(), train.label.to_numpy(), test.text.tolist(),
            test.label.to_numpy(), args.max_length, args.epochs, args.batch_size, args.lr,
            args.head_lr)


def bbc(args):
    df = load_dataset("bbc-news")
    train, test = train_test_split(df, test_size=0.2, stratify=df.label, random_state=0)
    if args.train:
        train = train.groupby("label", group_keys=False).sample(
            frac=min(1.0, args.train / len(train)), random_state=0)
    if args.test:
        test = test.groupby("label", group_keys=False).sample(
            frac=min(1.0, args.test / len(test)), random_state=0)
    print(f"BBC News stratified split (80/20, seed 0; subsampled stratified): {len(train)} train / "
          f"{len(test)} test, max_length={args.max_length}")
    compare("bbc", train.text.tolist(), train.label.to_numpy(), test.text.tolist(),
            test.label.to_numpy(), args.max_length, args.epochs, args.batch_size, args.lr,
            args.head_lr)


def plain_torch_epoch(docs, y, max_length, batch_size, lr) -> float:
    """The peer: one epoch of a hand-written PyTorch loop, same model/batches/optimizer."""
    tokenizer, encoder, _ = load_transformer("all-minilm-l6-v2")
    torch.manual_seed(0)
    head = torch.nn.Linear(encoder.config.hidden_size, int(y.max()) + 1)
    params = list(encoder.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    encoder.train()
    yt = torch.as_tensor(y)
    t0 = time.perf_counter()
    perm = torch.randperm(len(docs), generator=torch.Generator().manual_seed(0)).tolist()
    for start in range(0, len(docs), batch_size):
        rows = perm[start:start + batch_size]
        batch = tokenizer([docs[i] for i in rows], padding=True, truncation=True,
                          max_length=max_length, return_tensors="pt")
        hidden = encoder(input_ids=batch["input_ids"],
                         attention_mask=batch["attention_mask"]).last_hidden_state
        logits = head(masked_pool(hidden, batch["attention_mask"].bool(), "mean"))
        loss = torch.nn.functional.cross_entropy(logits, yt[rows])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return time.perf_counter() - t0


def cost(args):
    df = load_dataset("bbc-news")
    docs = df.text.tolist()[: args.n]  # news articles: every one fills 256 word pieces
    y = (np.arange(len(docs)) % 2).astype(np.int64)
    print(f"cost: {len(docs)} BBC articles, batch_size={args.batch_size}, "
          f"{torch.get_num_threads()} threads, 1 epoch, {args.rounds} interleaved rounds")
    plain_torch_epoch(docs[:16], y[:16], 64, args.batch_size, 5e-5)  # warm-up, not timed
    per_k = 1000 / len(docs)
    for max_length in (64, 256):
        ours, peer = [], []
        for _ in range(args.rounds):  # interleaved, so load changes hit both alike
            clf = TransformerClassifier(fine_tune="full", epochs=1, batch_size=args.batch_size,
                                        max_length=max_length, early_stopping=False, device="cpu")
            ours.append(float(clf.fit(docs, y).history_[0]["dur"]) * per_k)
            peer.append(plain_torch_epoch(docs, y, max_length, args.batch_size, 5e-5) * per_k)
        print(f"max_length={max_length}: TransformerClassifier best {min(ours):.0f} s/epoch/1k docs "
              f"(all {[round(v) for v in ours]}), plain PyTorch loop best {min(peer):.0f} "
              f"(all {[round(v) for v in peer]}), ratio of bests {min(ours) / min(peer):.2f}",
              flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["trec", "bbc", "cost"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--head-lr", type=float, default=1e-3)
    parser.add_argument("--max-length", type=int, default=None)
    parser.add_argument("--train", type=int, default=0, help="subsample the training set")
    parser.add_argument("--test", type=int, default=0, help="subsample the test set (bbc)")
    parser.add_argument("--n", type=int, default=128, help="documents for the cost run")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds for cost")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.max_length is None:
        args.max_length = 64 if args.part == "trec" else 256
    {"trec": trec, "bbc": bbc, "cost": cost}[args.part](args)


if __name__ == "__main__":
    main()
