"""The fine-tuning head's torch module: a pretrained encoder, pooling and a small head, plus the
freezing of encoder parameters that ``fine_tune`` asks for."""

from __future__ import annotations

import torch
from torch import nn

from ...sequences import masked_pool
from .._torch import masked_softmax, mlp

__all__ = ["FineTuneModule", "freeze_encoder"]


class FineTuneModule(nn.Module):
    """Encoder + pooling + head. ``forward(input_ids, attention_mask)`` returns float32 outputs.

    Submodules named in ``frozen`` (all their parameters frozen) stay in eval mode while the
    rest trains, so a frozen encoder or frozen lower layers behave exactly as at inference
    (no dropout). With ``precision="bf16"`` the encoder and head run under bf16 autocast (on
    any device; the weights and the optimizer stay float32), with ``"fp32"`` in float32.
    """

    def __init__(self, encoder, n_outputs: int, head: str, pooling: str, dropout: float,
                 frozen: tuple[str, ...] = (), precision: str = "fp32"):
        super().__init__()
        self.encoder = encoder
        hidden = int(encoder.config.hidden_size)
        self.pooling = pooling
        self.frozen = tuple(frozen)
        self.precision = precision
        self.attention = nn.Linear(hidden, 1) if head == "attention" else None
        self.dropout = nn.Dropout(dropout)
        hidden_layers = (hidden,) if head == "mlp" else ()
        self.head = mlp(hidden, hidden_layers, n_outputs, "gelu", dropout)

    def train(self, mode: bool = True):
        super().train(mode)
        for name in self.frozen:
            self.get_submodule(name).train(False)
        return self

    def _autocast(self, device: torch.device):
        precision = getattr(self, "precision", None)
        if precision is None:  # pickled before ``precision``: its ``autocast`` flag, CUDA only
            enabled = bool(getattr(self, "autocast", False)) and device.type == "cuda"
        else:
            enabled = precision == "bf16"
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)

    def features(self, input_ids, attention_mask):
        """``(hidden states (B, T, H), pooled (B, H), mask (B, T))``, float32."""
        mask = attention_mask.bool()
        with self._autocast(input_ids.device):
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            if self.attention is not None:
                weights = masked_softmax(self.attention(hidden).squeeze(-1).float(), mask)
                pooled = (weights.unsqueeze(-1) * hidden.float()).sum(dim=1)
            elif self.pooling == "cls":
                pooled = hidden[:, 0]
            else:
                pooled = masked_pool(hidden.float(), mask, "mean")
        return hidden.float(), pooled.float(), mask

    def forward(self, input_ids, attention_mask):
        _, pooled, _ = self.features(input_ids, attention_mask)
        with self._autocast(input_ids.device):
            out = self.head(self.dropout(pooled))
        return out.float()


_STACK_NAMES = ("layer", "layers", "h", "block", "blocks")


def _layer_list(encoder) -> tuple[str, nn.ModuleList]:
    """The encoder's stack of Transformer blocks: the longest ``ModuleList`` named layer(s)."""
    n = getattr(encoder.config, "num_hidden_layers", None)
    best = None
    for name, module in encoder.named_modules():
        stack = isinstance(module, nn.ModuleList) and name.split(".")[-1] in _STACK_NAMES
        if stack and (best is None or len(module) > len(best[1]) or len(module) == n):
            best = (name, module)
    if best is None:
        raise ValueError(
            f"fine_tune='last_k' could not find the layer stack of {type(encoder).__name__}; "
            "use fine_tune='full' or 'none' for this model."
        )
    return best


def freeze_encoder(encoder, fine_tune: str, k: int, owner: str, model: str) -> tuple[str, ...]:
    """Freeze encoder parameters as ``fine_tune`` says; return the names of the fully frozen
    submodules (prefixed ``encoder``), which `FineTuneModule` keeps in eval mode.

    ``owner`` (the estimator's class name) and ``model`` only word the error for a ``k`` larger
    than the encoder's stack of blocks.
    """
    if fine_tune == "full":
        return ()
    names = [n for n, _ in encoder.named_parameters()]
    if fine_tune == "none":
        frozen = set(names)
    else:
        _, stack = _layer_list(encoder)
        if k > len(stack):
            raise ValueError(f"{owner}(k={k}) but {model!r} has "
                             f"{len(stack)} layers; use k <= {len(stack)} or fine_tune='full'.")
        first = next(stack[len(stack) - k].parameters())
        cut = next(i for i, (_, p) in enumerate(encoder.named_parameters()) if p is first)
        frozen = set(names[:cut])  # embeddings and every block below the top k
    for n, p in encoder.named_parameters():
        if n in frozen:
            p.requires_grad_(False)
    modules = []
    for mname, module in encoder.named_modules():
        params = [n for n, _ in module.named_parameters(prefix=mname)]
        covered = any(mname.startswith(m + ".") for m in modules)
        if params and mname and not covered and all(p in frozen for p in params):
            modules.append(mname)
    if fine_tune == "none":
        modules = [""]
    return tuple("encoder" + (f".{m}" if m else "") for m in modules)
