"""What a Hugging Face model folder must hold, and loading one quietly: the checks that run
before transformers or sentence-transformers reads a folder (so a bad folder is said in words,
not as a failure deep inside them), the finite-weights check after a load, the position limit
of a model's config, and a block that silences transformers' progress bars and info logs.

`embedkit.storage.resources` checks every model folder it publishes and loads with these; the
representations and heads that load a folder themselves (SetFit, the distilled encoder, the
ONNX export) use them too.
"""

from __future__ import annotations

import os
from pathlib import Path

from .fetch import ResourceNotFound

__all__ = ["TOKENIZER_FILES", "check_finite_weights", "check_model_folder", "hub_reachable",
           "looks_like_path", "max_tokens", "quiet_transformers"]


#: model types whose position ids start after the padding id (RoBERTa's scheme): two positions
#: of ``max_position_embeddings`` are never a token's
OFFSET_POSITIONS = ("roberta", "xlm-roberta", "camembert", "mpnet")


def max_tokens(config) -> int | None:
    """Most tokens (special ones included) a Hugging Face model's positions take, from its
    config: ``max_position_embeddings``, less the two RoBERTa-style models reserve (e.g. 512
    for all-mpnet-base-v2's 514); None when the config does not say."""
    limit = getattr(config, "max_position_embeddings", None)
    if not limit:
        return None
    return int(limit) - (2 if getattr(config, "model_type", "") in OFFSET_POSITIONS else 0)


def check_finite_weights(encoder, source: str) -> None:
    """A ValueError naming the model when its weights hold NaN or infinity (a damaged file whose
    header is intact), instead of NaN vectors later. One pass over the weights (milliseconds)."""
    import torch

    with torch.no_grad():  # one pass per tensor: NaN and infinity survive a sum
        names, sums = zip(*((name, p.sum()) for name, p in encoder.named_parameters()), strict=True)
        finite = torch.isfinite(torch.stack(sums).float())
    bad = [name for name, ok in zip(names, finite.tolist(), strict=True) if not ok]
    if bad:
        raise ValueError(f"the weights of {source} hold NaN or infinity ({len(bad)} tensor(s), e.g. "
                         f"{bad[0]}): the weights file is damaged; download or save the model again.")


TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model",
                    "sentencepiece.bpe.model", "tokenizer.model")


def check_model_folder(folder: Path) -> None:
    """A ResourceNotFound naming what a local model folder lacks, or the weights file that is
    corrupt, before transformers fails on it with an unrelated message."""
    fix = ("A model folder is what save_pretrained writes: config.json, *.safetensors weights and "
           "the tokenizer's files (tokenizer.json or vocab.txt, ...).")
    weights = sorted(folder.glob("*.safetensors"))
    if not weights:
        raise ResourceNotFound(
            f"{folder} has no .safetensors weights; embedkit does not unpickle .bin weights. "
            "Convert them once with transformers: AutoModel.from_pretrained(path)"
            ".save_pretrained(path, safe_serialization=True)."
        )
    if not (folder / "config.json").is_file():
        raise ResourceNotFound(f"{folder} has no config.json, so it is not a Hugging Face model "
                               f"folder. {fix}")
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise ResourceNotFound(f"{folder} has no tokenizer files (none of "
                               f"{', '.join(TOKENIZER_FILES)}). {fix}")
    from safetensors import safe_open

    for path in weights:
        try:
            with safe_open(str(path), framework="numpy"):
                pass  # reads and checks the header: enough to catch a corrupt or truncated file
        except Exception as err:  # noqa: BLE001 - safetensors raises its own error type
            raise ValueError(
                f"the weights file {path} is corrupt or truncated ({err}); download or save the "
                "model again."
            ) from None


def looks_like_path(model: str) -> bool:
    """Whether ``model`` names a folder on disk (``./x``, ``/x``, ``~/x``, ``a/b/c``) rather than
    a hub name such as ``sentence-transformers/all-MiniLM-L6-v2``."""
    return (model.startswith((".", "/", "~", "\\")) or model.count("/") > 1
            or (os.sep != "/" and os.sep in model))


def hub_reachable(timeout: float = 2.0) -> bool:
    """Whether trying the Hugging Face hub makes sense (fails fast instead of retrying)."""
    if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0") or \
            os.environ.get("TRANSFORMERS_OFFLINE", "") not in ("", "0"):
        return False
    if os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy"):
        return True  # the proxy decides; let huggingface_hub try
    import socket

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").split("://")[-1].split("/")[0]
    try:
        socket.create_connection((endpoint, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


class quiet_transformers:
    """Silence transformers' per-load progress bar and info logging for the duration."""

    def __enter__(self):
        from transformers.utils import logging as hf_logging

        self._level = hf_logging.get_verbosity()
        self._bars = hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        return self

    def __exit__(self, *exc):
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity(self._level)
        if self._bars:
            hf_logging.enable_progress_bar()
        return False
