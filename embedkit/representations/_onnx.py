"""ONNX Runtime inference for Hugging Face encoders on CPU: export once, cache, run.

`encoder_runner` turns a Hugging Face encoder (a model folder with safetensors weights, or an
encoder already loaded in memory) into an `EncoderRunner`, a callable
``(input_ids, attention_mask) -> hidden states`` over numpy arrays, backed by ONNX Runtime.

The export happens once per weights and settings:

* ``torch.onnx.export`` (TorchScript exporter, opset 17, dynamic batch and sequence axes) of the
  encoder loaded with eager attention, whose pattern ONNX Runtime's transformer optimizer
  recognises;
* ``onnxruntime.transformers.optimizer`` then fuses attention, embedding + layer norm,
  residual + layer norm and bias + GELU (BERT-family models). The fused graph is kept only if
  it matches the PyTorch encoder on a padded probe batch (every token's cosine >= 0.99999);
  otherwise the plain graph is kept, and it must pass the same check;
* ``dtype="int8"`` adds ONNX Runtime's dynamic quantization (int8 weights) on top.

The result lives in ``embedkit.storage.resources.home() / "onnx" / <key>``, where the key is a digest
of the weights' identity and every export setting (opset, layers, quantization, the recipe's
version, the torch / transformers / onnxruntime versions). The folder is published as every
cache folder is (`embedkit.storage.fetch.publish`: built under a temporary name, swapped in at
one rename), so a reader never sees half a folder and two processes exporting at once both end
up using one complete copy. Its ``manifest.json`` records the sha256 of the graph file; a file
that no longer matches (truncated, edited) is exported again.

Sessions run with every graph optimization (``ORT_ENABLE_ALL``), one inter-op thread and the
requested number of intra-op threads; they are shared by the process (the four most recently
used stay open, `functools.lru_cache`), never pickled.

Reuse outside `TransformerEmbedder` (e.g. the fine-tuning head's inference)::

    runner = encoder_runner(model.encoder)        # a loaded (fine-tuned) encoder module
    hidden = runner(ids, mask)                    # (B, T, hidden) float32 numpy
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import json
import logging
import os
import warnings
from pathlib import Path

import numpy as np

from .._batching import padding_mask
from ..storage.fetch import intact, publish
from ..storage.resources import weights_identity

__all__ = [
    "EncoderRunner",
    "available",
    "embedder_runner",
    "encoder_runner",
    "export",
    "module_identity",
    "require",
    "resolve_backend",
]

#: bump when the export recipe changes in a way that changes the graph
RECIPE = 1
OPSET = 17
#: per-token cosine a fused graph must keep to the PyTorch encoder on the probe batch
FUSED_MIN_COSINE = 0.99999
#: per-token cosine any exported float32 graph must keep (the backend's promise)
MIN_COSINE = 0.9999
#: ``model_type`` values whose graphs `onnxruntime.transformers.optimizer` fuses as "bert"
_BERT_LIKE = ("bert", "roberta", "xlm-roberta", "camembert", "distilbert", "electra", "mpnet")
_INSTALL = "`pip install 'embedkit[onnx]'` (or `pip install onnxruntime onnx`)"

#: ONNX Runtime sessions kept open (the most recently used), shared by the process
_SESSIONS_KEEP = 4


def available() -> bool:
    """Whether onnxruntime and onnx (needed to export) are importable, without importing them."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))


def require(why: str) -> None:
    """Raise an ImportError naming the pip install when the ONNX extra is missing."""
    if not available():
        raise ImportError(f"{why} needs onnxruntime and onnx: {_INSTALL}.")


def resolve_backend(backend: str, device: str, dtype: str, owner: str = "TransformerEmbedder") -> str:
    """``"torch"`` or ``"onnx"`` for the requested backend, the device resolved at fit and dtype.

    ``"auto"`` takes ONNX Runtime on CPU in float32 or int8 when it is installed (it was faster
    than PyTorch there, see ``pipelines/benchmarks/bench_encode.py``), PyTorch otherwise. The
    combinations refused whatever the machine (int8 with ``backend="torch"``, bfloat16 with
    ``backend="onnx"``) are the parameter table's rules (`TransformerEmbedder`), checked before
    this; what is checked here needs the resolved device (``"auto"`` may be a GPU) or the
    installed packages.
    """
    cpu = str(device).split(":")[0] == "cpu"
    if dtype == "int8":
        if not cpu:
            raise ValueError(f"{owner}(dtype='int8', device={device!r}): int8 runs on ONNX "
                             "Runtime on the CPU only; use device='cpu'.")
        require(f"{owner}(dtype='int8')")
        return "onnx"
    if backend == "onnx":
        if not cpu:
            raise ValueError(f"{owner}(backend='onnx', device={device!r}): the ONNX backend runs "
                             "on the CPU; use device='cpu', or backend='torch' for a GPU.")
        require(f"{owner}(backend='onnx')")
        return "onnx"
    if backend == "auto" and cpu and dtype == "float32" and available():
        return "onnx"
    return "torch"


# ---------------------------------------------------------------------------------------------
# identity of what is exported
# ---------------------------------------------------------------------------------------------

def module_identity(encoder) -> str:
    """Digest of a loaded encoder: its config and every tensor of its ``state_dict``."""
    import torch

    digest = hashlib.sha256()
    config = getattr(encoder, "config", None)
    if config is not None:
        digest.update(config.to_json_string(use_diff=False).encode())
    for name, tensor in sorted(encoder.state_dict().items()):
        t = tensor.detach().to("cpu").contiguous()
        digest.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return "module-sha256:" + digest.hexdigest()


def _settings(identity: str, layers, dtype: str) -> dict:
    from importlib.metadata import version

    return {"identity": identity, "layers": None if layers is None else [int(x) for x in layers],
            "dtype": dtype, "opset": OPSET, "recipe": RECIPE,
            **{name: version(name) for name in ("torch", "transformers", "onnxruntime")}}



# ---------------------------------------------------------------------------------------------
# export
# ---------------------------------------------------------------------------------------------

def _eager_copy(encoder, source: str | None, trust_remote_code: bool):
    """A float32 CPU copy of the encoder with eager attention (the pattern ORT fuses)."""
    if encoder is None:
        from transformers import AutoModel

        from ..storage.hf_folders import quiet_transformers

        with quiet_transformers():
            model = AutoModel.from_pretrained(source, use_safetensors=True, local_files_only=True,
                                              attn_implementation="eager",
                                              trust_remote_code=trust_remote_code)
    else:
        model = copy.deepcopy(encoder)
        if hasattr(model, "set_attn_implementation"):
            try:
                model.set_attn_implementation("eager")
            except (ValueError, AttributeError):  # a model without eager attention: keep its own
                pass
    return model.float().to("cpu").eval()


def _probe(vocab_size: int, lengths: tuple[int, ...], seed: int = 0):
    """A right-padded batch of random token ids with these lengths, fixed by a seed."""
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths)
    width = int(lengths.max())
    ids = rng.integers(1, max(vocab_size - 1, 2), size=(len(lengths), width)).astype(np.int64)
    mask = padding_mask(lengths, width).astype(np.int64)
    return ids * mask, mask


#: traced with one shape, checked on others: a graph that baked a shape in fails the check
_TRACE = (7, 5)
_CHECKS = ((23, 9, 2), (41, 41, 40, 17, 1))


def _min_token_cosine(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> float:
    keep = mask.astype(bool)
    a, b = a[keep].astype(np.float64), b[keep].astype(np.float64)
    cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30)
    return float(cos.min())


def _export(model, layers, dtype: str, folder: Path) -> dict:
    """Write ``model.onnx`` into ``folder``; return what the manifest records about how it was
    made (`publish` adds its size and sha256)."""
    import onnxruntime as ort
    import torch

    class Hidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            if layers is None:
                return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            states = self.inner(input_ids=input_ids, attention_mask=attention_mask,
                                output_hidden_states=True).hidden_states
            return torch.stack([states[i] for i in layers]).mean(0)

    wrapper = Hidden(model).eval()
    config = model.config
    vocab = int(getattr(config, "vocab_size", 1000))
    checks = []
    with torch.inference_mode():
        for k, lengths in enumerate(_CHECKS):
            ids, mask = _probe(vocab, lengths, seed=k + 1)
            want = wrapper(torch.from_numpy(ids), torch.from_numpy(mask)).float().numpy()
            checks.append((ids, mask, want))
    ids, mask = _probe(vocab, _TRACE)
    raw = folder / "raw.onnx"
    axes = {"batch": 0, "sequence": 1}
    dynamic = {name: {v: k for k, v in axes.items()}
               for name in ("input_ids", "attention_mask", "hidden")}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(wrapper, (torch.from_numpy(ids), torch.from_numpy(mask)), str(raw),
                          input_names=["input_ids", "attention_mask"], output_names=["hidden"],
                          dynamic_axes=dynamic, opset_version=OPSET, dynamo=False)

    def check(path: Path) -> float:
        session = ort.InferenceSession(str(path), _options(1), providers=["CPUExecutionProvider"])
        return min(_min_token_cosine(session.run(None, _feeds(session, i, m))[0], want, m)
                   for i, m, want in checks)

    record = {"fused": False}
    chosen = raw
    model_type = getattr(config, "model_type", "")
    if model_type in _BERT_LIKE and getattr(config, "num_attention_heads", None):
        fused = folder / "fused.onnx"
        try:
            from onnxruntime.transformers import optimizer

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                opt = optimizer.optimize_model(str(raw), model_type="bert", opt_level=0,
                                               num_heads=int(config.num_attention_heads),
                                               hidden_size=int(config.hidden_size))
                opt.save_model_to_file(str(fused))
            record["fusions"] = {k: v for k, v in opt.get_fused_operator_statistics().items() if v}
            cosine = check(fused)
            record["fused_cosine"] = cosine
            if cosine >= FUSED_MIN_COSINE:
                chosen, record["fused"] = fused, True
        except Exception as err:  # noqa: BLE001 - the optimizer is best effort: the plain graph stays
            record["fusion_error"] = f"{type(err).__name__}: {err}"[:300]
    if not record["fused"]:
        cosine = check(raw)
        record["cosine"] = cosine
        if cosine < MIN_COSINE:
            raise RuntimeError(f"the exported ONNX graph disagrees with the PyTorch encoder "
                               f"(min token cosine {cosine:.6f} < {MIN_COSINE})")
    else:
        record["cosine"] = record["fused_cosine"]
    if dtype == "int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantized = folder / "int8.onnx"
        with warnings.catch_warnings(), _quiet_logging():
            warnings.simplefilter("ignore")
            # per-channel 7-bit weights: on MiniLM, cosine to float32 0.99 instead of 0.91 with
            # per-tensor 8-bit ones (u8 x s8 products saturate on CPUs without VNNI). Fused
            # contrib ops carry no inferred types: their float tensors are declared float.
            quantize_dynamic(str(chosen), str(quantized), weight_type=QuantType.QInt8,
                             per_channel=True, reduce_range=True,
                             extra_options={"DefaultTensorType": 1})  # onnx.TensorProto.FLOAT
        record["int8_cosine"] = check(quantized)
        chosen = quantized
    final = folder / "model.onnx"
    os.replace(chosen, final)
    for extra in ("raw.onnx", "fused.onnx", "int8.onnx"):
        (folder / extra).unlink(missing_ok=True)
    return record


@contextlib.contextmanager
def _quiet_logging():
    """Silence the quantizer's advice, logged on the root logger at WARNING."""
    before = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(before)


def export(encoder=None, *, source: str | None = None, identity: str | None = None,
           layers=None, dtype: str = "float32", trust_remote_code: bool = False) -> Path:
    """Path of the cached ONNX export of an encoder, exporting it first if needed.

    Parameters
    ----------
    encoder : torch.nn.Module or None
        A loaded Hugging Face encoder (copied, never changed). None: load ``source``.
    source : str or None
        Hugging Face model folder (or hub id in the local Hugging Face cache) with safetensors
        weights; used when ``encoder`` is None.
    identity : str or None
        What identifies the weights (e.g. `weights_identity` of the folder); None computes
        `module_identity` of the encoder, or `weights_identity` of ``source``.
    layers : list of int or None
        None: the graph returns the last hidden state; otherwise the mean of these hidden
        states (0 is the embedding layer), computed inside the graph.
    dtype : {"float32", "int8"}, default="float32"
    trust_remote_code : bool, default=False

    Returns
    -------
    Path of the folder's ``model.onnx``.
    """
    require("exporting an encoder to ONNX")
    if encoder is None and source is None:
        raise ValueError("export() needs an encoder module or a source folder.")
    if identity is None:
        if encoder is not None:
            identity = module_identity(encoder)
        else:
            identity = weights_identity(source)
    settings = _settings(identity, layers, dtype)
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:32]
    from ..storage.resources import home

    folder = home() / "onnx" / key
    if folder.exists() and not intact(folder):
        warnings.warn(f"the cached ONNX export {folder} is incomplete or corrupt; exporting it "
                      "again.", RuntimeWarning, stacklevel=3)

    def build(tmp: Path) -> dict:
        model = _eager_copy(encoder, source, trust_remote_code)
        return {**_export(model, settings["layers"], dtype, tmp), "settings": settings}

    return publish(folder, build, "model.onnx") / "model.onnx"


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------

def _options(threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.intra_op_num_threads = int(threads)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return options


def _feeds(session, ids: np.ndarray, mask: np.ndarray) -> dict:
    """The inputs the graph declares: the exporter drops an unused one (layers=[0], the
    embedding layer, never reads the attention mask)."""
    names = {i.name for i in session.get_inputs()}
    return {k: v for k, v in (("input_ids", ids), ("attention_mask", mask)) if k in names}


def _session(path: Path, threads: int):
    """The shared session of the graph at ``path`` (a rebuilt file, newer, is opened anew)."""
    return _open_session(str(path), os.stat(path).st_mtime_ns, int(threads))


@functools.lru_cache(maxsize=_SESSIONS_KEEP)
def _open_session(path: str, mtime_ns: int, threads: int):
    """An ONNX Runtime CPU session; ``mtime_ns`` is part of the cache key only."""
    import onnxruntime as ort

    return ort.InferenceSession(path, _options(threads), providers=["CPUExecutionProvider"])


class EncoderRunner:
    """``(input_ids, attention_mask) -> hidden`` over an exported encoder (ONNX Runtime, CPU).

    ``input_ids`` and ``attention_mask`` are integer arrays ``(batch, tokens)`` (the mask may be
    None: no padding; padding must be on the right, as tokenizers and `NeuralEncoder` pad).
    Returns float32 ``(batch, tokens, hidden)``. Pickles as its path and thread count only;
    the session is opened (and shared by the process) on the first call.
    """

    def __init__(self, path: Path, num_threads: int | None = None):
        self.path = Path(path)
        self.num_threads = num_threads

    def __call__(self, input_ids, attention_mask=None, num_threads: int | None = None) -> np.ndarray:
        threads = num_threads or self.num_threads
        if threads is None:
            import torch

            threads = torch.get_num_threads()
        ids = np.ascontiguousarray(input_ids, dtype=np.int64)
        mask = (np.ones_like(ids) if attention_mask is None
                else np.ascontiguousarray(attention_mask, dtype=np.int64))
        session = _session(self.path, threads)
        out = session.run(None, _feeds(session, ids, mask))[0]
        return out if out.dtype == np.float32 else out.astype(np.float32)

    def __repr__(self) -> str:
        return f"EncoderRunner({str(self.path)!r}, num_threads={self.num_threads!r})"


def encoder_runner(encoder=None, *, source: str | None = None, identity: str | None = None,
                   layers=None, dtype: str = "float32", num_threads: int | None = None,
                   trust_remote_code: bool = False) -> EncoderRunner:
    """An ONNX Runtime runner for a Hugging Face encoder, exported once and cached.

    Parameters are those of `export`, plus ``num_threads`` (ONNX Runtime intra-op threads;
    None follows ``torch.get_num_threads()`` at each call).

    Examples
    --------
    >>> from embedkit.storage.resources import resource_path
    >>> run = encoder_runner(source=str(resource_path("all-minilm-l6-v2")))
    >>> run(np.array([[101, 7592, 102]])).shape
    (1, 3, 384)
    """
    path = export(encoder, source=source, identity=identity, layers=layers, dtype=dtype,
                  trust_remote_code=trust_remote_code)
    return EncoderRunner(path, num_threads)


def embedder_runner(embedder, *, source: str, identity: str, layers) -> EncoderRunner | None:
    """The runner of a `TransformerEmbedder` resolved to ONNX, or None to fall back to PyTorch.

    With ``backend="auto"`` and float32, an export that fails warns and returns None (the
    PyTorch path runs instead); an explicit ``backend="onnx"`` or ``dtype="int8"`` raises.
    """
    name = type(embedder).__name__
    try:
        return encoder_runner(source=source, identity=identity, layers=layers,
                              dtype="int8" if embedder.dtype == "int8" else "float32",
                              trust_remote_code=embedder.trust_remote_code)
    except Exception as err:
        reason = f"{type(err).__name__}: {str(err).splitlines()[0][:300] if str(err) else ''}"
        if embedder.backend == "auto" and embedder.dtype == "float32":
            warnings.warn(f"{name}: exporting {source} to ONNX failed ({reason}); encoding with "
                          "PyTorch instead. Pass backend='torch' to skip the attempt.",
                          RuntimeWarning, stacklevel=4)
            return None
        raise RuntimeError(f"{name}(backend={embedder.backend!r}, dtype={embedder.dtype!r}): "
                           f"exporting {source} to ONNX failed ({reason}). Use backend='torch' "
                           "(and dtype='float32' or 'bfloat16').") from err
