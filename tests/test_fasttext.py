"""FastTextEmbedder: subword vectors for unseen words, and Facebook .bin files."""

from __future__ import annotations

import numpy as np
from _float32 import assert_float32_sums_close, mean_terms
from sklearn.base import clone

from embedkit import FastTextEmbedder


def _ngram_mean_bound(kv, words):
    """``terms`` and ``scale`` of `assert_float32_sums_close` for the n-gram means of ``words``
    in gensim's ``FastTextKeyedVectors`` ``kv``."""
    from gensim.models.fasttext import ft_ngram_hashes

    rows = [kv.vectors_ngrams[ft_ngram_hashes(w, kv.min_n, kv.max_n, kv.bucket)] for w in words]
    terms, scale, _ = mean_terms(rows, kv.vector_size)
    return {"terms": terms, "scale": scale}


def test_fasttext_subword_vectors_for_unseen_words(corpus, tmp_path):
    emb = FastTextEmbedder(vector_size=16, epochs=10, bucket=5000, random_state=0).fit(corpus)
    vec, found = emb.lookup(["kittenn", "zz"])
    assert found[0] and np.isfinite(vec).all() and np.abs(vec[0]).sum() > 0
    out = emb.transform(["kittenn puppyy"])
    assert emb.oov_rate_ == 1.0 and np.abs(out).sum() > 0
    # its n-grams ("kitt", "itten", ...) put it among the pet words, not the finance words
    assert emb.most_similar("kittenn", topn=1)[0][0] in "cat dog pet animal puppy kitten fur paw vet leash"
    assert emb.similarity("kittenn", "kitten") > emb.similarity("kittenn", "stock")
    skip = clone(emb).set_params(oov="skip").fit(corpus)
    np.testing.assert_array_equal(skip.transform(["kittenn puppyy"]), 0)
    # all unseen words at once equal gensim's one-word-at-a-time n-gram mean, up to the float32
    # rounding of a mean of each word's n-gram vectors (gensim adds them in a loop, we in a
    # sparse product)
    unseen = ["kittenn", "zz", "aaaa", "puppyy", "x"]
    kv = emb.word_vectors_.subwords
    assert_float32_sums_close(emb.word_vectors_.subword_vectors(unseen),
                              np.stack([kv.get_vector(w) for w in unseen]),
                              **_ngram_mean_bound(kv, unseen))
    # Facebook .bin round trip through gensim's writer and reader
    from gensim.models import FastText
    from gensim.models.fasttext import save_facebook_model

    model = FastText(vector_size=8, min_count=1, epochs=2, bucket=2000, seed=0, workers=1)
    model.build_vocab([d.split() for d in corpus])
    model.train([d.split() for d in corpus], total_examples=len(corpus), epochs=2)
    save_facebook_model(model, str(tmp_path / "ft.bin"))
    loaded = FastTextEmbedder(vectors=str(tmp_path / "ft.bin")).fit(corpus[:5])
    got, found = loaded.lookup(["kitten", "kittenn"])
    assert found.all()
    # a known word: the vector gensim's reader computes as its trainer did
    np.testing.assert_allclose(got[0], model.wv["kitten"], rtol=1e-5)
    # an unseen one: our n-gram mean against gensim's, summed in another order
    assert_float32_sums_close(got[1:], model.wv["kittenn"][None],
                              **_ngram_mean_bound(model.wv, ["kittenn"]))
