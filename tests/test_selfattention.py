"""SelfAttentionClassifier / SelfAttentionRegressor on their own; the behaviour they share with the
other sequence heads (masking, attention weights, seeds, errors) is in `test_sequence_heads.py`."""

from __future__ import annotations

import numpy as np
import pytest
from _sequence_data import TINY, random_sequences

from embedkit.heads import SelfAttentionClassifier
from embedkit.sequences import Sequences


def test_learned_positions_reject_longer_documents_at_predict(labels):
    head = SelfAttentionClassifier(d_model=8, nhead=2, positional="learned", max_length=7, **TINY)
    head.fit(random_sequences(), labels)
    longer = Sequences(np.ones((2, 9, 6), np.float32), [9, 2])
    with pytest.raises(ValueError, match="max_length=7"):
        head.predict(longer)
