"""Static token vectors distilled from a sentence transformer (the model2vec method).

`DistilledEmbedder` runs a sentence-transformer encoder (default: the packaged
all-MiniLM-L6-v2) once over every token of its vocabulary, each token alone between the
model's special tokens, mean-pooled; reduces the token vectors with PCA and scales each by a
Zipf/SIF weight of its vocabulary rank (``a / (a + p(rank))``, rare tokens count more). A
document's vector is then the mean of its tokens' rows: a tokenizer and a sparse matrix product,
no network at transform time, hundreds of times faster than the encoder.

The recipe is model2vec's (Tulkens & van Dongen, 2024); this module implements it over the
package's encode loop (`embedkit._batching.run_batches`) and `TransformerEmbedder`'s model
loading (`embedkit.representations.encoders.load_encoder`) because ``model2vec[distill]``
pins ``transformers<5.4``.
The table is written in model2vec's folder format (``model.safetensors`` holding
``embeddings``, ``tokenizer.json``, ``config.json``), so ``model2vec.StaticModel.from_pretrained``
reads it and gives the same vectors (tested).

Caching: two folders under ``embedkit.storage.resources.home() / "distilled"``, each built under a
temporary name, published with one ``os.replace`` and checked against the sha256 its
``manifest.json`` records (a damaged file is rebuilt):

* ``raw-<key>``: the encoder's token vectors before PCA and weighting (the costly part: one
  encoder pass per vocabulary token; `bench_distill.py` measures it), keyed by a digest of the
  model folder's files
  (`embedkit.storage.resources.weights_identity`) and ``max_vocabulary``;
* ``<key>``: the finished model2vec folder, keyed by the raw key plus ``pca_dims`` and
  ``sif_coefficient``; so another PCA size or weighting costs seconds, not a new distillation.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from numbers import Real
from pathlib import Path
from typing import ClassVar

import numpy as np

from .._params import CacheSpec, Device, Interval, StrOptions, positive_int
from ..base import Representation, store_params
from ..data.documents import CHARS_PER_TOKEN
from ..sequences import Sequences
from ..storage.fetch import publish

__all__ = ["DistilledEmbedder"]

#: version of the distillation recipe: part of every cache key (bump it when the vectors change)
RECIPE = 1
#: BERT's placeholder tokens: in the vocabulary, never produced from text
_UNUSED = re.compile(r"\[unused\d+\]")


def _key(settings: dict) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:32]


def write_model2vec(folder: Path, table: np.ndarray, tokenizer, config: dict) -> None:
    """Write a model2vec model folder: ``model.safetensors``, ``tokenizer.json``, ``config.json``."""
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file({"embeddings": np.ascontiguousarray(table, dtype=np.float32)},
              str(folder / "model.safetensors"))
    tokenizer.save(str(folder / "tokenizer.json"), pretty=False)
    config = {**config, "embedding_dtype": "float32", "hidden_dim": int(table.shape[1])}
    (folder / "config.json").write_text(json.dumps(config, indent=1))


@functools.lru_cache(maxsize=4)
def _read(folder: str, stamp: tuple):
    """(table, tokenizer) of a model2vec folder; shared by every embedder of the process."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    from ..machine import size_tokenizer_pool

    size_tokenizer_pool()
    table = load_file(str(Path(folder) / "model.safetensors"))["embeddings"]
    table.setflags(write=False)
    return table, Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))


def read_model2vec(folder) -> tuple[np.ndarray, object]:
    """(table, tokenizer) of a model2vec folder (``model.safetensors`` + ``tokenizer.json``)."""
    path = Path(folder) / "model.safetensors"
    stat = path.stat()
    return _read(str(Path(folder).resolve()), (stat.st_size, stat.st_mtime_ns))


class DistilledEmbedder(Representation):
    """Static token vectors distilled once from a sentence transformer, pooled per document.

    The model2vec method (see the module docstring): every vocabulary token goes through the
    encoder alone (mean-pooled with the model's special tokens), the vectors are reduced by PCA
    and weighted by a Zipf/SIF estimate of each token's frequency from its vocabulary rank. A
    document is tokenized by the model's own tokenizer (no special tokens, the unknown token
    dropped) and its vector is the mean of its tokens' rows, optionally L2-normalised: the
    vectors ``model2vec.StaticModel.encode`` gives for the same folder.

    The distillation runs once per model and settings and is cached on disk (minutes for MiniLM
    on 2 CPU cores; every later `fit`, in any process, reads the cached table in a second).

    Parameters
    ----------
    model : str, default="all-minilm-l6-v2"
        The packaged all-MiniLM-L6-v2 (a named resource) or a local sentence-transformer /
        Hugging Face model folder (safetensors weights and a fast tokenizer). Nothing is
        downloaded.
    pca_dims : int or None, default=256
        Dimensions kept by PCA (at most the encoder's hidden size); None keeps the encoder's
        vectors as they are (no centring, no rotation).
    sif_coefficient : float or None, default=1e-4
        ``a`` of the token weights ``a / (a + p)``, with ``p`` Zipf's law over the vocabulary
        rank; None gives every token weight 1.
    max_vocabulary : int or None, default=None
        Distil only the first ``max_vocabulary`` token ids (the most frequent, in a WordPiece or
        BPE vocabulary); the others get zero vectors. For quick experiments and tests: None, the
        default, distils the whole vocabulary.
    normalize : bool, default=True
        L2-normalise the document vectors (model2vec's default; cosine-ready).
    max_length : int or None, default=512
        Tokens kept per document (the first ones), as model2vec does; None keeps all. As in
        model2vec, text beyond ``max_length`` times the vocabulary's median token length is not
        tokenized.
    output : {"pooled", "sequence"}, default="pooled"
        ``"sequence"``: the weighted token vectors of each document as `Sequences`, with the
        word pieces attached.
    batch_size : int, default=1024
        Tokens per forward pass during the distillation.
    device : {"auto", "cpu", "cuda", "mps"}, default="auto"
        Where the distillation runs (transform is numpy on the CPU).
    verbose : int, default=0
        1: a progress bar over the vocabulary while distilling, when stderr is a terminal; 2:
        always.
    cache : None, "memory", "disk" or path, default=None
        Embedding cache (`embedkit.cache`); rarely worth it here, transform is cheap.

    Attributes
    ----------
    dim_ : int
        Vector size (``pca_dims``, or the encoder's hidden size).
    source_ : str
        The model folder distilled.
    weights_id_ : str
        Digest of the model folder's files.
    table_id_ : str
        Cache key of the distilled table (model digest and settings).
    table_path_ : str
        The cached model2vec folder (readable by ``model2vec.StaticModel.from_pretrained``).
    n_distilled_ : int
        Tokens distilled (the vocabulary less special and placeholder tokens, or fewer with
        ``max_vocabulary``).
    device_ : str
        The device ``device`` resolved to at `fit`, where a distillation runs.

    Notes
    -----
    Pickling and `clone` never copy the table: an unpickled embedder reads it from the cache
    folder again (distilling anew if the cache was deleted). `embedkit.save` stores the table in
    the model folder in model2vec's format, so a saved pipeline loads anywhere without the
    encoder.

    Examples
    --------
    A small table (the first 2,100 word pieces; the whole vocabulary, the default, takes
    minutes once):

    >>> emb = DistilledEmbedder(max_vocabulary=2100, pca_dims=32).fit(["a first text"])
    >>> emb.transform(["Hello world", ""]).shape
    (2, 32)
    """

    _outputs = ("pooled", "sequence")
    _outputs_note = ("Static token vectors give document vectors (pooled) or token vectors "
                     "(sequence); for token ids use TokenIndexer.")
    _cache_exclude = ("model",)  # the table's identity (`_cache_identity`) covers the weights
    _parameter_constraints: ClassVar[dict] = {
        "model": [str, os.PathLike],
        "pca_dims": [None, positive_int()],  # against the encoder's hidden size: at fit
        "sif_coefficient": [None, Interval(Real, 0, 1, closed="neither")],
        "max_vocabulary": [None, positive_int()],
        "normalize": ["boolean"],
        "max_length": [None, positive_int()],
        "output": [StrOptions({"pooled", "sequence"})],
        "batch_size": [positive_int()],
        "device": [Device()],
        "verbose": ["verbose"],
        "cache": [CacheSpec()],
    }

    def __init__(self, model: str = "all-minilm-l6-v2", pca_dims: int | None = 256,
                 sif_coefficient: float | None = 1e-4, max_vocabulary: int | None = None,
                 normalize: bool = True, max_length: int | None = 512, output: str = "pooled",
                 batch_size: int = 1024, device: str = "auto", verbose: int = 0, cache=None):
        store_params(self, locals())

    # -- distillation ---------------------------------------------------------------------------
    def _source(self) -> Path:
        from ..storage.hf_folders import check_model_folder
        from ..storage.resources import RESOURCES, resource_path

        name = os.fspath(self.model)
        if RESOURCES.get(name, {}).get("kind") == "transformer":
            return resource_path(name)
        folder = Path(name).expanduser()
        if not folder.is_dir():
            known = ", ".join(k for k, v in RESOURCES.items() if v["kind"] == "transformer")
            raise ValueError(f"{type(self).__name__}(model={self.model!r}): not a named model "
                             f"({known}) nor an existing model folder. Pass a local "
                             "sentence-transformer folder (config.json, *.safetensors and the "
                             "tokenizer's files); nothing is downloaded.")
        check_model_folder(folder)
        return folder.resolve()

    def _raw(self, tmp: Path, source: Path, device: str) -> dict:
        """Distil: every vocabulary token alone through the encoder (PyTorch, float32, on the
        resolved ``device``), mean-pooled with the special tokens; writes
        ``tokens.safetensors`` (vectors + the ids they belong to)."""
        import torch
        from safetensors.numpy import save_file

        from .._batching import run_batches
        from ..base import progress_bars
        from ..sequences import masked_pool
        from .encoders import load_encoder, special_tokens

        tokenizer, network, _ = load_encoder(str(source), False, device, "float32")
        vocab = tokenizer.get_vocab()
        size = len(vocab)
        if sorted(vocab.values()) != list(range(size)):
            raise ValueError(f"the tokenizer of {source} does not number its {size} tokens 0.."
                             f"{size - 1}; DistilledEmbedder needs a contiguous vocabulary.")
        special = set(tokenizer.all_special_ids)
        names = sorted(vocab, key=vocab.get)
        limit = size if self.max_vocabulary is None else min(size, int(self.max_vocabulary))
        ids = np.array([i for i in range(limit) if i not in special
                        and not _UNUSED.fullmatch(names[i])], dtype=np.int64)
        prefix, suffix = special_tokens(tokenizer)
        items = [np.array([*prefix, int(i), *suffix], dtype=np.int64) for i in ids]
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

        def forward(batch, mask):
            if mask is None:
                mask = torch.ones(batch.shape, dtype=torch.bool, device=batch.device)
            hidden = network(input_ids=batch, attention_mask=mask.long()).last_hidden_state
            return masked_pool(hidden.float(), mask, "mean").cpu().numpy()

        vectors = np.zeros((len(ids), int(network.config.hidden_size)), dtype=np.float32)
        for idx, out in run_batches(items, forward, device=device, batch_size=self.batch_size,
                                    pad_id=pad, progress=progress_bars(self.verbose),
                                    desc=type(self).__name__):
            vectors[idx] = out
        backend = tokenizer.backend_tokenizer
        backend.no_padding()  # a saved tokenizer.json may pad/truncate (MiniLM's: 128)
        backend.no_truncation()
        save_file({"vectors": vectors, "ids": ids}, str(tmp / "tokens.safetensors"))
        backend.save(str(tmp / "tokenizer.json"), pretty=False)
        return {"vocabulary_size": size, "n_distilled": len(ids)}

    def _finish(self, tmp: Path, raw: Path) -> dict:
        """PCA and Zipf/SIF weighting of the raw vectors, written as a model2vec folder."""
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        parts = load_file(str(raw / "tokens.safetensors"))
        vectors, ids = parts["vectors"].astype(np.float64), parts["ids"]
        size = json.loads((raw / "manifest.json").read_text())["vocabulary_size"]
        if self.pca_dims is not None:
            from sklearn.decomposition import PCA

            pca = PCA(n_components=int(self.pca_dims), svd_solver="covariance_eigh")
            vectors = pca.fit_transform(vectors)
        if self.sif_coefficient is not None:
            rank = np.arange(1, len(ids) + 1)
            p = 1.0 / (rank + 1)
            p /= p.sum()
            vectors *= (self.sif_coefficient / (self.sif_coefficient + p))[:, None]
        table = np.zeros((size, vectors.shape[1]), dtype=np.float32)
        table[ids] = vectors
        write_model2vec(tmp, table, Tokenizer.from_file(str(raw / "tokenizer.json")),
                        self._config(normalize=True, max_length=512))  # model2vec's defaults
        return {"n_distilled": len(ids)}

    def _config(self, normalize: bool, max_length: int | None) -> dict:
        """model2vec's ``config.json`` of the table (its inference settings as given)."""
        return {"model_type": "model2vec", "architectures": ["StaticModel"],
                "tokenizer_name": Path(self.source_).name, "apply_pca": self.pca_dims,
                "sif_coefficient": self.sif_coefficient, "normalize": bool(normalize),
                "max_length": max_length, "pooling": "mean", "seq_length": 1000000,
                "distilled_by": "embedkit.DistilledEmbedder", "weights": self.weights_id_}

    def _table_folder(self, device: str) -> Path:
        """The cached model2vec folder for these settings (distilled on ``device`` if needed)."""
        from ..storage.resources import home, weights_identity

        source = self._source()
        if weights_identity(str(source)) != self.weights_id_:
            raise ValueError(f"{type(self).__name__}: the model {self.model!r} ({source}) is not "
                             "the one this embedder was fitted with, and its distilled table is "
                             "no longer cached; fit it again.")
        raw_key = _key({"identity": self.weights_id_, "max_vocabulary": self.max_vocabulary,
                        "pooling": "mean", "recipe": RECIPE})
        root = home() / "distilled"
        raw = publish(root / f"raw-{raw_key}", lambda tmp: self._raw(tmp, source, device),
                         "tokens.safetensors")
        n_distilled = json.loads((raw / "manifest.json").read_text())["n_distilled"]
        if self.pca_dims is not None and n_distilled <= int(self.pca_dims):
            raise ValueError(
                f"{type(self).__name__}(pca_dims={self.pca_dims}, max_vocabulary="
                f"{self.max_vocabulary}): PCA to {self.pca_dims} dimensions needs more than "
                f"{self.pca_dims} distilled tokens, and there are {n_distilled}. Raise "
                "max_vocabulary (None: the whole vocabulary) or lower pca_dims.")
        return publish(root / self.table_id_, lambda tmp: self._finish(tmp, raw),
                          "model.safetensors")

    def ready(self) -> bool:
        """Whether the costly part of the distillation (the encoder's pass over the vocabulary)
        is cached on disk for these settings, so `fit` takes seconds rather than minutes."""
        from ..storage.resources import home, weights_identity

        raw_key = _key({"identity": weights_identity(str(self._source())),
                        "max_vocabulary": self.max_vocabulary, "pooling": "mean", "recipe": RECIPE})
        return (home() / "distilled" / f"raw-{raw_key}" / "tokens.safetensors").is_file()

    def prepare(self) -> None:
        """Distil the table for these settings now (minutes, once; cached on disk)."""
        self.fit(["a"])

    def _reach(self) -> int | None:
        """``max_length`` tokens read no more than ``CHARS_PER_TOKEN`` characters each."""
        return super()._reach() if self.max_length is None else int(self.max_length) * CHARS_PER_TOKEN

    def _fit(self, docs, y=None):
        import safetensors

        from ..machine import resolve_device
        from ..storage.resources import weights_identity

        device = resolve_device(self.device)
        source = self._source()
        with open(source / "config.json") as fh:
            hidden = int(json.load(fh).get("hidden_size", 0)) or None
        if self.pca_dims is not None and hidden is not None and self.pca_dims > hidden:
            raise ValueError(f"{type(self).__name__}(pca_dims={self.pca_dims}): the encoder has "
                             f"{hidden} dimensions; use pca_dims <= {hidden}, or None to keep "
                             "them all.")
        self.source_ = str(source)
        self.weights_id_ = weights_identity(self.source_)
        self.table_id_ = _key({"identity": self.weights_id_, "max_vocabulary": self.max_vocabulary,
                               "pooling": "mean", "recipe": RECIPE, "pca_dims": self.pca_dims,
                               "sif_coefficient": self.sif_coefficient})
        self.device_ = device
        folder = self._table_folder(device)
        self.table_path_ = str(folder)
        self.n_distilled_ = int(json.loads((folder / "manifest.json").read_text())["n_distilled"])
        with safetensors.safe_open(str(folder / "model.safetensors"), framework="numpy") as fh:
            self.dim_ = int(fh.get_slice("embeddings").get_shape()[1])
        self._model = None

    def _loaded(self):
        """`_prepared` of the fitted table, loaded once."""
        model = getattr(self, "_model", None)
        if model is None:
            folder = Path(self.table_path_)
            if not (folder / "model.safetensors").is_file():  # cache deleted: distil again
                from ..machine import resolve_device

                # possibly unpickled on another machine: a new distillation resolves its device
                folder = self._table_folder(resolve_device(self.device))
                self.table_path_ = str(folder)
            table, tokenizer = read_model2vec(folder)
            model = self._model = _prepared(table, tokenizer)
        return model

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_model", None)
        return state

    def _cache_identity(self):
        return {"table": self.table_id_}

    # -- persistence (embedkit.save / load) -----------------------------------------------------
    def save_model2vec(self, path) -> Path:
        """Write the fitted table as a model2vec folder, with this embedder's ``normalize`` and
        ``max_length``: ``model2vec.StaticModel.from_pretrained(path)`` encodes as `transform`.

        Examples
        --------
        >>> import tempfile
        >>> emb = DistilledEmbedder(max_vocabulary=2100, pca_dims=32).fit([])
        >>> folder = emb.save_model2vec(tempfile.mkdtemp())
        >>> sorted(p.name for p in folder.iterdir())
        ['config.json', 'model.safetensors', 'tokenizer.json']
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        table, tokenizer = self._loaded()[:2]
        path = Path(path)
        write_model2vec(path, table, tokenizer, self._config(self.normalize, self.max_length))
        return path

    def _to_state(self, folder: Path) -> dict:
        if hasattr(self, "table_path_"):
            self.save_model2vec(folder)
        return self.__getstate__()

    @classmethod
    def _from_state(cls, state: dict, folder) -> DistilledEmbedder:
        out = cls.__new__(cls)
        out.__dict__.update(state)
        if folder is not None:
            table, tokenizer = read_model2vec(folder)
            out._model = _prepared(table, tokenizer)
        return out

    # -- encoding -------------------------------------------------------------------------------
    def _transform(self, docs):
        import scipy.sparse as sp

        table, tokenizer, unk, chars, names = self._loaded()
        n = len(docs)
        limit = self.max_length
        if limit is not None:
            docs = [d[: limit * chars] for d in docs]
        encodings = tokenizer.encode_batch_fast(docs, add_special_tokens=False) if n else []
        rows = [e.ids if limit is None else e.ids[:limit] for e in encodings]
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=n)
        flat = np.fromiter((i for r in rows for i in r), dtype=np.int64, count=int(lengths.sum()))
        doc = np.repeat(np.arange(n), lengths)
        if unk is not None:  # the unknown token carries no meaning: dropped, as model2vec does
            keep = flat != unk
            flat, doc = flat[keep], doc[keep]
            lengths = np.bincount(doc, minlength=n)
        if self.output == "sequence":
            vectors = table[flat]
            cuts = np.cumsum(lengths)[:-1]
            return Sequences.from_rows(np.split(vectors, cuts) if n else [],
                                       tokens=[names[r].tolist() for r in np.split(flat, cuts)]
                                       if n else [], dim=self.dim_)
        weights = (1.0 / np.maximum(lengths, 1)).astype(np.float32)[doc]
        counts = sp.csr_matrix((weights, (doc, flat)), shape=(n, table.shape[0]))
        pooled = np.asarray(counts @ table, dtype=np.float32)
        if self.normalize:
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled


def _prepared(table: np.ndarray, tokenizer) -> tuple:
    """(table, tokenizer, unknown-token id, characters read per token of ``max_length``,
    token strings by id)."""
    model = tokenizer.model
    unk_token = getattr(model, "unk_token", None)
    unk = tokenizer.token_to_id(unk_token) if unk_token else None
    if unk is None and not hasattr(model, "unk_token"):  # Unigram keeps an id, not a token
        unk = json.loads(tokenizer.to_str())["model"].get("unk_id")
    vocab = tokenizer.get_vocab()
    names = np.array(sorted(vocab, key=vocab.get), dtype=object)
    chars = int(np.median([len(t) for t in names]))
    if len(table) != tokenizer.get_vocab_size():
        raise ValueError(f"the table has {len(table)} rows and the tokenizer "
                         f"{tokenizer.get_vocab_size()} tokens; the folder is damaged, distil or "
                         "save it again.")
    return table, tokenizer, unk, max(chars, 1), names
