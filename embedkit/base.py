"""What both contracts share: `Representation` (text -> features), `store_params`, the
vocabulary of feature forms, and the finiteness check. The head contract (features ->
predictions) lives in `embedkit.heads._base`; this module imports nothing from `heads`.

Heavy libraries (torch, skorch) are imported inside the methods that need them, so that
``import embedkit`` stays fast.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .data.documents import MAX_DOCUMENT_CHARS, validate_documents, within_reach
from .sequences import Sequences

__all__ = ["FORMS", "OUTPUTS", "CheckedKeywords", "Representation", "accepted_forms", "is_ready",
           "needs_classes", "non_negative", "output_form", "progress_bars", "reads_non_negative",
           "store_params", "takes_cache", "with_cache"]

#: The forms features take between the two contracts: one vocabulary for a representation's
#: ``output=`` (``_outputs``), a head's ``_accepts`` and the registry's compatibility.
#: "pooled": one vector per document (a dense array, or a scipy-sparse matrix for
#: bag-of-words); "sequence": one vector per token (`Sequences`); "ids": token ids
#: (`TokenIds`); "text": the raw documents, for heads that own their encoder.
FORMS = ("pooled", "sequence", "ids", "text")
#: the forms a representation can output
OUTPUTS = FORMS[:3]


def output_form(representation) -> str:
    """The form a representation step produces (one of `embedkit.base.FORMS`).

    Examples
    --------
    >>> from embedkit import GloveEmbedder
    >>> output_form(GloveEmbedder(output="sequence")), output_form("passthrough")
    ('sequence', 'text')
    """
    if isinstance(representation, str) and representation == "passthrough":
        return "text"
    declared = getattr(type(representation), "_outputs", None)
    if declared is None:  # a scikit-learn transformer: a feature matrix, one row per document
        return "pooled"
    output = getattr(representation, "output", declared[0])
    if output not in declared:
        raise ValueError(f"{type(representation).__name__}(output={output!r}) cannot produce that "
                         f"form; it produces {', '.join(map(repr, declared))}.")
    return output


def accepted_forms(head) -> tuple[str, ...]:
    """The forms a head step accepts (embedkit heads declare theirs; others read a matrix).

    Examples
    --------
    >>> from embedkit import RNNClassifier
    >>> accepted_forms(RNNClassifier())
    ('sequence', 'ids')
    """
    declared = getattr(type(head), "_accepts", None)
    return tuple(declared) if declared is not None else ("pooled",)


def non_negative(representation) -> bool:
    """Whether a representation step's features are never negative (term counts, TF-IDF
    weights): what a head of counts reads (`reads_non_negative`). A step says so by its
    ``non_negative_output`` (`Representation` declares it, False); any other step is taken to
    give signed values."""
    return bool(getattr(representation, "non_negative_output", False))


def needs_classes(representation) -> bool:
    """Whether a representation step learns from classes, so that a number or a set of labels
    cannot fit it: its ``needs_classes`` (`Representation` declares it, False); no other step
    does."""
    return isinstance(representation, Representation) and bool(representation.needs_classes)


def takes_cache(step) -> bool:
    """Whether ``step`` reads and writes an embedding cache (`embedkit.cache`): a
    representation that declares a ``cache`` parameter."""
    return isinstance(step, Representation) and "cache" in step._parameter_constraints


def with_cache(step, cache):
    """``step`` set to read and write ``cache`` where it takes one (`takes_cache`); returned
    as it is otherwise (a scikit-learn transformer, ``"passthrough"``)."""
    return step.set_params(cache=cache) if takes_cache(step) else step


def is_ready(step) -> bool:
    """Whether ``step``'s one-time preparation (a model fetched, a distillation cached) is
    done on this machine: its ``ready()`` where it declares one (`Representation` declares it,
    True; an encoder that fetches its model, a fine-tuning head); True for any other step."""
    check = getattr(step, "ready", None)
    return bool(check()) if callable(check) else True


def reads_non_negative(head) -> bool:
    """Whether a head step refuses negative features (scikit-learn's ``positive_only`` input
    tag: NBSVM's `embedkit.heads.NBLogisticRegression`)."""
    tags = getattr(head, "__sklearn_tags__", None)
    return bool(tags is not None and tags().input_tags.positive_only)


def progress_bars(verbose) -> bool:
    """Whether a ``verbose`` estimator draws progress bars: ``verbose >= 2`` always; ``1`` only
    when stderr is a terminal, so logs, CI output and notebooks get plain lines, not bar redraws.
    """
    import sys

    level = int(verbose or 0)
    return level >= 2 or (level == 1 and sys.stderr.isatty())


def store_params(estimator, params: dict) -> None:
    """Store every constructor argument as an attribute of the same name, unchanged.

    The whole body of an embedkit ``__init__`` is ``store_params(self, locals())``: scikit-learn
    needs each parameter spelled out in the signature, and nothing else may happen there.
    """
    for name, value in params.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


class CheckedKeywords:
    """Mixin: a misspelt constructor keyword raises a `TypeError` naming the public class, the
    closest parameter and the full list, instead of Python's bare "unexpected keyword argument".

    Each subclass's own ``__init__`` is wrapped once, at class creation; the wrapper keeps the
    signature (``functools.wraps`` sets ``__wrapped__``, which `inspect.signature` follows), so
    scikit-learn's ``get_params``, ``set_params`` and ``clone`` see the same parameters.

    Examples
    --------
    >>> from embedkit import GloveEmbedder
    >>> GloveEmbedder(poolng="sif")
    Traceback (most recent call last):
        ...
    TypeError: GloveEmbedder has no parameter 'poolng'. Did you mean 'pooling'? ...
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_checks_keywords", False):
            return
        names = [name for name in inspect.signature(init).parameters if name != "self"]

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            unknown = [name for name in kwargs if name not in names]
            if unknown:
                raise TypeError(_unknown_keyword(type(self).__name__, unknown[0], names))
            init(self, *args, **kwargs)

        __init__._checks_keywords = True
        cls.__init__ = __init__


def _unknown_keyword(owner: str, name: str, names: list[str]) -> str:
    from ._suggest import did_you_mean

    return (f"{owner} has no parameter {name!r}.{did_you_mean(name, names)} Its parameters: "
            f"{', '.join(sorted(names))}.")


class Representation(CheckedKeywords, TransformerMixin, BaseEstimator):
    """Base class of every text representation.

    Subclasses keep ``__init__`` to storing arguments (one of them ``output``), declare every
    one of them in ``_parameter_constraints`` (see `embedkit._params`), list the output forms
    they can produce in ``_outputs``, and implement ``_fit(docs, y)`` (which sets ``dim_``, the
    vector dimension) and ``_transform(docs)``. The public methods are this class's and are not
    overridden: they check the parameters (once, before any data work; inside a scikit-learn
    Pipeline, every step's), validate the input, check the output form and the fitted state,
    reset the cache key's fitted-state digest at every fit, check outputs are finite, and name
    features for ``set_output(transform="pandas")``. A document longer than the representation
    reads (`_reach`) is cut there first, so no document's cost is unbounded. A representation
    whose training yields vectors of its training documents implements `_training_features`.
    """

    #: the constructor parameters and what each allows (`embedkit._params`); ``output``'s entry
    #: lists the forms of ``_outputs``
    _parameter_constraints: ClassVar[dict] = {}
    #: checks relating several parameters (`embedkit._params.Rule`)
    _parameter_rules: tuple = ()

    #: output forms this representation can produce
    _outputs: tuple[str, ...] = ("pooled",)
    #: why a missing form is missing (appended to the error)
    _outputs_note: str = ""
    #: prefix of generated feature names
    _feature_prefix: str = "dim"
    #: what the search and `compare` read of a step, declared with their defaults here
    #: (`needs_classes`, `non_negative`, `takes_cache`, `is_ready`): whether it learns from classes
    #: (a number or a set of labels cannot fit it), whether its features are never negative
    needs_classes: bool = False
    non_negative_output: bool = False

    def ready(self) -> bool:
        """Whether its one-time preparation (a model fetched, a distillation cached) is done on
        this machine; a representation that needs none is always ready."""
        return True

    def prepare(self) -> None:
        """Do its one-time preparation (fetch, distil), kept on disk; nothing by default."""

    # -- subclass API -------------------------------------------------------------------
    def _fit(self, docs: list[str], y=None) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _transform(self, docs: list[str]):  # pragma: no cover - abstract
        raise NotImplementedError

    def _reach(self) -> int | None:
        """The most characters of one document this representation reads; a longer one is cut
        there before any work (`embedkit.data.documents.within_reach`). By default
        `embedkit.data.documents.MAX_DOCUMENT_CHARS`; an encoder that reads ``max_length`` tokens
        reads no more than ``max_length * CHARS_PER_TOKEN``."""
        return MAX_DOCUMENT_CHARS

    def _feature_names(self) -> list[str] | None:
        """Names of pooled output columns; None means ``<prefix>0 .. <prefix>{dim-1}``."""
        return None

    def _training_features(self, docs: list[str]):
        """Features of the documents just fitted on, for `fit_transform`.

        The default encodes them as `transform` does (through the cache, if any). A
        representation whose training produces its own vectors of the training documents
        (Doc2Vec's trained paragraph vectors) returns those instead.
        """
        return self._encode(docs)

    # -- public API ---------------------------------------------------------------------
    def fit(self, X, y=None):
        """Load or train the model on the documents ``X`` (an iterable of str)."""
        self._fit_documents(X, y)
        return self

    def transform(self, X):
        """Encode documents in the form chosen by ``output``."""
        from ._params import validate_params

        check_is_fitted(self)
        validate_params(self, only=("output",))  # the one parameter read again after fit
        docs = within_reach(validate_documents(X), self._reach())
        return self._checked(self._encode(docs))

    def fit_transform(self, X, y=None, **fit_params):
        """Fit on ``X`` and return the features of ``X``, in the form chosen by ``output``.

        The same steps as ``fit(X, y).transform(X)`` (validation, fitting, resetting the
        fitted-state part of the cache key), except that a representation whose training
        yields vectors of its training documents returns those (see `_training_features`).
        """
        if fit_params:
            raise TypeError(f"{type(self).__name__}.fit_transform() got unexpected keyword "
                            f"arguments {sorted(fit_params)}; it takes only X and y.")
        docs = self._fit_documents(X, y)
        return self._checked(self._training_features(docs))

    def _fit_documents(self, X, y) -> list[str]:
        """Check the parameters, validate ``X``, fit on it and reset the cached fitted-state
        digest; returns the documents."""
        from ._params import validate_params

        validate_params(self)
        docs = within_reach(validate_documents(X), self._reach())
        self._fit(docs, y)
        self._cache_state = None  # fitted state changed: its digest is recomputed when needed
        return docs

    def _encode(self, docs: list[str]):
        """Hook between validation and ``_transform``: the embedding cache wraps it.

        With ``cache`` set (see `embedkit.cache`), only documents missing from the cache reach
        ``_transform``; every representation gets this without code of its own.
        """
        if getattr(self, "cache", None) is None:
            return self._transform(docs)
        from .cache import cached_encode

        return cached_encode(self, docs)

    def _checked(self, out):
        check_finite(out, type(self).__name__)
        if sp.issparse(out):
            from sklearn.utils._set_output import _get_output_config

            if _get_output_config("transform", self)["dense"] != "default":
                raise ValueError(self._sparse_table_message())
        return out

    def _sparse_table_message(self) -> str:
        params = self.get_params(deep=False)
        fixes = [f"{name}={value}" for name, value in
                 (("sparse_output", False), ("n_components", 300)) if name in params]
        return (f"{type(self).__name__} gives a scipy-sparse matrix, which "
                "set_output(transform='pandas') cannot turn into a table. Pass "
                f"{' (a dense array, fine on small data) or '.join(fixes) or 'a dense output'}"
                f"{' (a dense LSA projection)' if len(fixes) == 2 else ''}, or call "
                "set_output(transform='default').")

    #: parameters that do not change the vectors, beyond `embedkit.cache.NEUTRAL_PARAMS`
    _cache_exclude: tuple[str, ...] = ()
    #: fitted attributes left out of the fitted-state digest (e.g. transform-time statistics)
    _cache_state_exclude: tuple[str, ...] = ()

    def _cache_identity(self):
        """What, besides the parameters, decides the vectors: part of the cache key.

        The default is a digest of the fitted attributes (names ending in ``_``), computed once
        per fit. Representations with pretrained weights override it with the weights' identity
        (e.g. a file digest), which is cheaper and stable across processes.
        """
        digest = getattr(self, "_cache_state", None)
        if digest is None:
            from .cache import state_digest

            skip = set(self._cache_state_exclude)
            state = {k: v for k, v in sorted(vars(self).items())
                     if k.endswith("_") and not k.startswith("_") and k not in skip}
            digest = self._cache_state = state_digest(state)
        return {"fitted": digest}

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Column names of the pooled output, so ``set_output(transform="pandas")`` works."""
        check_is_fitted(self)
        if getattr(self, "output", "pooled") != "pooled":
            raise ValueError(
                f"{type(self).__name__}(output={self.output!r}) has no feature columns; "
                "only output='pooled' does."
            )
        names = self._feature_names()
        if names is None:
            prefix = type(self).__name__.lower().replace("embedder", "")
            names = [f"{prefix}_{self._feature_prefix}{i}" for i in range(self.dim_)]
        return np.asarray(names, dtype=object)

    def _parameter_hint(self, name: str) -> str:
        """A sentence added to a parameter's error: why an output form is missing."""
        return self._outputs_note if name == "output" else ""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.requires_fit = True
        return tags


def check_finite(out: Any, name: str) -> None:
    values = out.values if isinstance(out, Sequences) else out.data if sp.issparse(out) else out
    if isinstance(values, np.ndarray) and values.dtype.kind == "f" and not np.isfinite(values).all():
        raise FloatingPointError(
            f"{name} produced non-finite values; this is a bug in embedkit, please report it "
            "with the input that triggers it."
        )
