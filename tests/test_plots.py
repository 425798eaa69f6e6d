"""embedkit.plots: the attention heat map (the score and time charts and the family colours are
tested with the HTML report, in `test_report.py`; the training-history chart in
`test_heads_base.py`)."""

from __future__ import annotations

import pytest

from embedkit.heads import AttentionClassifier
from embedkit.plots import attention_heatmap


def test_attention_heatmap_writes_png(tmp_path, negation):
    (X, y), _ = negation
    head = AttentionClassifier(embedding_dim=8, epochs=2, early_stopping=False).fit(X[:100], y[:100])
    pairs = head.attention_weights(X[:3], return_tokens=True)
    assert [t for t, _ in pairs] == [list(t) for t in X.tokens[:3]]
    path = tmp_path / "attention.png"
    fig = attention_heatmap([t for t, _ in pairs], [w for _, w in pairs], path, title="negation")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 1000
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts[: len(pairs[0][0])] == pairs[0][0]
    single = attention_heatmap(["not", "good"], [0.7, 0.3], tmp_path / "one.png")
    assert [t.get_text() for t in single.axes[0].texts] == ["not", "good"]
    with pytest.raises(ValueError, match="2 words but 3 weights"):
        attention_heatmap(["not", "good"], [0.2, 0.3, 0.5])
