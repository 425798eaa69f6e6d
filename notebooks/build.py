"""Write the course notebooks from the cell lists below, execute them and check what they show.

    python notebooks/build.py            # write + execute all (outputs saved in the .ipynb)
    python notebooks/build.py 02         # only notebooks whose name starts with 02
    python notebooks/build.py --figures DIR   # the saved notebooks' images, as PNG files

Edit the cells here, not in the .ipynb files, so the notebooks stay reviewable as code.
Set EMBEDKIT_QUICK=1 to execute on small slices (what the tests do, in tests/test_notebooks.py).

A cell made with `figure(...)` must show at least one ``image/png`` output, one made with
`table(...)` an HTML table; `problems` checks that, and that no output carries an error, a
warning, stderr text or a path of the machine that ran it. A notebook that fails the check is
not written.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).parent
ROOT = HERE.parent

FIGURE, TABLE = "figure", "table"  # cell tags


def figure(source: str) -> dict:
    """A code cell whose output must include an image (a chart drawn inline)."""
    return {"source": source, "tags": [FIGURE]}


def table(source: str) -> dict:
    """A code cell whose output must include an HTML table (a DataFrame)."""
    return {"source": source, "tags": [TABLE]}


def setup(imports: str) -> str:
    """A notebook's first code cell: inline figures, its imports, the QUICK switch."""
    return f"""\
%matplotlib inline
{imports}

QUICK = os.environ.get("EMBEDKIT_QUICK", "") not in ("", "0")  # CI runs the notebooks small
pd.set_option("display.precision", 3)"""


NOTEBOOKS = {
    "01_representations": [
        ("# 1. Text representations\n\nFrom bag-of-words to static word vectors, each one a "
        "scikit-learn transformer. We use BBC News (2,225 articles, 5 topics)."),
        setup("""\
import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from embedkit import load_dataset
from embedkit.plots import score_chart, time_chart"""),
        table("""\
bbc = load_dataset("bbc-news")
if QUICK:
    bbc = bbc.groupby("label").head(40)
bbc.label.value_counts().to_frame("articles")"""),
        ("## Bag-of-words and TF-IDF\n\nSparse, one column per word; TF-IDF weighs words by how "
        "rare they are across documents."),
        table("""\
from embedkit import TfidfEmbedder

tfidf = TfidfEmbedder(sublinear_tf=True, min_df=2).fit(bbc.text)
X = tfidf.transform(bbc.text)
print(X.shape, f"{X.nnz / np.prod(X.shape):.2%} non-zero")
row = X[0].toarray().ravel()
top = np.argsort(row)[::-1][:8]
pd.DataFrame({"word": tfidf.get_feature_names_out()[top],
              "tf-idf": row[top]}).rename_axis("top words of document 0")"""),
        ("## Pretrained GloVe (6B tokens, 50 dims)\n\nThe packaged vectors load memory-mapped in "
        "about a second. Analogies are vector arithmetic: *king - man + woman*."),
        table("""\
from embedkit import GloveEmbedder

glove = GloveEmbedder().fit(bbc.text)
analogies = [("man", "king", "woman"), ("france", "paris", "italy"), ("good", "better", "bad"),
             ("walk", "walked", "swim")]
pd.DataFrame([{"a : b :: c : ?": f"{a} : {b} :: {c} : ?", "best": words[0][0], "cosine": words[0][1],
               "runners-up": ", ".join(w for w, _ in words[1:])}
              for a, b, c in analogies for words in [glove.analogy(a, b, c, topn=3)]])"""),
        table("""\
neighbours = {word: [w for w, _ in glove.most_similar(word, topn=5)]
              for word in ["football", "bank", "film", "election"]}
pd.DataFrame(neighbours, index=pd.RangeIndex(1, 6, name="rank"))"""),
        ("## Training Word2Vec and FastText on our corpus\n\nFastText builds vectors from character "
        "n-grams, so a misspelt word still gets a sensible vector; Word2Vec does not know it."),
        table("""\
from embedkit import FastTextEmbedder, Word2VecEmbedder

epochs = 2 if QUICK else 5
w2v = Word2VecEmbedder(sg=1, epochs=epochs, min_count=2).fit(bbc.text)
ft = FastTextEmbedder(epochs=epochs, min_count=2).fit(bbc.text)
for model in (w2v, ft):
    vectors, found = model.lookup(["government", "governmnet"])
    known = dict(zip(["government", "governmnet"], found.tolist(), strict=True))
    print(type(model).__name__, "knows:", known)
pd.DataFrame(ft.most_similar("governmnet", topn=5),
             columns=["FastText neighbour of 'governmnet'", "cosine"])"""),
        ("## A 2-D map of word vectors (PCA of GloVe)\n\nWords of one topic land together: the "
        "first two principal components already separate royalty, places, sport, finance and arts."),
        figure("""\
from adjustText import adjust_text
from sklearn.decomposition import PCA

groups = {"people": ["king", "queen", "man", "woman", "prince"],
          "places": ["paris", "france", "london", "england", "rome"],
          "sport": ["football", "tennis", "goal", "match", "coach"],
          "finance": ["bank", "market", "shares", "profit", "tax"],
          "arts": ["film", "music", "album", "actor", "director"]}
words = [w for ws in groups.values() for w in ws]
vecs, _ = glove.lookup(words)
xy = PCA(2, random_state=0).fit_transform(vecs)
fig, ax = plt.subplots(figsize=(7, 5.5))
start = 0
for (group, ws), colour in zip(groups.items(), plt.cm.tab10.colors, strict=False):
    ax.scatter(xy[start: start + len(ws), 0], xy[start: start + len(ws), 1], color=colour, label=group)
    start += len(ws)
labels = [ax.text(x, y, w, fontsize=9) for (x, y), w in zip(xy, words, strict=True)]
adjust_text(labels, x=xy[:, 0], y=xy[:, 1], ax=ax,  # move labels apart where words crowd
            arrowprops={"arrowstyle": "-", "color": "#999999", "lw": 0.5})
ax.set_xlabel("first principal component")
ax.set_ylabel("second principal component")
ax.legend(frameon=False)
ax.set_title("GloVe 6B 50d word vectors, first two principal components")
plt.show()"""),
        ("## Every representation + logistic regression\n\nSame head, same folds: only the "
        "representation changes (on 150 articles per topic, to keep the notebook quick on a CPU)."),
        table("""\
from sklearn.model_selection import cross_validate
from sklearn.preprocessing import StandardScaler

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
# lbfgs needs more than 2,000 iterations on Doc2Vec vectors trained on this little text
head = make_pipeline(StandardScaler(with_mean=False), LogisticRegression(max_iter=5000))
rows = []
for name, rep in reps.items():
    cv = cross_validate(make_pipeline(rep, head), sample.text, sample.label, cv=3)
    rows.append({"representation": name, "head": "logreg", "accuracy_mean": cv["test_score"].mean(),
                 "accuracy_std": cv["test_score"].std(), "fit_seconds": cv["fit_time"].mean(),
                 "n_splits": 3})
results = pd.DataFrame(rows).sort_values("accuracy_mean", ascending=False, ignore_index=True)
results.attrs.update(dataset="BBC News", n_docs=len(sample), protocol="3-fold CV")
results"""),
        figure("""\
score_chart(results)"""),
        figure("""\
time_chart(results)"""),
        ("## Why the trained vectors trail\n\nWord2Vec, FastText and Doc2Vec learn from only ~500 "
        "articles per fold here, far too little text to learn good vectors; pretrained GloVe and "
        "MiniLM bring knowledge from billions of words. Trained on more text (WikiText-2, or all "
        "of BBC News) they close much of the gap: see `pipelines/benchmarks/static_quality.py`."),
    ],
    "02_heads": [
        ("# 2. Neural heads\n\nDeep averaging network, Conv1D, RNNs with different poolings, and "
        "attention, on TREC-6 questions (official 500-question test split)."),
        setup("""\
import os

import matplotlib.pyplot as plt
import pandas as pd
from sklearn.pipeline import make_pipeline

from embedkit import load_dataset
from embedkit.plots import score_chart"""),
        """\
trec = load_dataset("trec")
train, test = trec[trec.split == "train"], trec[trec.split == "test"]
train = train.groupby("label").head(40) if QUICK else train.sample(2500, random_state=0)
print(len(train), "train /", len(test), "test questions")""",
        ("## One representation, many heads\n\n`TokenIndexer` emits token ids; each head learns its "
        "own embedding (a DAN is the MLP head over ids: embed, average, classify)."),
        table("""\
import time

from embedkit import (
    AttentionClassifier,
    ConvClassifier,
    MLPClassifier,
    RNNClassifier,
    SelfAttentionClassifier,
    TokenIndexer,
)

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
rows, fitted = [], {}
for name, head in heads.items():
    pipe = make_pipeline(TokenIndexer(min_count=1), head)
    start = time.perf_counter()
    pipe.fit(train.text, train.label)
    fitted[name] = pipe
    rows.append({"representation": "learned", "head": name,
                 "accuracy_mean": (pipe.predict(test.text) == test.label).mean(), "accuracy_std": 0.0,
                 "fit_seconds": time.perf_counter() - start, "n_splits": 1})
results = pd.DataFrame(rows).sort_values("accuracy_mean", ascending=False, ignore_index=True)
results.attrs.update(dataset="TREC-6", n_docs=len(train), protocol="official 500-question test split")
results[["head", "accuracy_mean", "fit_seconds"]].rename(
    columns={"accuracy_mean": "test accuracy", "fit_seconds": "fit s"}).set_index("head")"""),
        figure("""\
score_chart(results, title=f"TREC-6: {len(train)} training questions, official test split")"""),
        ("## Training histories\n\nThe loss per epoch of each head (skorch records it; with 1,000 "
        "questions or more the heads hold out a validation split and stop early)."),
        figure("""\
fig, ax = plt.subplots(figsize=(7, 4))
for (name, pipe), colour in zip(fitted.items(), plt.cm.tab10.colors, strict=False):
    history = pd.DataFrame(pipe[-1].history_)
    ax.plot(history.epoch, history.train_loss, "o-", color=colour, label=name)
    if "valid_loss" in history:
        ax.plot(history.epoch, history.valid_loss, "--", color=colour, alpha=0.7)
ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
ax.set_xlabel("epoch")
ax.set_ylabel("cross-entropy loss")
ax.set_title("TREC-6: loss per epoch (solid: training, dashed: validation)")
ax.legend(fontsize=8, frameon=False)
plt.show()"""),
        ("## Frozen GloVe vectors as the sequence\n\nThe same heads read pretrained vectors when the "
        "representation emits `output=\"sequence\"`."),
        """\
from embedkit import GloveEmbedder

glove_lstm = make_pipeline(GloveEmbedder(output="sequence", max_length=40),
                           RNNClassifier(cell="lstm", bidirectional=True, pooling="max", epochs=epochs))
glove_lstm.fit(train.text, train.label)
print("GloVe + BiLSTM(max):", (glove_lstm.predict(test.text) == test.label).mean())""",
        ("## Where does attention look?\n\nThe attention head's weight on each word of three test "
        "questions (darker: more weight), with the class it predicts."),
        figure("""\
from embedkit import attention_heatmap

att = make_pipeline(TokenIndexer(min_count=1), AttentionClassifier(epochs=epochs))
att.fit(train.text, train.label)
questions = ["How far is it from Denver to Aspen ?", "Who was Galileo ?",
             "What does NASA stand for ?"]
ids = att[0].transform(questions)
pairs = att[-1].attention_weights(ids, return_tokens=True)   # (tokens, weights) per question
tokens, weights = zip(*pairs, strict=True)
predicted = ", ".join(f"doc {i}: {label}" for i, label in enumerate(att.predict(questions)))
attention_heatmap(list(tokens), list(weights), title=f"predicted {predicted}")"""),
    ],
    "03_transfer_learning": [
        ("# 3. Transfer learning\n\nA frozen pretrained encoder with a linear classifier on top, "
        "versus fine-tuning the whole encoder on TREC-6."),
        setup("""\
import os

import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline

from embedkit import load_dataset
from embedkit.plots import score_chart"""),
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
frozen_s = time.perf_counter() - start
print(f"frozen: {frozen_acc:.3f} in {frozen_s:.0f} s")""",
        ("## Fine-tuned MiniLM\n\n`TransformerClassifier` reads raw text, so in a pipeline it sits "
        "after a `\"passthrough\"` features step. Its training history: loss per epoch."),
        figure("""\
from embedkit import TransformerClassifier

start = time.perf_counter()
tuned = Pipeline([("features", "passthrough"),
                  ("head", TransformerClassifier(fine_tune="full", epochs=1 if QUICK else 3,
                                                 max_length=48, batch_size=16))])
tuned.fit(train.text, train.label)
tuned_acc = (tuned.predict(test.text) == test.label).mean()
tuned_s = time.perf_counter() - start
print(f"fine-tuned: {tuned_acc:.3f} in {tuned_s:.0f} s")
tuned[-1].plot_history()"""),
        "## Frozen versus fine-tuned",
        figure("""\
results = pd.DataFrame({"representation": ["minilm (frozen)", "passthrough"],
                        "head": ["logistic regression", "MiniLM fine-tuned"],
                        "accuracy_mean": [frozen_acc, tuned_acc], "accuracy_std": [0.0, 0.0],
                        "fit_seconds": [frozen_s, tuned_s], "n_splits": 1})
score_chart(results, title=f"TREC-6: {len(train)} training questions, official test split")"""),
        "## Reusing what it learned\n\nThe fine-tuned encoder is a feature extractor too.",
        """\
features = tuned[-1].transform(test.text[:5].tolist())
features.shape""",
    ],
    "04_grid_search": [
        ("# 4. One grid over every representation\n\n`embedkit.search.make_search` pairs each "
        "representation only with heads that accept what it produces, and caches embeddings so "
        "each document is encoded once per fitted representation."),
        setup("""\
import os

import pandas as pd
from sklearn.pipeline import Pipeline

from embedkit import load_dataset
from embedkit.plots import score_chart, time_chart"""),
        """\
from embedkit.search import make_search

data = load_dataset("bbc-news").groupby("label").head(20 if QUICK else 60).reset_index(drop=True)
reps = ["tfidf", "glove", "learned"] if QUICK else ["tfidf", "glove", "minilm", "learned", "glove-seq"]
heads = ["logreg", "mlp", "conv"]
search, X, y = make_search(data, representations=reps, heads=heads, cv=3)
print(sum(len(g["head"]) for g in search.param_grid), "pipelines x 3 folds")
search.fit(X, y);""",
        table("""\
res = pd.DataFrame(search.cv_results_)
def name(step):
    return type(step[-1] if isinstance(step, Pipeline) else step).__name__

res["representation"] = [name(p["features"]) + ("" if getattr(p["features"], "output", "pooled") == "pooled"
                                                else f"({p['features'].output})") for p in res.params]
res["head"] = [name(p["head"]) for p in res.params]
results = (res.rename(columns={"mean_test_accuracy": "accuracy_mean", "std_test_accuracy": "accuracy_std",
                               "mean_fit_time": "fit_seconds"})
           .assign(n_splits=3)
           [["representation", "head", "accuracy_mean", "accuracy_std", "fit_seconds", "n_splits"]]
           .sort_values("accuracy_mean", ascending=False, ignore_index=True))
results.attrs.update(dataset="BBC News", n_docs=len(data), protocol="3-fold CV")
results"""),
        ("## Scores and fit times\n\nBars and points are coloured by representation family, with "
        "the same colours in every chart embedkit draws (`embedkit.plots.FAMILIES`)."),
        figure("""\
score_chart(results)"""),
        figure("""\
time_chart(results)"""),
    ],
    "05_few_labels_and_fast_inference": [
        ("# 5. Many labels per text, few labelled texts, fast inference\n\nThree things the "
        "peers' users ask for: multi-label targets, good models from 8-16 labelled texts per "
        "class (SetFit's contrastive fine-tuning), and a static model distilled from MiniLM "
        "(model2vec's method) that embeds text far faster."),
        setup("""\
import os
import time

import matplotlib.pyplot as plt
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MultiLabelBinarizer

from embedkit import load_dataset
from embedkit.plots import score_chart, time_chart"""),
        ("## Multi-label: film genres from titles\n\n`movie-genres` gives each IMDb title a list "
        "of 1-5 of 7 genres. Every embedkit classifier takes such label lists (or the 0/1 matrix "
        "`MultiLabelBinarizer` makes) and predicts the 0/1 matrix, scikit-learn's convention."),
        table("""\
movies = load_dataset("movie-genres")
movies = movies if QUICK else movies.sample(6000, random_state=0)
train, test = train_test_split(movies, test_size=0.2, random_state=0)
binarizer = MultiLabelBinarizer().fit(movies.label)
y_test = binarizer.transform(test.label)
print(len(train), "train /", len(test), "test titles;", ", ".join(binarizer.classes_))
train.head()"""),
        ("### The threshold\n\nRare genres make 0.5 a poor threshold: most of their "
        "probabilities stay below it. The "
        "heads' default, `threshold=\"tune\"`, picks the value that maximises micro-F1 on rows "
        "held out during fit (out-of-fold for the logistic-regression head, the validation rows "
        "for neural heads). The five-line baseline is scikit-learn's one-vs-rest LR at 0.5."),
        table("""\
from sklearn.multiclass import OneVsRestClassifier

from embedkit import MLPClassifier, TfidfEmbedder, TransformerEmbedder
from embedkit.heads import LogisticRegressionHead

candidates = {
    ("tfidf", "one-vs-rest LR, 0.5 (baseline)"): make_pipeline(
        TfidfEmbedder(), OneVsRestClassifier(LogisticRegression(max_iter=3000))),
    ("tfidf", "logreg, threshold 0.5"): make_pipeline(TfidfEmbedder(), LogisticRegressionHead(threshold=0.5)),
    ("tfidf", "logreg, tuned threshold"): make_pipeline(TfidfEmbedder(), LogisticRegressionHead()),
    ("minilm", "logreg, tuned threshold"): make_pipeline(TransformerEmbedder(max_length=32),
                                                         LogisticRegressionHead()),
    ("minilm", "mlp, tuned threshold"): make_pipeline(TransformerEmbedder(max_length=32),
                                                      MLPClassifier(epochs=20)),
}
rows, fitted = [], {}
for (rep, head), pipe in candidates.items():
    start = time.perf_counter()
    pipe.fit(train.text, binarizer.transform(train.label))
    predicted = pipe.predict(test.text)
    fitted[rep, head] = pipe
    rows.append({"representation": rep, "head": head, "n_splits": 1,
                 "f1_micro_mean": f1_score(y_test, predicted, average="micro"), "f1_micro_std": 0.0,
                 "f1_macro_mean": f1_score(y_test, predicted, average="macro"), "f1_macro_std": 0.0,
                 "threshold": getattr(pipe[-1], "threshold_", 0.5),
                 "fit_seconds": time.perf_counter() - start})
multi = pd.DataFrame(rows).sort_values("f1_micro_mean", ascending=False, ignore_index=True)
multi.attrs.update(dataset="movie-genres", n_docs=len(train), protocol="80/20 split")
multi[["representation", "head", "f1_micro_mean", "f1_macro_mean", "threshold", "fit_seconds"]]"""),
        figure("""\
score_chart(multi, metric="f1_micro",
            title=f"movie-genres: {len(train)} training titles, micro-F1 on {len(test)}")"""),
        ("### Per genre\n\nF1 of the best pipeline, and how often each genre occurs (frequent genres are "
        "easier to learn from titles)."),
        figure("""\
top = multi.iloc[0]
best = fitted[top["representation"], top["head"]]
per_genre = pd.DataFrame({"F1": f1_score(y_test, best.predict(test.text), average=None),
                          "share of test titles": y_test.mean(axis=0)}, index=binarizer.classes_)
ax = per_genre.sort_values("F1").plot.barh(figsize=(7, 3.5), color=["#4C72B0", "#BBBBBB"])
ax.set_xlim(0, 1)
ax.set_title(f"movie-genres, per genre: {top['representation']} + {top['head']}")
plt.show()"""),
        ("## Few labels: SetFit's contrastive fine-tuning\n\nWith 8 labelled tweets per class, "
        "`SetFitClassifier` fine-tunes MiniLM on pairs of same-class and different-class texts "
        "(sentence-transformers' trainer, cosine loss), then fits a logistic regression on the "
        "tuned embeddings. Against it: frozen MiniLM + logistic regression on the same 16 tweets."),
        table("""\
from embedkit import SetFitClassifier

tweets = load_dataset("disaster-tweets")
few = tweets.groupby("label").sample(8, random_state=0)
held_out = tweets.drop(few.index).sample(100 if QUICK else 600, random_state=0)
setfit = SetFitClassifier(num_iterations=2 if QUICK else 20, max_length=64)
frozen = make_pipeline(TransformerEmbedder(max_length=64), LogisticRegression(max_iter=3000))
scores = {}
for name, model in {"SetFit": setfit, "frozen MiniLM + LR": frozen}.items():
    start = time.perf_counter()
    model.fit(few.text.tolist(), few.label.to_numpy())
    scores[name] = {"accuracy": (model.predict(held_out.text.tolist()) == held_out.label).mean(),
                    "fit seconds": time.perf_counter() - start}
pd.DataFrame(scores).T"""),
        ("### The learning curve\n\nOne draw of 16 tweets is noisy. The learning curve "
        "below is the benchmark's: several "
        "draws per size, four datasets, SetFit against frozen MiniLM + LR and full fine-tuning "
        "(`pipelines/benchmarks/few_labels.py`; its table is `results/few_labels.md`)."),
        figure("""\
runs = pd.read_csv("../pipelines/benchmarks/results/few_labels.csv")
runs = runs[runs.method.isin(["setfit", "frozen + LR", "frozen + logreg", "finetune"])]  # MiniLM
curve = runs.groupby(["dataset", "method", "n_per_class"]).accuracy.mean().reset_index()
fig, axes = plt.subplots(1, curve.dataset.nunique(), figsize=(13, 3.4), sharey=False)
for ax, (dataset, part) in zip(axes, curve.groupby("dataset"), strict=True):
    for method, line in part.groupby("method"):
        ax.plot(line.n_per_class, line.accuracy, "o-", label=method)
    ax.set_xscale("log", base=2)
    ax.set_xticks([8, 16, 32, 64], ["8", "16", "32", "64"])
    ax.set_title(dataset)
    ax.set_xlabel("labelled texts per class")
axes[0].set_ylabel("test accuracy (mean over draws)")
axes[-1].legend(fontsize=8, frameon=False)
plt.show()"""),
        table("""\
curve.pivot_table(index=["dataset", "n_per_class"], columns="method", values="accuracy").round(3)"""),
        ("## Fast inference: MiniLM distilled into a static table\n\n`DistilledEmbedder` embeds "
        "every word piece of MiniLM's vocabulary once (cached by the weights' digest, written in "
        "model2vec's format), reduces them with PCA and weighs them by frequency; a document is "
        "then the mean of its pieces' rows: no transformer at inference. It gives up part of MiniLM's "
        "accuracy for one to two orders of magnitude in speed (`pipelines/benchmarks/bench_distill.py` "
        "measures both on several datasets). On TREC questions:"),
        table("""\
from embedkit import DistilledEmbedder, GloveEmbedder

trec = load_dataset("trec")
train, test = trec[trec.split == "train"], trec[trec.split == "test"]
representations = {
    "minilm-static": DistilledEmbedder(**({"max_vocabulary": 3000, "pca_dims": 64} if QUICK else {})),
    "minilm": TransformerEmbedder(max_length=48),
    "glove": GloveEmbedder(),
    "tfidf": TfidfEmbedder(),
}
rows = []
for name, rep in representations.items():
    pipe = make_pipeline(rep, LogisticRegressionHead()).fit(train.text, train.label)
    start = time.perf_counter()
    predicted = pipe.predict(test.text)
    seconds = time.perf_counter() - start
    rows.append({"representation": name, "head": "logreg", "n_splits": 1,
                 "accuracy_mean": (predicted == test.label).mean(), "accuracy_std": 0.0,
                 "predict_seconds": seconds, "docs_per_second": len(test) / seconds})
speed = pd.DataFrame(rows)
speed.attrs.update(dataset="TREC-6", n_docs=len(test), protocol="official test split")
speed[["representation", "accuracy_mean", "docs_per_second"]]"""),
        figure("""\
time_chart(speed, seconds="predict_seconds",
           title=f"TREC-6: accuracy against seconds to predict {len(test)} questions")"""),
    ],
}


def notebook(name: str) -> nbformat.NotebookNode:
    """The notebook ``name`` built from its cell list, not executed."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for item in NOTEBOOKS[name]:
        cell = item if isinstance(item, dict) else {"source": item, "tags": []}
        src = cell["source"]
        if src.startswith(("# ", "## ", "### ")):  # markdown cells start with a heading
            nb.cells.append(nbformat.v4.new_markdown_cell(src))
        else:
            code = nbformat.v4.new_code_cell(src)
            if cell["tags"]:
                code.metadata["tags"] = list(cell["tags"])
            nb.cells.append(code)
    return nb


def execute(nb: nbformat.NotebookNode, timeout: int = 900) -> nbformat.NotebookNode:
    """Run every cell in a fresh kernel (cwd: notebooks/, this checkout first on the path)."""
    from nbclient import NotebookClient

    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(HERE)}}).execute()
    return nb


def _machine_paths() -> list[str]:
    """Paths that would tie a saved output to the machine that ran it."""
    paths = {sys.prefix, sys.base_prefix, str(ROOT.resolve()), str(Path.home())}
    # longest first, so a leak names the most specific path (the venv inside the checkout); the
    # bare "site-packages" last, whatever its length (a checkout at /tmp/ci has a venv path as long)
    return sorted((p for p in paths if p and p != "/"), key=len, reverse=True) + ["site-packages"]


def problems(nb: nbformat.NotebookNode) -> list[str]:
    """What is wrong with an executed notebook's outputs, one line each (empty: nothing)."""
    found = []
    paths = _machine_paths()
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        where = f"cell {i} ({cell.source.splitlines()[0][:50]!r})"
        outputs = cell.get("outputs", [])
        tags = cell.metadata.get("tags", [])
        kinds = {kind for out in outputs for kind in out.get("data", {})}
        if FIGURE in tags and "image/png" not in kinds:
            found.append(f"{where} draws a figure but shows no image/png output")
        if TABLE in tags and "text/html" not in kinds:
            found.append(f"{where} should show a table but has no text/html output")
        for out in outputs:
            data = out.get("data", {})
            text = str(out.get("text", "")) + str(data.get("text/plain", "")) + str(data.get("text/html", ""))
            if out.get("output_type") == "error":
                found.append(f"{where} raised {out.get('ename')}: {out.get('evalue')}")
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                found.append(f"{where} wrote to stderr: {text.strip()[:200]!r}")
            if re.search(r"\w+Warning\b", text):
                found.append(f"{where} shows a warning: {text.strip()[:200]!r}")
            if "<Figure size" in text and "image/png" not in data:
                found.append(f"{where} shows {text.strip()[:40]!r} instead of the figure")
            leaked = [p for p in paths if p in text]
            if leaked:
                found.append(f"{where} shows a machine path {leaked[0]!r}")
    return found


def build(name: str, execute_cells: bool = True) -> Path:
    """Write notebooks/<name>.ipynb, executed; refuse to write one whose outputs fail `problems`."""
    nb = notebook(name)
    if execute_cells:
        execute(nb, timeout=7200)  # full mode on a busy 2-core machine: some cells take long
        wrong = problems(nb)
        if wrong:
            raise ValueError(f"{name}: not written, its outputs have problems:\n  " + "\n  ".join(wrong))
    path = HERE / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def export_figures(folder) -> list[Path]:
    """Write each image of the saved notebooks to ``folder/<notebook>_cell<i>[_<k>].png``, to
    look at the figures without Jupyter."""
    import base64

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in NOTEBOOKS:
        nb = nbformat.read(HERE / f"{name}.ipynb", as_version=4)
        for i, cell in enumerate(nb.cells):
            images = [out["data"]["image/png"] for out in cell.get("outputs", [])
                      if "image/png" in out.get("data", {})]
            for k, image in enumerate(images):
                path = folder / f"{name}_cell{i}{f'_{k}' if k else ''}.png"
                path.write_bytes(base64.b64decode(image))
                written.append(path)
    return written


if __name__ == "__main__":
    if sys.argv[1:2] == ["--figures"]:  # python notebooks/build.py --figures DIR
        for path in export_figures(sys.argv[2]):
            print("wrote", path)
        raise SystemExit
    prefix = sys.argv[1] if len(sys.argv) > 1 else ""
    failed = []
    for name in NOTEBOOKS:
        if name.startswith(prefix):
            try:
                print("wrote", build(name), flush=True)
            except ValueError as error:  # the others are still worth building
                print(error, flush=True)
                failed.append(name)
    if failed:
        raise SystemExit(f"not written: {failed}")
