"""A uniform random sample of a stream of frames' rows, drawn as they stream: what
`embedkit.data.reading.read_table` reads of a file its caller cannot hold."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

__all__ = ["sample_frames"]


def sample_frames(frames: Iterator[pd.DataFrame], rows: int, seed: int) -> list[pd.DataFrame]:
    """``rows`` of ``frames``' rows drawn uniformly without replacement, as one frame (none for
    no rows): each row gets a random key, and the rows of the ``rows`` least keys are kept (a
    reservoir: once it is full, a row whose key is above the largest kept never enters), in
    their order."""
    rng = np.random.default_rng(seed)
    kept, keys, total, bound = [], [], 0, 1.0
    pending = 0
    for frame in frames:
        total += len(frame)
        drawn = rng.random(len(frame))
        chosen = drawn < bound
        kept.append(frame[chosen])
        keys.append(drawn[chosen])
        pending += int(chosen.sum())
        if pending > rows + rows // 4:  # trim to the least keys: memory stays near the sample's
            kept, keys, bound = _least(kept, keys, rows)
            pending = rows
    if not total:
        return []
    kept, keys, _ = _least(kept, keys, rows)
    out = kept[0].sort_index()
    out.attrs["file_rows"] = total
    return [out]


def _least(frames: list, keys: list, rows: int):
    """The rows of the ``rows`` least keys, as one frame and its keys, and the largest kept key."""
    frame, key = pd.concat(frames), np.concatenate(keys)
    if len(key) > rows:
        order = np.argpartition(key, rows - 1)[:rows]
        frame, key = frame.iloc[order], key[order]
    return [frame], [key], float(key.max()) if len(key) >= rows else 1.0
