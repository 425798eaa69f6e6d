"""Pretrained Transformer encoders (Hugging Face ``AutoModel``) as feature extractors.

Document vectors (cls / mean / max pooling over the last layer or a mean of chosen layers) or
token-level vectors as `Sequences` (word pieces, or pooled to words). Long documents are
truncated or split into overlapping windows (`embedkit.representations._windows`). Batching,
sorting by length, dynamic padding, ``torch.inference_mode``, device, threads and the progress
bar live in the one encode loop (`embedkit._batching.run_batches`, through `NeuralEncoder`); the
model is loaded once per process (`embedkit.representations.encoders`); on the CPU an ONNX
Runtime graph may run it (`embedkit.representations._onnx`).
"""

from __future__ import annotations

import os
import warnings
from typing import ClassVar

import numpy as np

from .._batching import chunk_bounds
from .._params import CacheSpec, Device, Layers, Rule, StrOptions, positive_int
from ..base import store_params
from ..data.documents import CHARS_PER_TOKEN
from ..machine import on_accelerator, resolve_device
from ..sequences import Sequences, masked_pool
from ..storage.hf_folders import max_tokens
from ..storage.resources import weights_identity
from . import _onnx, encoders
from ._neural import NeuralEncoder, broadcast_mask_ok
from ._windows import DocumentWindows

__all__ = ["TransformerEmbedder"]


class TransformerEmbedder(NeuralEncoder):
    """Pretrained Transformer encoder as a scikit-learn transformer (feature extraction).

    Parameters
    ----------
    model : str, default="all-minilm-l6-v2"
        A named resource (the packaged sentence-transformers all-MiniLM-L6-v2, offline), a local
        Hugging Face model folder (safetensors weights), or a hub id (only where the network
        allows; offline it fails fast with what to install or pass).
    pooling : {"mean", "cls", "max"}, default="mean"
        How token vectors become one document vector (masked: padding never counts). Mean
        pooling of all-MiniLM-L6-v2 is the sentence-transformers model's own pooling.
    layers : "last" or list of int, default="last"
        Use the last hidden layer, or the mean of the listed hidden layers (0 is the embedding
        layer, -1 the last).
    normalize : bool, default=False
        L2-normalise pooled vectors (sentence-transformers models that end in ``Normalize``).
    max_length : int, default=256
        Tokens per window, special tokens included (capped by the model's position limit).
    long_documents : {"truncate", "window"}, default="truncate"
        Longer documents are truncated (`n_truncated_` counts them), or cut into overlapping
        windows whose vectors are pooled (mean/cls: length-weighted mean of the windows; max:
        max) and, for sequence output, stitched back into one sequence.
    stride : int or None, default=None
        Tokens shared by consecutive windows; None means a quarter of a window.
    output : {"pooled", "sequence"}, default="pooled"
        ``"sequence"`` gives contextual token vectors as `Sequences`, with tokens attached.
    word_pooling : {None, "mean", "first"}, default=None
        For sequence output: None keeps word pieces (with the special tokens the model sees,
        e.g. ``[CLS]``/``[SEP]``); "mean" / "first" pool the pieces of each word into one vector
        per word (special tokens dropped), tokens being the words of the text.
    batch_size : int or "auto", default="auto"
        Most texts per forward pass. Texts are sorted by token length first, so a batch holds
        texts of about the same length and is padded only to its longest. "auto" resolves at
        `fit` for the device (`embedkit.machine.batch_settings`): 32 on a CPU, 512 on a CUDA
        GPU, 256 on MPS.
    max_tokens_per_batch : int, None or "auto", default="auto"
        Most padded tokens per forward pass. None: no bound. "auto": 2,048 on a CPU (8 texts of
        256 tokens), where larger batches only add padding
        (``pipelines/benchmarks/bench_encode.py --batches`` times other settings; figures in
        ``pipelines/benchmarks/results/defaults.md``); on a CUDA GPU 2,048 per GiB of its memory
        (16,384 to 131,072; ``pipelines/benchmarks/bench_gpu.py`` measures it); 16,384 on MPS.
        On a GPU, tokenizing overlaps the forward passes (`embedkit._batching.run_batches`).
    device : {"auto", "cpu", "cuda", "mps"}, default="auto"
    num_threads : int or None, default=None
        torch CPU threads during encoding (restored afterwards); None keeps torch's setting.
    dtype : {"float32", "bfloat16", "int8"}, default="float32"
        bfloat16 (PyTorch backend: the weights in bf16) halves memory and is faster on GPUs
        (``pipelines/benchmarks/bench_gpu.py``) and CPUs with native bf16
        (AVX512-BF16, AMX), slower on CPUs without (``pipelines/benchmarks/bench_encode.py --bf16``
        times it on yours); vectors differ slightly from float32.
        int8 (ONNX backend, CPU; opt-in) quantizes the weights dynamically (ONNX Runtime's
        ``quantize_dynamic``, per-channel 7-bit weights): vectors move further from float32 than
        bfloat16's and a downstream classifier can lose a little accuracy
        (``pipelines/benchmarks/int8_accuracy.py`` measures both). Outputs are always float32.
    backend : {"auto", "torch", "onnx"}, default="auto"
        Who runs the network. "onnx": ONNX Runtime on the CPU, over a graph exported once from
        the safetensors weights and cached in ``embedkit.storage.resources.home() / "onnx"`` (see
        `embedkit.representations._onnx`; needs ``pip install 'embedkit[onnx]'``). "torch":
        PyTorch (any device, bfloat16). "auto": ONNX Runtime on CPU in float32 / int8 when it is
        installed, PyTorch otherwise, and PyTorch if the export fails (with a
        warning). Both backends give the same vectors to float32 rounding (cosine >= 0.9999,
        checked on a probe batch at export), so ``backend`` is not part of the embedding cache
        key, as ``batch_size`` and ``device`` are not.
    trust_remote_code : bool, default=False
        Run model code shipped with a hub model. Off unless you trust its author.
    verbose : int, default=0
        1: a progress bar when stderr is a terminal; 2: always.
    cache : None, "memory", "disk" or path, default=None
        Embedding cache (`embedkit.cache`): with it, each document is encoded once across
        clones, folds, grid-search candidates and runs (disk).

    Attributes
    ----------
    dim_ : int
        Vector size (the model's hidden size).
    source_ : str
        The folder or hub id the weights came from.
    weights_id_ : str
        Digest of the model files (part of the cache key).
    backend_ : {"torch", "onnx"}
        The backend ``backend`` resolved to.
    device_ : str
        The device ``device`` resolved to at `fit` (e.g. ``"cpu"``, ``"cuda"``): every
        `transform` runs there.
    batch_size_, max_tokens_per_batch_ : int (or None)
        The batch settings in use: the parameters, "auto" resolved for ``device_``.
    max_length_ : int
        Effective window length.
    n_truncated_ : int
        Documents truncated by the last `transform` (only documents actually encoded, i.e. not
        served by the cache).

    Notes
    -----
    The model is loaded by `fit` and shared by all embedders of the process that use the same
    model (a grid search loads it once). Pickling a fitted embedder does **not** store the
    weights: ``__getstate__`` keeps ``model``, ``source_`` and ``weights_id_`` and drops the
    network and tokenizer, which are reloaded from ``model`` (by name, folder or hub id) at the
    first `transform` after unpickling; a warning is raised if the reloaded files differ from
    the recorded digest. `clone` copies parameters only and loads nothing.

    Examples
    --------
    >>> emb = TransformerEmbedder().fit(["a first text"])
    >>> emb.transform(["Hello world", "Bonjour"]).shape
    (2, 384)
    """

    _outputs = ("pooled", "sequence")
    _outputs_note = ("Transformers give document vectors (pooled) or token vectors (sequence); "
                     "for token ids to fine-tune, use the fine-tuning head.")
    _feature_prefix = "dim"
    # the weights digest identifies the model; both backends give the same vectors (see backend)
    _cache_exclude = ("model", "trust_remote_code", "backend")
    _parameter_constraints: ClassVar[dict] = {
        "model": [str, os.PathLike],
        "pooling": [StrOptions({"mean", "cls", "max"})],
        "layers": [StrOptions({"last"}), Layers()],  # against the model's depth: at fit
        "normalize": ["boolean"],
        "max_length": [positive_int(4)],  # room for the special tokens; the model's limit at fit
        "long_documents": [StrOptions({"truncate", "window"})],
        "stride": [None, positive_int(0)],  # below the window's text tokens: checked at transform
        "output": [StrOptions({"pooled", "sequence"})],
        "word_pooling": [None, StrOptions({"mean", "first"})],
        "batch_size": [StrOptions({"auto"}), positive_int()],
        "max_tokens_per_batch": [None, StrOptions({"auto"}), positive_int()],
        "device": [Device()],
        "num_threads": [None, positive_int()],
        "dtype": [StrOptions({"float32", "bfloat16", "int8"})],
        "backend": [StrOptions({"auto", "torch", "onnx"})],  # against device: at fit
        "trust_remote_code": ["boolean"],
        "verbose": ["verbose"],
        "cache": [CacheSpec()],
    }
    _parameter_rules = (
        Rule(("word_pooling", "output"), lambda wp, output: wp is None or output == "sequence",
             "word_pooling must be None unless output='sequence' (it pools the word pieces of "
             "each word into one vector)", bad={"word_pooling": "mean", "output": "pooled"}),
        Rule(("dtype", "backend"), lambda dtype, backend: dtype != "int8" or backend != "torch",
             "int8 runs on ONNX Runtime only; use backend='onnx' (or 'auto'), or dtype='float32'",
             bad={"dtype": "int8", "backend": "torch"}),
        Rule(("backend", "dtype"), lambda backend, dtype: backend != "onnx" or dtype != "bfloat16",
             "the ONNX backend runs float32 or int8; use backend='torch' for bfloat16",
             bad={"backend": "onnx", "dtype": "bfloat16"}),
    )

    def __init__(self, model: str = "all-minilm-l6-v2", pooling: str = "mean", layers="last",
                 normalize: bool = False, max_length: int = 256, long_documents: str = "truncate",
                 stride: int | None = None, output: str = "pooled", word_pooling: str | None = None,
                 batch_size: int | str = "auto", max_tokens_per_batch: int | str | None = "auto",
                 device: str = "auto", num_threads: int | None = None, dtype: str = "float32",
                 backend: str = "auto", trust_remote_code: bool = False, verbose: int = 0, cache=None):
        store_params(self, locals())

    def _layer_indices(self) -> list[int] | None:
        if self.layers == "last":
            return None
        n = int(self._network.config.num_hidden_layers) + 1  # + embedding layer
        out = []
        for layer in self.layers:
            if not isinstance(layer, (int, np.integer)) or not -n <= layer < n:
                raise ValueError(f"layers={self.layers!r}: {layer!r} is not a hidden layer of this "
                                 f"model, which has layers 0..{n - 1} (or -{n}..-1).")
            out.append(int(layer) % n)
        return out

    def ready(self) -> bool:
        """Whether the model is on this machine (a named resource fetched or installed)."""
        from ..storage.resources import RESOURCES, present

        return str(self.model) not in RESOURCES or present(str(self.model))

    def prepare(self) -> None:
        """Fetch the model if it is a named resource not fetched yet (once, kept on disk)."""
        from ..storage.resources import RESOURCES, fetch

        if str(self.model) in RESOURCES:
            fetch(str(self.model))

    # -- model ------------------------------------------------------------------------------
    def _reach(self) -> int | None:
        """Truncating, it reads ``max_length`` tokens: no more than ``CHARS_PER_TOKEN`` times as
        many characters; in windows, the whole document (to the base class's bound)."""
        if self.long_documents == "truncate":
            return int(self.max_length) * CHARS_PER_TOKEN
        return super()._reach()

    def _fit(self, docs, y=None):
        device = resolve_device(self.device)
        backend = _onnx.resolve_backend(self.backend, device, self.dtype)
        tokenizer, network, source = encoders.load_encoder(
            self.model, bool(self.trust_remote_code), device, self._torch_dtype())
        self._tokenizer, self._network = tokenizer, network
        self.device_ = device  # resolved once: every transform runs there
        self._resolve_batches()
        self.source_ = source
        self.weights_id_ = weights_identity(source, network)
        config = network.config
        self.dim_ = int(config.hidden_size)
        self.max_length_ = int(min(self.max_length, max_tokens(config) or self.max_length))
        self._layer_indices()
        self._runner = self._open_runner(backend, source)
        self.backend_ = "torch" if self._runner is None else "onnx"
        self.n_truncated_ = 0

    def _open_runner(self, backend: str, source: str):
        """The ONNX Runtime runner (exported on first use), or None for PyTorch."""
        if backend != "onnx":
            return None
        layers = self._layer_indices()
        if layers is not None and set(layers) == {self._network.config.num_hidden_layers}:
            layers = None  # only the last layer: the graph of layers="last"
        return _onnx.embedder_runner(self, source=source, identity=self.weights_id_, layers=layers)

    def _torch_dtype(self) -> str:
        """The dtype of the PyTorch model (int8 is an ONNX graph over the float32 one)."""
        return "float32" if self.dtype == "int8" else self.dtype

    def _ensure_model(self):
        """The tokenizer and network; after unpickling, reloaded once (see the class's Notes).

        An unpickled embedder may run on another machine than the one that fitted it, so the
        reload resolves ``device`` again (a pickle from before ``device_`` existed gets it here).
        """
        if getattr(self, "_network", None) is None:
            self.device_ = resolve_device(self.device)
            self._resolve_batches()
            tokenizer, network, source = encoders.load_encoder(
                self.model, bool(self.trust_remote_code), self.device_, self._torch_dtype())
            found = weights_identity(source, network)
            if found != self.weights_id_:
                warnings.warn(
                    f"{type(self).__name__}: the model reloaded from {source} is not the one it was "
                    f"fitted with ({found} != {self.weights_id_}); vectors may differ.",
                    RuntimeWarning, stacklevel=3)
                self.weights_id_ = found
            self._tokenizer, self._network, self.source_ = tokenizer, network, source
            if getattr(self, "backend_", "torch") == "onnx":  # unpickled: reopen (or fall back)
                self._runner = self._open_runner("onnx", source)
                self.backend_ = "torch" if self._runner is None else "onnx"
        return self._tokenizer, self._network

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_network", None)
        state.pop("_tokenizer", None)
        state.pop("_runner", None)
        return state

    def _cache_identity(self):
        return {"weights": self.weights_id_, "max_length": self.max_length_}

    # -- encoding ---------------------------------------------------------------------------
    def _transform(self, docs):
        import torch

        sequence = self.output == "sequence"
        if not docs:
            empty = np.zeros((0, 1, self.dim_) if sequence else (0, self.dim_), dtype=np.float32)
            return Sequences(empty, np.zeros(0, np.int64), tokens=[]) if sequence else empty
        tokenizer, network = self._ensure_model()
        words = sequence and self.word_pooling is not None
        if words and not getattr(tokenizer, "is_fast", False):
            raise ValueError("word_pooling needs a fast (Rust) tokenizer to map pieces to words; "
                             "this model has none. Use word_pooling=None.")
        prefix, suffix = encoders.special_tokens(tokenizer)
        windows = DocumentWindows(list(docs), tokenizer, prefix, suffix,
                                  max_length=self.max_length_, long_documents=self.long_documents,
                                  stride=self.stride)
        # on an accelerator the encode loop tokenizes the next chunks while the device runs
        chunks = windows.chunks(chunk_bounds(len(docs), self.device_))
        layer_ids = self._layer_indices()
        pooling = self.pooling
        runner = getattr(self, "_runner", None)
        # off the CPU, a 4-D mask spares a wait for the device per batch (`broadcast_mask_ok`)
        broadcast = runner is None and on_accelerator(self.device_) and broadcast_mask_ok(network)

        def hidden(ids, mask):
            if runner is not None:  # ONNX Runtime; the graph already averages ``layers``
                return torch.from_numpy(runner(ids.numpy(), None if mask is None else mask.numpy()))
            kwargs = {"input_ids": ids}
            if mask is not None:
                kwargs["attention_mask"] = mask[:, None, None, :] if broadcast else mask.long()
            if layer_ids is None:
                return network(**kwargs).last_hidden_state
            states = network(**kwargs, output_hidden_states=True).hidden_states
            return torch.stack([states[i] for i in layer_ids]).mean(0)

        def forward_pooled(ids, mask):  # a device tensor: the loop copies it back unblocking
            h = hidden(ids, mask).float()
            if pooling == "cls":
                return h[:, 0]
            if mask is None:
                mask = torch.ones(h.shape[:2], dtype=torch.bool, device=h.device)
            return masked_pool(h, mask, pooling)

        def forward_sequence(ids, mask):
            return hidden(ids, mask).float()

        texts = docs if type(self).forward_counts is not None else None
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        forward = forward_sequence if sequence else forward_pooled
        # the windows' owners are complete once the loop has run (it tokenizes them)
        batches = self._run(chunks, forward, pad_id, owners=windows.owners, texts=texts)
        self.n_truncated_ = windows.n_truncated
        if not sequence:
            return windows.pooled(batches, self.dim_, self.pooling, self.normalize)
        return windows.sequences(batches, self.dim_, self.word_pooling)
