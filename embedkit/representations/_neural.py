"""The base of pretrained neural encoders, and the CPU speed-up of their linear layers.

`NeuralEncoder` is the base of representations that run a neural network over token ids
(`TransformerEmbedder`, and any later encoder). Its `NeuralEncoder._run` hands the items to
`embedkit._batching.run_batches`, the one encode loop of the package (the fine-tuned heads and
the distillation of `DistilledEmbedder` run it too), which owns:

* ordering: items are sorted by token length (longest first), so a batch holds items of
  similar length and padding is minimal (dynamic padding: each batch is padded to its own
  longest item only);
* batch sizing: at most ``batch_size`` items and at most ``max_tokens_per_batch`` padded tokens
  per batch, so short texts go in large batches and long ones in small ones;
* ``torch.inference_mode``, the device (resolved once by ``fit`` and stored as ``device_``:
  ``"auto"`` picks cuda, then mps, then cpu), the thread count (set for the call, restored
  after) and a tqdm progress bar when ``verbose``.

The base adds a forward counter (`NeuralEncoder.forward_counts`) that tests and benchmarks
switch on to count how many times each document went through the network.

Subclasses prepare items (token id arrays) and a ``forward(ids, mask)`` callable; the loop
calls it batch by batch and hands back the outputs with the items' positions.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence

import numpy as np

from .._batching import run_batches
from ..base import Representation, progress_bars
from ..machine import batch_settings

__all__ = ["NeuralEncoder", "broadcast_mask_ok", "onednn_linears"]


def onednn_linears(network):
    """Route a CPU float32 inference model's ``nn.Linear`` layers through oneDNN, in place.

    PyTorch's CPU ``linear`` calls MKL's GEMM; oneDNN picks kernels by instruction set and is
    faster on recent x86 CPUs (measure it on yours: ``pipelines/benchmarks/bench_encode.py
    --extra`` times PyTorch with and without this routing). A linear layer followed by an exact
    GELU (the BERT-family feed-forward block) becomes one fused call. Weights are the same
    ``Parameter`` objects, so ``state_dict`` names and values do not change, and outputs agree
    with the plain model to float32 rounding. Inference only (the fused op has no gradient).

    Skipped, returning ``network`` untouched, where oneDNN is missing, where the fused op
    disagrees with ``torch.nn.functional.linear`` on a probe, or when the environment sets
    ``EMBEDKIT_ONEDNN=0``. Returns the number of layers routed.
    """
    import os

    import torch
    from torch import nn

    op = getattr(getattr(torch.ops, "mkldnn", None), "_linear_pointwise", None)
    if os.environ.get("EMBEDKIT_ONEDNN", "1") == "0" or op is None \
            or not torch.backends.mkldnn.is_available():
        return 0
    try:
        with torch.inference_mode():
            gen = torch.Generator().manual_seed(0)
            x, w, b = (torch.randn(s, generator=gen) for s in ((3, 5, 8), (4, 8), (4,)))
            ok = torch.allclose(op(x, w, b, "gelu", [], "none"),
                                nn.functional.gelu(nn.functional.linear(x, w, b)), atol=1e-5)
    except RuntimeError:
        ok = False
    if not ok:
        return 0

    class OneDNNLinear(nn.Module):
        def __init__(self, linear: nn.Linear, gelu: bool):
            super().__init__()
            self.weight, self.bias = linear.weight, linear.bias
            self.args = ("gelu", [], "none") if gelu else ("none", [], "")

        def forward(self, x):
            return op(x, self.weight, self.bias, *self.args)

    routed = 0
    for module in list(network.modules()):
        for name, child in list(module.named_children()):
            if type(child) is not nn.Linear or child.weight.dtype != torch.float32:
                continue
            act = getattr(module, "intermediate_act_fn", None)
            gelu = (name == "dense" and type(act).__name__ == "GELUActivation"
                    and getattr(act, "act", None) is nn.functional.gelu)
            if gelu:
                module.intermediate_act_fn = nn.Identity()
            setattr(module, name, OneDNNLinear(child, gelu))
            routed += 1
    return routed


def broadcast_mask_ok(network) -> bool:
    """Whether ``network`` takes a ``(B, 1, 1, T)`` boolean attention mask (True: a real token)
    and gives what its ``(B, T)`` mask gives, checked once per loaded model on a probe batch.

    Hugging Face models turn a 2-D mask into their attention's form and, for SDPA, ask whether any
    token is padded (``mask.all()``): a wait for the device in every forward pass, which stops
    the encode loop from queueing the next batch while the device runs this one. A 4-D mask is
    taken as it is (recent transformers, SDPA attention); where it is not, or gives other
    vectors (eager attention adds the mask), the 2-D mask stays.
    """
    found = getattr(network, "_embedkit_broadcast_mask", None)
    if found is not None:
        return found
    import torch

    ok = False
    try:
        device = next(network.parameters()).device
        vocab = int(getattr(network.config, "vocab_size", 1000))
        gen = torch.Generator().manual_seed(0)
        ids = torch.randint(5, max(6, min(vocab, 1000)), (2, 6), generator=gen).to(device)
        mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2], device=device)
        with torch.inference_mode():
            want = network(input_ids=ids, attention_mask=mask.long()).last_hidden_state
            got = network(input_ids=ids, attention_mask=mask[:, None, None, :]).last_hidden_state
        real = mask[..., None].expand_as(want)
        ok = bool(torch.allclose(got[real].float(), want[real].float(), rtol=1e-2, atol=1e-3))
    except Exception:  # noqa: BLE001 - any failure keeps the 2-D mask
        ok = False
    network._embedkit_broadcast_mask = ok
    return ok


class NeuralEncoder(Representation):
    """Base of pretrained neural encoders: batching, padding, devices, threads, progress.

    Subclasses define the parameters ``batch_size``, ``max_tokens_per_batch``, ``device``,
    ``num_threads`` and ``verbose``, store the device resolved at ``_fit`` as ``device_``
    (`embedkit.machine.resolve_device`) and the batch settings for it as ``batch_size_`` /
    ``max_tokens_per_batch_`` ("auto" resolved by `embedkit.machine.batch_settings`), and call
    `_run`.
    """

    #: set to a ``collections.Counter`` to count network passes per document text
    forward_counts: collections.Counter | None = None
    #: it reads sentences: a table's text columns reach it joined into one text per row, one pass
    #: instead of one per column (`embedkit.representations.table.on_table`)
    joins_fields = True

    def _resolve_batches(self) -> None:
        """``batch_size_`` / ``max_tokens_per_batch_``: the parameters, "auto" resolved for
        ``device_`` (`batch_settings`)."""
        rows, tokens = batch_settings(self.device_)
        self.batch_size_ = rows if self.batch_size == "auto" else int(self.batch_size)
        self.max_tokens_per_batch_ = (tokens if self.max_tokens_per_batch == "auto"
                                      else self.max_tokens_per_batch)

    def _run(self, items, forward: Callable, pad_id: int,
             owners: Sequence[int] | Callable[[], np.ndarray] | None = None,
             texts: Sequence[str] | None = None) -> list:
        """Run ``forward(ids, mask)`` over ``items`` (1-D int arrays, or `Chunks` of them) with
        `run_batches`, at the batch settings resolved for ``device_`` (``batch_size_``,
        ``max_tokens_per_batch_``).

        ``forward`` gets int64 tensors ``(B, T)`` on ``device_`` (``mask`` is None when no row is
        padded) and returns anything; this returns, per batch, ``(indices, output)``.
        ``owners[i]`` is the document of item ``i`` (or a callable giving that array once the
        loop has run: chunks may be produced during it) and ``texts`` the documents, used only by
        the forward counter.
        """
        counts = type(self).forward_counts
        seen: list = []
        self._resolve_batches()  # the parameters as they are now (set_params after fit counts)
        batches = run_batches(items, forward, device=self.device_, batch_size=self.batch_size_,
                              max_tokens=self.max_tokens_per_batch_, pad_id=pad_id,
                              num_threads=self.num_threads,
                              progress=progress_bars(self.verbose), desc=type(self).__name__,
                              on_batch=seen.append if counts is not None else None)
        if counts is not None and texts is not None:
            owner = owners() if callable(owners) else owners
            owner = None if owner is None else np.asarray(owner, dtype=np.int64)
            for idx in seen:
                counts.update(texts[d] for d in (idx if owner is None else np.unique(owner[idx])))
        return batches
