"""Saving a fitted fine-tuning head as a Hugging Face model folder, and loading it back
(safetensors + JSON only, nothing unpickled)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..._params import validate_params
from ...machine import resolve_device

__all__ = ["load_pretrained", "save_pretrained"]

_META = "embedkit.json"
_HEAD_WEIGHTS = "embedkit_head.safetensors"


def save_pretrained(est, path) -> Path:
    """Write ``est`` (fitted) to the folder ``path``; see `TransformerClassifier.save_pretrained`."""
    from safetensors.torch import save_file

    from ...storage.hf_folders import quiet_transformers

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    with quiet_transformers():  # its "Writing model shards" bar is not the user's business
        est.module_.encoder.save_pretrained(path)
        est.tokenizer_.save_pretrained(path)
    head = {k: v.detach().cpu().contiguous() for k, v in est.module_.state_dict().items()
            if not k.startswith("encoder.")}
    save_file(head, str(path / _HEAD_WEIGHTS))
    params = est.get_params()
    if isinstance(params["class_weight"], dict):
        params["class_weight"] = {"pairs": [[np.asarray(k).tolist(), float(v)]
                                            for k, v in params["class_weight"].items()]}
    meta = {"estimator": type(est).__name__, "params": params, "n_outputs": est.n_outputs_,
            "history": est.history_}
    if hasattr(est, "n_steps_"):  # a head fitted before the time limit existed has none
        meta.update(n_steps=est.n_steps_, out_of_time=est.out_of_time_)
    if hasattr(est, "classes_"):
        meta["classes"] = est.classes_.tolist()
        meta["classes_dtype"] = est.classes_.dtype.str if est.classes_.dtype != object else "object"
        meta["multilabel"] = bool(est.multilabel_)
        if est.multilabel_:
            meta["threshold"] = est.threshold_
    else:
        meta["y_ndim"] = est._y_ndim
        meta["target_mean"] = np.asarray(est.target_mean_).tolist()
        meta["target_scale"] = np.asarray(est.target_scale_).tolist()
    (path / _META).write_text(json.dumps(meta, indent=2, default=_json_default))
    return path


def load_pretrained(cls, path, device: str = "auto"):
    """Restore an estimator of class ``cls`` written by `save_pretrained`."""
    from safetensors.torch import load_file

    path = Path(path)
    meta_file = path / _META
    if not meta_file.exists():
        raise FileNotFoundError(
            f"{path} has no {_META}; it is not a folder written by save_pretrained. To start "
            f"from a plain Hugging Face model folder use {cls.__name__}(model={str(path)!r}).fit(...)."
        )
    meta = json.loads(meta_file.read_text())
    if meta["estimator"] != cls.__name__:
        raise ValueError(f"{path} holds a {meta['estimator']}; load it with {meta['estimator']}.load.")
    params = dict(meta["params"])
    if isinstance(params.get("class_weight"), dict) and "pairs" in params["class_weight"]:
        params["class_weight"] = {_hashable(k): v for k, v in params["class_weight"]["pairs"]}
    params.update(model=str(path.resolve()), device=device)
    est = cls(**params)
    validate_params(est)
    # the folder may come from another machine (a GPU's): the device is resolved for this one
    device = est.device_ = resolve_device(est.device)
    est.tokenizer_, encoder, est.source_ = est._load()
    module = est._build(encoder, int(meta["n_outputs"]), device)
    head = load_file(str(path / _HEAD_WEIGHTS))
    missing, unexpected = module.load_state_dict(head, strict=False)
    missing = [m for m in missing if not m.startswith("encoder.")]
    if missing or unexpected:
        raise ValueError(f"{path / _HEAD_WEIGHTS} does not match the head: missing {missing}, "
                         f"unexpected {unexpected}.")
    est.module_ = module.to(device).eval()
    est.history_ = meta.get("history", [])
    est.n_epochs_ = len(est.history_)
    if "n_steps" in meta:
        est.n_steps_, est.out_of_time_ = int(meta["n_steps"]), bool(meta["out_of_time"])
    est.dim_ = int(encoder.config.hidden_size)
    est.n_outputs_ = int(meta["n_outputs"])
    if "classes" in meta:
        est.classes_ = np.asarray(meta["classes"], dtype=meta["classes_dtype"])
        est.multilabel_ = bool(meta.get("multilabel", False))
        if est.multilabel_:
            est.threshold_ = float(meta["threshold"])
    else:
        est._y_ndim = int(meta["y_ndim"])
        if "target_mean" in meta:
            est.target_mean_ = np.asarray(meta["target_mean"], dtype=np.float32)
            est.target_scale_ = np.asarray(meta["target_scale"], dtype=np.float32)
    return est


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value
