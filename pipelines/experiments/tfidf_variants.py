"""TF-IDF settings side by side, each with the same logistic regression.

An experiment file of your own, run from the checkout:

    embedkit compare -e pipelines/experiments/tfidf_variants.py -d trec

Besides built-in names it names two representations of its own (new names only); copy it to
start another.
"""

from embedkit.registry import Entry, step

REPRESENTATIONS = {
    "tfidf-bigrams": Entry(step("TfidfEmbedder", sublinear_tf=True, min_df=2, ngram_range=(1, 2)),
                           "TF-IDF over words and word pairs (sublinear tf, min_df=2)"),
    "tfidf-chars": Entry(step("TfidfEmbedder", sublinear_tf=True, min_df=2, char_ngram_range=(2, 5)),
                         "TF-IDF over words and character 2-5 grams (sublinear tf, min_df=2)"),
}

PAIRS = [
    ("bow", "logreg"),            # raw counts
    ("tfidf", "logreg"),          # words, weighted
    ("tfidf-bigrams", "logreg"),  # + word pairs
    ("tfidf-chars", "logreg"),    # + character n-grams (typos, morphology)
]
