"""FastTextEmbedder: subword vectors for unseen words, and Facebook .bin files."""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from embedkit import FastTextEmbedder


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
    # all unseen words at once equal gensim's one-word-at-a-time n-gram mean
    unseen = ["kittenn", "zz", "aaaa", "puppyy", "x"]
    np.testing.assert_allclose(emb.word_vectors_.subword_vectors(unseen),
                               np.stack([emb.word_vectors_.subwords.get_vector(w) for w in unseen]),
                               rtol=1e-5, atol=1e-7)
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
    np.testing.assert_allclose(got, np.stack([model.wv["kitten"], model.wv["kittenn"]]), rtol=1e-5)
