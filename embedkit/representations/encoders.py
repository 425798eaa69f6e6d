"""Hugging Face encoders loaded for inference, shared by every encoder of the package.

`load_encoder` gives the tokenizer and network of a model (a named resource, a folder or a hub
id) for one device and dtype, loaded once per process: `TransformerEmbedder`, its clones in a
grid search and the distillation of `DistilledEmbedder` use one copy. `special_tokens` says
which token ids the tokenizer puts around a text (e.g. ``[CLS]`` / ``[SEP]``), for encoders that
build their own windows of token ids.
"""

from __future__ import annotations

import functools

from ..storage.resources import load_transformer
from ._neural import onednn_linears

__all__ = ["load_encoder", "special_tokens"]


# Loaded models are shared by every embedder of the process (clones in a grid search, folds):
# inference only, never trained in place, so sharing is safe; the two most recent stay loaded.
@functools.lru_cache(maxsize=2)
def load_encoder(model: str, trust_remote_code: bool, device: str, dtype: str):
    """(tokenizer, model, source) for inference with these settings, loaded once per process.

    ``device`` is a resolved device (`embedkit.machine.resolve_device`); ``dtype`` is
    ``"float32"`` or ``"bfloat16"``. A CPU float32 model runs its linear layers through oneDNN
    (`onednn_linears`). The model is shared: never train it in place.

    Examples
    --------
    >>> tokenizer, network, source = load_encoder("all-minilm-l6-v2", False, "cpu", "float32")
    >>> network.config.hidden_size, load_encoder("all-minilm-l6-v2", False, "cpu", "float32")[1] is network
    (384, True)
    """
    tokenizer, encoder, source = load_transformer(model, trust_remote_code=trust_remote_code)
    if dtype == "bfloat16":
        import torch

        encoder = encoder.to(torch.bfloat16)
    encoder = encoder.to(device)
    if device == "cpu" and dtype == "float32":
        onednn_linears(encoder)
    return tokenizer, encoder, source


def special_tokens(tokenizer) -> tuple[list[int], list[int]]:
    """Special token ids the tokenizer puts before and after a text (e.g. [CLS] / [SEP]).

    Examples
    --------
    >>> special_tokens(load_encoder("all-minilm-l6-v2", False, "cpu", "float32")[0])
    ([101], [102])
    """
    plain = list(tokenizer("hello", add_special_tokens=False)["input_ids"])
    full = list(tokenizer("hello", add_special_tokens=True)["input_ids"])
    for cut in range(len(full) - len(plain) + 1):
        if full[cut:cut + len(plain)] == plain:
            return full[:cut], full[cut + len(plain):]
    return [], []  # pragma: no cover - a tokenizer that rewrites the text itself
