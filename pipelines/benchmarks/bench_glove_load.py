"""Loading the bundled GloVe 6B-50d: seconds to the first vector and peak RSS, embedkit (memory-mapped
``.npy``) vs gensim parsing the GloVe text file (``load_word2vec_format(no_header=True)``), each in
a fresh interpreter; then the memory of ``GridSearchCV(n_jobs=2)`` workers over GloVe pipelines.
Run by hand:

    PYTHONPATH=. python pipelines/benchmarks/bench_glove_load.py

The text file is the ``glove-6b-50d-txt`` resource, decompressed once to a temporary plain file so
gensim's time is parsing, not bz2.
"""

from __future__ import annotations

import bz2
import json
import os
import shutil
import subprocess
import sys
import tempfile

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
which, path = sys.argv[1], sys.argv[2]
if which.startswith("embedkit"):
    from embedkit import GloveEmbedder
    import embedkit.representations.glove
else:
    from gensim.models import KeyedVectors
t_import = time.perf_counter() - t0
rss_import = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
if which == "embedkit":
    emb = GloveEmbedder().fit(["the"])
    vec = emb.lookup(["king"])[0][0]
elif which == "embedkit-text":
    emb = GloveEmbedder(vectors=path).fit(["the"])
    vec = emb.lookup(["king"])[0][0]
else:
    kv = KeyedVectors.load_word2vec_format(path, no_header=True)
    vec = kv["king"]
t = time.perf_counter() - t0
print(json.dumps({"seconds": t, "import_s": t_import, "rss_import_mb": rss_import,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "king0": float(vec[0])}))
"""


def run(which: str, path: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", "."))
    out = subprocess.run([sys.executable, "-c", CHILD, which, path], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def grid_search_memory() -> None:
    import numpy as np
    import psutil
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline

    from embedkit import GloveEmbedder
    from embedkit.data.datasets import load_dataset

    df = load_dataset("bbc-news").sample(300, random_state=0)
    pipe = Pipeline([("features", GloveEmbedder()), ("head", LogisticRegression(max_iter=1000))])
    grid = {"features__pooling": ["mean", "max", "sum", "tfidf"]}
    search = GridSearchCV(pipe, grid, cv=2, n_jobs=2).fit(df["text"], df["label"])
    me = psutil.Process()
    workers = [p for p in me.children(recursive=True) if "python" in p.name().lower()]
    print(f"GridSearchCV(n_jobs=2), 4 candidates x 2 folds, best {search.best_params_} "
          f"score {search.best_score_:.3f}")
    for p in workers:
        try:
            mem = p.memory_full_info()
        except psutil.Error:
            continue
        print(f"  worker pid {p.pid}: rss {mem.rss / 2**20:.0f} MB, uss (private) "
              f"{mem.uss / 2**20:.0f} MB, pss {mem.pss / 2**20:.0f} MB  (matrix file is 76 MB)")
    mem = me.memory_full_info()
    print(f"  parent: rss {mem.rss / 2**20:.0f} MB, uss {mem.uss / 2**20:.0f} MB")
    del np


def main() -> None:
    from embedkit.storage.resources import resource_path

    tmp = tempfile.mkdtemp()
    try:
        plain = os.path.join(tmp, "glove.6B.50d.txt")
        with bz2.open(resource_path("glove-6b-50d-txt"), "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        size = os.path.getsize(plain) / 2**20
        npy = os.path.getsize(resource_path("glove-6b-50d") / "glove_6B_50d_emb.npy") / 2**20
        ours = run("embedkit", plain)
        text = run("embedkit-text", plain)
        gensim = run("gensim", plain)
        assert abs(ours["king0"] - gensim["king0"]) < 1e-5 and abs(text["king0"] - gensim["king0"]) < 1e-5
        print(f"GloVe 6B-50d: .npy {npy:.0f} MB, text {size:.0f} MB")
        print("(seconds from interpreter start incl. imports / after imports; peak RSS / its growth "
              "after imports)")
        for name, r in (("embedkit GloveEmbedder() (mmap .npy)", ours),
                        ("embedkit GloveEmbedder(vectors=text file)", text),
                        ("gensim load_word2vec_format(no_header=True)", gensim)):
            print(f"{name:44s}: {r['seconds']:7.2f} s / {r['seconds'] - r['import_s']:7.2f} s to "
                  f"first vector; peak RSS {r['peak_rss_mb']:5.0f} MB / "
                  f"+{r['peak_rss_mb'] - r['rss_import_mb']:.0f} MB")
        load = lambda r: r["seconds"] - r["import_s"]  # noqa: E731
        print(f"-> bundled GloVe is {gensim['seconds'] / ours['seconds']:.1f}x faster to the first vector "
              f"than gensim's text parser including imports, {load(gensim) / load(ours):.1f}x excluding "
              f"them (target >= 20x); embedkit's own text parser is {load(gensim) / load(text):.1f}x "
              "faster than gensim's")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    grid_search_memory()


if __name__ == "__main__":
    main()
