"""Write the course notebooks from the cell lists below and execute them in place.

    python notebooks/build.py            # write + execute all (outputs saved in the .ipynb)
    python notebooks/build.py 02         # only notebooks whose name starts with 02

Edit the cells here, not in the .ipynb files, so the notebooks stay reviewable as code.
Set EMBEDKIT_QUICK=1 to execute on small slices (what CI does with nbmake).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).parent

SETUP = """\
import os
import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline, Pipeline
import embedkit
from embedkit import load_dataset

QUICK = os.environ.get("EMBEDKIT_QUICK", "") not in ("", "0")  # CI runs the notebooks small
pd.set_option("display.precision", 3)"""

NOTEBOOKS = {
    "01_representations": [
        "# 1. Text representations\n\nFrom bag-of-words to static word vectors, each one a "
        "scikit-learn transformer. We use BBC News (2,225 articles, 5 topics).",
        SETUP,
        """\
bbc = load_dataset("bbc-news")
if QUICK:
    bbc = bbc.groupby("label").head(40)
bbc.label.value_counts()""",
        "## Bag-of-words and TF-IDF\n\nSparse, one column per word; TF-IDF weighs words by how "
        "rare they are across documents.",
        """\
from embedkit import TfidfEmbedder

tfidf = TfidfEmbedder(sublinear_tf=True, min_df=2).fit(bbc.text)
X = tfidf.transform(bbc.text)
print(X.shape, f"{X.nnz / np.prod(X.shape):.2%} non-zero")
row = X[0].toarray().ravel()
names = tfidf.get_feature_names_out()
print("top words of document 0:", list(names[np.argsort(row)[::-1][:8]]))""",
        "## Pretrained GloVe (6B tokens, 50 dims)\n\nThe packaged vectors load memory-mapped in "
        "about a second. Analogies are vector arithmetic: *king - man + woman*.",
        """\
from embedkit import GloveEmbedder

glove = GloveEmbedder().fit(bbc.text)
print(glove.analogy("man", "king", "woman", topn=3))
print(glove.most_similar("football", topn=5))""",
        "## Training Word2Vec and FastText on our corpus\n\nFastText builds vectors from character "
        "n-grams, so a misspelt word still gets a sensible vector; Word2Vec does not know it.",
        """\
from embedkit import FastTextEmbedder, Word2VecEmbedder

epochs = 2 if QUICK else 5
w2v = Word2VecEmbedder(sg=1, epochs=epochs, min_count=2).fit(bbc.text)
ft = FastTextEmbedder(epochs=epochs, min_count=2).fit(bbc.text)
for model in (w2v, ft):
    vectors, found = model.lookup(["government", "governmnet"])
    print(type(model).__name__, "knows:", found.tolist())
print("FastText neighbours of the typo:", ft.most_similar("governmnet", topn=5))""",
        "## A 2-D map of word vectors (PCA of GloVe)",
        """\
import matplotlib.pyplot as plt
from sklearn.decomposition import PCA

words = ["king", "queen", "man", "woman", "paris", "france", "london", "england",
         "football", "tennis", "goal", "bank", "market", "shares", "film", "music"]
vecs, _ = glove.lookup(words)
xy = PCA(2, random_state=0).fit_transform(vecs)
fig, ax = plt.subplots(figsize=(6, 5))
ax.scatter(xy[:, 0], xy[:, 1])
for (x, y), w in zip(xy, words):
    ax.annotate(w, (x, y), fontsize=9)
ax.set_title("GloVe 50d, first two principal components")
plt.show()""",
        "## Every representation + logistic regression\n\nSame head, same folds: only the "
        "representation changes (on 150 articles per topic, to keep the notebook quick on a CPU).",
        """\
from embedkit import Doc2VecEmbedder, TransformerEmbedder

sample = bbc.groupby("label").head(150)
reps = {
    "tf-idf": TfidfEmbedder(sublinear_tf=True, min_df=2),
    "glove mean": GloveEmbedder(),
    "glove sif": GloveEmbedder(pooling="sif"),
    "word2vec": Word2VecEmbedder(sg=1, epochs=epochs, min_count=2),
    "fasttext": FastTextEmbedder(sg=1, epochs=epochs, min_count=2),
    "doc2vec": Doc2VecEmbedder(dm=0, epochs=epochs, min_count=2),
    "minilm": TransformerEmbedder(max_length=128 if QUICK else 256, cache="memory"),
}
from sklearn.preprocessing import StandardScaler

head = make_pipeline(StandardScaler(with_mean=False), LogisticRegression(max_iter=2000))
scores = {name: cross_val_score(make_pipeline(rep, head), sample.text, sample.label, cv=3).mean()
          for name, rep in reps.items()}
pd.Series(scores, name="3-fold accuracy").sort_values(ascending=False).to_frame()""",
        "## Why the trained vectors trail\n\nWord2Vec, FastText and Doc2Vec learn from only ~500 articles per fold here, far too "
        "little text to learn good vectors; pretrained GloVe and MiniLM bring knowledge from "
        "billions of words. Trained on more text (WikiText-2, or all of BBC News) they close "
        "much of the gap: see `pipelines/benchmarks/static_quality.py`.",
    ],
    "02_heads": [
        "# 2. Neural heads\n\nDeep averaging network, Conv1D, RNNs with different poolings, and "
        "attention, on TREC-6 questions (official 500-question test split).",
        SETUP,
        """\
trec = load_dataset("trec")
train, test = trec[trec.split == "train"], trec[trec.split == "test"]
train = train.groupby("label").head(40) if QUICK else train.sample(2500, random_state=0)
print(len(train), "train /", len(test), "test questions")""",
        "## One representation, many heads\n\n`TokenIndexer` emits token ids; each head learns its "
        "own embedding (a DAN is the MLP head over ids: embed, average, classify).",
        """\
import time
from embedkit import (AttentionClassifier, ConvClassifier, MLPClassifier, RNNClassifier,
                      SelfAttentionClassifier, TokenIndexer)

epochs = 3 if QUICK else 8
heads = {
    "DAN (mean of embeddings)": MLPClassifier(epochs=epochs, lr=3e-3),
    "Conv1D": ConvClassifier(epochs=epochs),
    "LSTM, last step": RNNClassifier(cell="lstm", pooling="last", epochs=epochs),
    "BiGRU, max pooling": RNNClassifier(cell="gru", bidirectional=True, pooling="max", epochs=epochs),
    "LSTM + attention pooling": RNNClassifier(cell="lstm", pooling="attention", epochs=epochs),
    "attention (learned query)": AttentionClassifier(epochs=epochs),
    "self-attention (2 blocks)": SelfAttentionClassifier(num_layers=2, epochs=epochs),
}
rows = []
for name, head in heads.items():
    pipe = make_pipeline(TokenIndexer(min_count=1), head)
    start = time.perf_counter()
    pipe.fit(train.text, train.label)
    rows.append((name, (pipe.predict(test.text) == test.label).mean(), time.perf_counter() - start))
pd.DataFrame(rows, columns=["head", "test accuracy", "fit s"]).set_index("head")""",
        "## Frozen GloVe vectors as the sequence\n\nThe same heads read pretrained vectors when the "
        "representation emits `output=\"sequence\"`.",
        """\
from embedkit import GloveEmbedder

glove_lstm = make_pipeline(GloveEmbedder(output="sequence", max_length=40),
                           RNNClassifier(cell="lstm", bidirectional=True, pooling="max", epochs=epochs))
glove_lstm.fit(train.text, train.label)
print("GloVe + BiLSTM(max):", (glove_lstm.predict(test.text) == test.label).mean())""",
        "## Where does attention look?",
        """\
from embedkit import attention_heatmap

att = make_pipeline(TokenIndexer(min_count=1), AttentionClassifier(epochs=epochs))
att.fit(train.text, train.label)
questions = ["How far is it from Denver to Aspen ?", "Who was Galileo ?",
             "What does NASA stand for ?"]
ids = att[0].transform(questions)
pairs = att[-1].attention_weights(ids, return_tokens=True)   # (tokens, weights) per question
print(att.predict(questions))
tokens, weights = zip(*pairs)
attention_heatmap(list(tokens), list(weights))""",
    ],
    "03_transfer_learning": [
        "# 3. Transfer learning\n\nA frozen pretrained encoder with a linear classifier on top, "
        "versus fine-tuning the whole encoder on TREC-6.",
        SETUP,
        """\
trec = load_dataset("trec")
train, test = trec[trec.split == "train"], trec[trec.split == "test"]
n_train = 60 if QUICK else 800   # fine-tuning on CPU: a slice keeps this notebook to minutes
train = train.sample(n_train, random_state=0)
len(train), len(test)""",
        "## Frozen MiniLM + logistic regression",
        """\
import time
from embedkit import TransformerEmbedder

start = time.perf_counter()
frozen = make_pipeline(TransformerEmbedder(max_length=48), LogisticRegression(max_iter=2000, C=10))
frozen.fit(train.text, train.label)
frozen_acc = (frozen.predict(test.text) == test.label).mean()
print(f"frozen: {frozen_acc:.3f} in {time.perf_counter() - start:.0f} s")""",
        "## Fine-tuned MiniLM\n\n`TransformerClassifier` reads raw text, so in a pipeline it sits "
        "after a `\"passthrough\"` features step.",
        """\
from embedkit import TransformerClassifier

start = time.perf_counter()
tuned = Pipeline([("features", "passthrough"),
                  ("head", TransformerClassifier(fine_tune="full", epochs=1 if QUICK else 3,
                                                 max_length=48, batch_size=16))])
tuned.fit(train.text, train.label)
tuned_acc = (tuned.predict(test.text) == test.label).mean()
print(f"fine-tuned: {tuned_acc:.3f} in {time.perf_counter() - start:.0f} s")
tuned[-1].plot_history()""",
        "## Reusing what it learned\n\nThe fine-tuned encoder is a feature extractor too.",
        """\
features = tuned[-1].transform(test.text[:5].tolist())
features.shape""",
    ],
    "04_grid_search": [
        "# 4. One grid over every representation\n\n`embedkit.search.make_search` pairs each "
        "representation only with heads that accept what it produces, and caches embeddings so "
        "each document is encoded once per fitted representation.",
        SETUP,
        """\
from embedkit.search import make_search

data = load_dataset("bbc-news").groupby("label").head(20 if QUICK else 60).reset_index(drop=True)
reps = ["tfidf", "glove", "learned"] if QUICK else ["tfidf", "glove", "minilm", "learned", "glove-seq"]
heads = ["logreg", "mlp", "conv"]
search, X, y = make_search(data, representations=reps, heads=heads, cv=3)
print(sum(len(g["head"]) for g in search.param_grid), "pipelines x 3 folds")
search.fit(X, y)""",
        """\
res = pd.DataFrame(search.cv_results_)
name = lambda est: type(est[-1] if isinstance(est, Pipeline) else est).__name__  # noqa: E731
res["representation"] = [name(p["features"]) + ("" if getattr(p["features"], "output", "pooled") == "pooled"
                                                else f"({p['features'].output})") for p in res.params]
res["head"] = [name(p["head"]) for p in res.params]
table = res[["representation", "head", "mean_test_accuracy", "std_test_accuracy", "mean_fit_time"]]
table.sort_values("mean_test_accuracy", ascending=False)""",
        """\
from embedkit.plots import score_chart

chart = table.rename(columns={"mean_test_accuracy": "accuracy_mean", "std_test_accuracy": "accuracy_std"})
import tempfile
path = score_chart(chart, os.path.join(tempfile.mkdtemp(), "grid.png"), title="BBC News slice, 3-fold CV")
from IPython.display import Image
Image(str(path))""",
    ],
}


def build(name: str, cells: list[str], execute: bool = True) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for src in cells:  # markdown cells start with a heading
        markdown = src.startswith(("# ", "## "))
        nb.cells.append(nbformat.v4.new_markdown_cell(src) if markdown else nbformat.v4.new_code_cell(src))
    path = HERE / f"{name}.ipynb"
    if execute:
        NotebookClient(nb, timeout=1800, kernel_name="python3",
                       resources={"metadata": {"path": str(HERE)}}).execute()
    nbformat.write(nb, path)
    return path


if __name__ == "__main__":
    prefix = sys.argv[1] if len(sys.argv) > 1 else ""
    for name, cells in NOTEBOOKS.items():
        if name.startswith(prefix):
            print("wrote", build(name, cells))
