"""embedkit.explain: attention weights read off a whole fitted Pipeline, on real text."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

from embedkit import AttentionClassifier, GloveEmbedder, MLPClassifier, attention_weights, load_dataset
from embedkit.plots import attention_heatmap

QUESTIONS = ["How far is it from Denver to Aspen ?", "Who was Galileo zqxwv ?"]


@pytest.fixture(scope="module")
def trec():
    data = load_dataset("trec")
    return data[data.split == "train"].groupby("label").head(30)


@pytest.mark.parametrize("oov", ["auto", "skip"])
def test_pipeline_attention_covers_every_word_and_marks_the_unknown(trec, oov, tmp_path):
    pipe = make_pipeline(GloveEmbedder(output="sequence", oov=oov),
                         AttentionClassifier(epochs=2, random_state=0))
    pipe.fit(trec.text, trec.label)
    found = attention_weights(pipe, QUESTIONS)
    assert [a.tokens for a in found] == [
        ["how", "far", "is", "it", "from", "denver", "to", "aspen", "?"],
        ["who", "was", "galileo", "zqxwv", "?"]]
    assert found[1].unknown.tolist() == [False, False, False, True, False]
    for a in found:
        assert np.isfinite(a.weights).all() and a.weights.sum() == pytest.approx(1.0, abs=1e-5)
    if oov == "skip":  # the head never saw it: put back at weight 0
        assert found[1].weights[3] == 0
    else:  # the shared unknown vector reached the head
        assert found[1].weights[3] > 0
    fig = attention_heatmap(found, path=tmp_path / "a.png")
    cells = [t for t in fig.axes[0].texts if t.get_text() == "zqxwv"]
    assert len(cells) == 1 and cells[0].get_style() == "italic"


def test_pipeline_attention_errors_name_the_fix(trec):
    pipe = make_pipeline(GloveEmbedder(), MLPClassifier(epochs=1)).fit(trec.text[:40], trec.label[:40])
    with pytest.raises(TypeError, match="MLPClassifier has no attention weights.*AttentionClassifier"):
        attention_weights(pipe, QUESTIONS)
    with pytest.raises(TypeError, match="needs a fitted sklearn Pipeline"):
        attention_weights(pipe[-1], QUESTIONS)


def test_auto_oov_keeps_unknown_words_in_sequences_and_skips_them_when_pooling(trec):
    seq = GloveEmbedder(output="sequence").fit(trec.text)
    out = seq.transform(["galileo zqxwv"])
    assert list(out.tokens[0]) == ["galileo", "zqxwv"]
    np.testing.assert_allclose(out.values[0, 1], seq.unk_vector_)
    pooled = GloveEmbedder().fit(trec.text)
    np.testing.assert_allclose(pooled.transform(["galileo zqxwv"])[0], pooled.transform(["galileo"])[0])
