"""Token-id batches for the fine-tuning head: dynamic padding and length-grouped shuffling."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..._batching import length_sorted_batches, pad_rows, padding_mask

__all__ = ["LengthGroupedBatches", "pad_token_ids"]


def pad_token_ids(rows, pad_id: int, multiple: int = 1) -> dict:
    """Token-id rows (int arrays) padded with ``pad_id`` to the longest (rounded up to a
    ``multiple`` of tokens) -> ``{"input_ids", "attention_mask"}`` int64 tensors, as Hugging Face
    encoders take them."""
    longest = max((len(r) for r in rows), default=1)
    width = None if multiple == 1 else -(-max(longest, 1) // multiple) * multiple
    ids, lengths = pad_rows(rows, value=pad_id, dtype=np.int64, width=width)
    mask = padding_mask(lengths, ids.shape[1]).astype(np.int64)
    return {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask)}


def collate_token_ids(items, pad_id: int, multiple: int = 1):
    """Collate ``(token ids, target)`` rows of a `HeadDataset` into a dynamically padded batch
    (its width rounded up to a ``multiple`` of tokens)."""
    rows, ys = zip(*items, strict=True)
    return pad_token_ids(rows, pad_id, multiple), torch.as_tensor(np.asarray(ys))


class LengthGroupedBatches(torch.utils.data.Sampler):
    """Shuffled mini-batches of similar lengths, so dynamic padding wastes little compute.

    Each epoch: shuffle the rows, sort each window of ``window`` batches' worth of rows by
    length (longest first, `embedkit._batching.length_sorted_batches`), cut it into batches and
    shuffle the order of all batches. Seeded by ``generator``.
    """

    def __init__(self, lengths, batch_size: int, generator: torch.Generator, window: int = 50):
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.batch_size = int(batch_size)
        self.generator = generator
        self.window = int(window)

    def __len__(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)

    def __iter__(self):
        bs = self.batch_size
        perm = torch.randperm(len(self.lengths), generator=self.generator).numpy()
        batches = []
        for start in range(0, len(perm), bs * self.window):
            chunk = perm[start:start + bs * self.window]
            batches += [chunk[b].tolist() for b in length_sorted_batches(self.lengths[chunk], bs)]
        for i in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[i]
