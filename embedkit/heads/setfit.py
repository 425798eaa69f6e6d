"""Few-label classification the SetFit way: tune the sentence encoder on pairs, then fit a
logistic regression on the tuned sentence vectors.

`SetFitClassifier` takes raw documents. ``fit`` draws pairs of training documents as SetFit 1.x
does by default (`contrastive_pairs`: distinct pairs of one class, target cosine 1, and of two
classes, target 0, as many of each, the smaller side's repeated), tunes the encoder on them with
sentence-transformers' ``SentenceTransformerTrainer`` and ``CosineSimilarityLoss``, then fits
scikit-learn's ``LogisticRegression`` on the tuned encoder's vectors of the training documents.
The training loop, its schedule and its batching are sentence-transformers' (Hugging Face's
``Trainer``); only the pair sampling is written here (`embedkit.heads.pairs`). A budgeted search
sizes it by its steps (`SetFitClassifier.sized_for`), never below `LEAST_STEPS`.

Why not the ``setfit`` package itself: its trainer does not take a device (it trains on the
GPU whenever one exists), orders its pairs with a fixed seed whatever the run's seed, and
writes checkpoints to the working folder; the method is the same.
"""

from __future__ import annotations

import functools
import math
import os
import time
from numbers import Real
from pathlib import Path
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from .._params import SEED, Device, Interval, StrOptions, positive_int, validate_params
from ..base import CheckedKeywords, store_params
from ..data.documents import CHARS_PER_TOKEN, validate_documents, within_reach
from ..machine import collecting_new_objects, resolve_device, resolve_precision
from ._base import LEARNING_RATE
from ._targets import check_target_rows, encode_class_labels
from ._tasks import ReadsText
from .finetune.sizing import REFERENCE_BATCH, REFERENCE_LENGTH, SizedForBudget, fit_memory
from .pairs import contrastive_pairs, count_pairs

__all__ = ["LEAST_STEPS", "SetFitClassifier"]

#: the fewest optimizer steps a budgeted search cuts the tuning to (`SetFitClassifier.sized_for`):
#: on a trec draw of 16 documents a class, 40 steps (640 pairs) scored 81.5% where frozen MiniLM +
#: LR scored 68.2% and 400 steps 92.0% (results/few_labels_tune.md)
LEAST_STEPS = 40


class SetFitClassifier(SizedForBudget, CheckedKeywords, ReadsText, TransformerMixin,
                       ClassifierMixin, BaseEstimator):
    """Tune a sentence encoder contrastively on pairs built from the labels, then fit a logistic
    regression on the tuned sentence vectors (SetFit, Tunstall et al. 2022): for few labels.

    It takes raw documents (it owns its encoder): in a Pipeline or grid, give it a
    ``"passthrough"`` features step. After fitting, ``transform`` returns the tuned sentence
    vectors, to feed other heads.

    Parameters
    ----------
    model : str, default="all-minilm-l6-v2"
        The packaged MiniLM (a named resource, `embedkit.storage.resources`) or a local
        sentence-transformers / Hugging Face model folder (safetensors weights). Never
        downloads, never runs code shipped with a model.
    num_iterations : int or None, default=None
        How many pairs an epoch holds. None: SetFit's default ("oversampling"): every distinct
        pair of documents of one class (target 1) and of two classes (target 0) once, and pairs
        of the smaller of the two sides again until both are as large (two classes of 8
        documents: 56 same-class pairs, 64 cross-class, 2 x 64 = 128 in all). An int:
        ``num_iterations * n_documents`` pairs a side, ``2 * num_iterations * n_documents`` in
        all (SetFit's ``num_iterations``), distinct pairs before repeated ones.
    epochs : int, default=1
        Passes over the pairs.
    max_steps : int or None, default=None
        At most this many optimizer steps (batches of pairs, shuffled), whatever the epochs:
        bounds the cost on large training sets, where the pairs grow with the square of the
        documents. Where it cuts an epoch short, only the pairs it trains on are drawn
        (``max_steps * batch_size``, distinct ones first).
    max_seconds : float > 0 or None, default=None
        Stop the contrastive tuning once it has run this many seconds (at the end of a step;
        ``n_steps_`` says how many ran) and fit the logistic regression on the encoder as tuned
        so far: a fit that must end by a deadline (`embedkit.tune`'s refit) keeps the steps it
        reached. Where it stops, the model depends on the machine's speed, not only the seed.
        None: every step.
    batch_size : int, default=16
        Pairs per step.
    lr : float in (0, 1], default=2e-5
        Learning rate of the encoder (AdamW, 10% linear warm-up then linear decay).
    max_length : int >= 4, default=128
        Documents are truncated to this many word pieces, in training and in prediction; at
        most the model's position limit.
    C : float > 0, default=1.0
        Inverse regularisation strength of the logistic regression.
    random_state : int or None, default=0
        Seeds the pairs, their order and dropout: two fits on a CPU give identical models.
        None is 0. The global random states (``random``, numpy, torch) are left as they were.
    device : {"auto", "cpu", "cuda", "mps"}, default="auto"
        Where the encoder trains and runs; "auto" takes a GPU when there is one.
    verbose : int, default=0
        1: the training progress bar and the loss every 50 steps.
    precision : {"auto", "fp32", "bf16"}, default="auto"
        Arithmetic of the contrastive tuning: "bf16" trains under bfloat16 autocast (the
        trainer's ``bf16``; weights and optimizer state stay float32), "fp32" in float32. "auto":
        bf16 on a CUDA GPU with bf16 units when a training step is large (6 x parameters x
        ``batch_size`` pairs x 2 texts x ``max_length`` >= 1e12 FLOPs), fp32 otherwise (as
        `TransformerClassifier`'s ``precision``). Encoding for the logistic regression and
        `transform` stay float32.

    Attributes
    ----------
    encoder_ : sentence_transformers.SentenceTransformer
        The tuned encoder.
    head_ : sklearn.linear_model.LogisticRegression
        The classifier over the tuned vectors (classes are indices into ``classes_``).
    classes_ : ndarray
        The labels seen at fit.
    dim_ : int
        Width of the sentence vectors.
    n_pairs_ : int
        Pairs drawn per epoch (`count_pairs` of the class sizes).
    n_steps_ : int
        Optimizer steps the tuning ran.
    out_of_time_ : bool
        Whether ``max_seconds`` ended the tuning before its last step.
    history_ : list of dict
        The trainer's log: ``loss`` with its ``step``, and the run's totals.
    device_ : str
        The device ``device`` resolved to at fit (or when a model folder is loaded), where the
        encoder tunes and encodes.
    precision_ : {"fp32", "bf16"}
        The precision ``precision`` resolved to for ``device_``.

    Notes
    -----
    The cost grows with the pairs, by default about ``(1 - 1/k) * n_documents ** 2`` per epoch on
    ``k`` balanced classes (`count_pairs`; SetFit's own): SetFit is for tens of labelled
    documents per class; on hundreds, set ``max_steps`` (or ``num_iterations``: pairs linear in
    the documents) or fine-tune (`TransformerClassifier`). Pickling a fitted estimator stores
    the tuned weights in the pickle; `embedkit.save` writes them as a sentence-transformers
    folder (safetensors) and the logistic regression as ``.npy`` / JSON.

    Examples
    --------
    >>> from sklearn.pipeline import Pipeline
    >>> docs = ["a great film", "loved it", "awful plot", "boring and bad"] * 2
    >>> y = ["pos", "pos", "neg", "neg"] * 2
    >>> clf = SetFitClassifier(max_length=16)  # 32 pairs: 2 x 6 same-label, 16 across
    >>> pipe = Pipeline([("features", "passthrough"), ("head", clf)]).fit(docs, y)
    >>> pipe.predict(["what a great film", "so boring"]).tolist()
    ['pos', 'neg']
    >>> clf.transform(["what a great film"]).shape
    (1, 384)
    """

    _accepts = ("text",)
    max_seconds = None  # what a folder saved before the parameter existed reads
    _parameter_constraints: ClassVar[dict] = {
        "model": [str, os.PathLike],
        "num_iterations": [None, positive_int()],
        "epochs": [positive_int()],
        "max_steps": [None, positive_int()],
        "max_seconds": [None, Interval(Real, 0, None, closed="neither")],
        "batch_size": [positive_int(2)],  # a batch of one pair has no spread to learn from
        "lr": [LEARNING_RATE],
        "max_length": [positive_int(4)],  # room for the special tokens; the model's limit at load
        "C": [Interval(Real, 0, None, closed="neither")],
        "random_state": [None, SEED],
        "device": [Device()],
        "verbose": ["verbose"],
        "precision": [StrOptions({"auto", "fp32", "bf16"})],
    }

    def __init__(self, model: str = "all-minilm-l6-v2", num_iterations: int | None = None,
                 epochs: int = 1, max_steps: int | None = None, max_seconds: float | None = None,
                 batch_size: int = 16,
                 lr: float = 2e-5, max_length: int = 128, C: float = 1.0,
                 random_state: int | None = 0, device: str = "auto", verbose: int = 0,
                 precision: str = "auto"):
        store_params(self, locals())

    # -- input and model ----------------------------------------------------------------------
    def _documents(self, X) -> list[str]:
        if hasattr(X, "tocsr") or hasattr(X, "lengths") or (
                hasattr(X, "dtype") and getattr(X, "ndim", 1) == 2 and X.dtype.kind in "fiub"):
            name = type(self).__name__
            raise ValueError(
                f"{name} takes raw documents (it owns its encoder) but received "
                f"{type(X).__name__} features. In a Pipeline put it after a 'passthrough' features "
                f"step: Pipeline([('features', 'passthrough'), ('head', {name}())]).")
        # the encoder reads max_length tokens of each: the rest is not tokenized at all
        return within_reach(validate_documents(X), int(self.max_length) * CHARS_PER_TOKEN)

    def _load(self, source: str | None = None):
        """The sentence-transformers model at ``source`` (default: ``model``), offline, safely,
        on ``device_``."""
        from sentence_transformers import SentenceTransformer

        from ..storage.hf_folders import check_model_folder, max_tokens, quiet_transformers
        from ..storage.resources import RESOURCES, resource_path

        if source is None:
            model = str(self.model)
            if model in RESOURCES and RESOURCES[model]["kind"] == "transformer":
                source = str(resource_path(model))
            elif Path(model).expanduser().is_dir():
                source = str(Path(model).expanduser().resolve())
                check_model_folder(Path(source))
            else:
                known = ", ".join(k for k, v in RESOURCES.items() if v["kind"] == "transformer")
                raise ValueError(
                    f"{type(self).__name__}(model={model!r}): not a named model ({known}) and not "
                    "a local model folder. Pass a folder written by SentenceTransformer.save or "
                    "save_pretrained (config.json, *.safetensors, tokenizer files).")
        try:
            with quiet_transformers():
                encoder = SentenceTransformer(source, device=self.device_, local_files_only=True,
                                              trust_remote_code=False,
                                              model_kwargs={"use_safetensors": True})
        except Exception as err:  # noqa: BLE001 - sentence-transformers raises assorted errors
            raise ValueError(
                f"could not load the model folder {source} ({type(err).__name__}: "
                f"{str(err).splitlines()[0][:300] if str(err) else ''}). It must hold a "
                "sentence-transformers or Hugging Face model: config.json, *.safetensors weights "
                "and tokenizer files.") from None
        limit = max_tokens(encoder[0].auto_model.config)
        if limit and self.max_length > limit:
            raise ValueError(f"{type(self).__name__}(max_length={self.max_length}) exceeds the "
                             f"{limit} positions of {self.model!r}; use max_length <= {limit}.")
        encoder.max_seq_length = int(self.max_length)
        return encoder

    def _encode(self, docs: list[str]) -> np.ndarray:
        if not docs:
            return np.zeros((0, self.dim_), dtype=np.float32)
        out = self.encoder_.encode(docs, batch_size=64, convert_to_numpy=True,
                                   show_progress_bar=False)
        return np.asarray(out, dtype=np.float32)

    # -- training -----------------------------------------------------------------------------
    def fit(self, X, y):
        """Tune the encoder on pairs of ``X`` drawn from the labels ``y``, then fit the logistic
        regression on the tuned vectors.

        Parameters
        ----------
        X : iterable of str
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        validate_params(self)
        name = type(self).__name__
        docs = self._documents(X)
        if not docs:
            raise ValueError(f"{name}.fit received no rows: X is empty; fit needs training data.")
        check_target_rows(y, len(docs), name)
        classes, codes = encode_class_labels(y, name)
        seed = 0 if self.random_state is None else int(self.random_state)
        self.device_ = resolve_device(self.device)  # once: tuning and encoding run there
        with _kept_global_random_state():
            encoder = self._load()
            n_params = sum(p.numel() for p in encoder.parameters())
            step = 6.0 * n_params * self.batch_size * 2 * self.max_length  # two texts a pair
            self.precision_ = resolve_precision(self.precision, self.device_, step)
            self.n_pairs_, steps, self.n_steps_, self.history_ = self._tune(encoder, docs, codes, seed)
        self.out_of_time_ = self.n_steps_ < steps
        self.encoder_ = encoder.eval()
        dimension = getattr(encoder, "get_embedding_dimension", None)  # sentence-transformers 6
        self.dim_ = int((dimension or encoder.get_sentence_embedding_dimension)())
        self.classes_ = classes
        from sklearn.linear_model import LogisticRegression

        self.head_ = LogisticRegression(C=float(self.C), max_iter=1000, random_state=seed)
        self.head_.fit(self._encode(docs), codes)
        return self

    def _tune(self, encoder, docs: list[str], codes: np.ndarray, seed: int):
        """Contrastive tuning with sentence-transformers' trainer; ``(pairs, steps planned, steps
        run, log)``."""
        import tempfile

        from datasets import Dataset
        from sentence_transformers import SentenceTransformerTrainingArguments, losses

        # where max_steps ends the first epoch early, only the pairs it trains on are drawn
        most = None if self.max_steps is None else int(self.max_steps) * self.batch_size
        first, second, target = contrastive_pairs(codes, self.num_iterations,
                                                  np.random.default_rng(seed), max_pairs=most)
        text = np.asarray(docs, dtype=object)
        pairs = Dataset.from_dict({"sentence_1": text[first].tolist(),
                                   "sentence_2": text[second].tolist(),
                                   "label": target.tolist()})
        steps = math.ceil(len(pairs) / self.batch_size) * self.epochs
        if self.max_steps is not None:  # the Trainer's max_steps is exact (it repeats epochs)
            steps = min(steps, int(self.max_steps))
        with tempfile.TemporaryDirectory(prefix="embedkit-setfit-") as tmp:
            args = SentenceTransformerTrainingArguments(
                output_dir=tmp, num_train_epochs=self.epochs, max_steps=steps,
                per_device_train_batch_size=self.batch_size, learning_rate=float(self.lr),
                warmup_steps=0.1, seed=seed, data_seed=seed, use_cpu=self.device_ == "cpu",
                save_strategy="no", report_to="none", disable_tqdm=not self.verbose,
                logging_steps=50, dataloader_pin_memory=False, bf16=self.precision_ == "bf16")
            trainer = _cardless_trainer()(model=encoder, args=args, train_dataset=pairs,
                                         loss=losses.CosineSimilarityLoss(encoder))
            _quiet(trainer, keep_progress=bool(self.verbose))
            if self.max_seconds is not None:
                trainer.add_callback(_stop_after(float(self.max_seconds)))
            with collecting_new_objects(collect=False):  # its end collects: only what it made
                trainer.train()
            history = [{k: float(v) for k, v in entry.items() if isinstance(v, (int, float))}
                       for entry in trainer.state.log_history]
        loss = [e["loss"] for e in history if "loss" in e]
        if not np.isfinite(loss).all() or not _finite_weights(encoder):
            raise ValueError(f"{type(self).__name__} training diverged (lr={self.lr!r}): the loss "
                             f"or the weights became non-finite. Lower lr (e.g. "
                             f"lr={float(self.lr) / 10:g}).")
        return len(pairs), steps, int(trainer.state.global_step), history

    # -- sizing for a time budget (`embedkit.heads.finetune.sizing.SizedForBudget`) ------------
    def _steps(self, n_rows: int) -> int:
        """Optimizer steps of a fit on ``n_rows`` documents, counted on the pairs of two balanced
        classes (the fewest that ``n_rows`` documents of two classes or more draw)."""
        pairs = count_pairs([n_rows - n_rows // 2, n_rows // 2], self.num_iterations)
        steps = math.ceil(pairs / int(self.batch_size)) * int(self.epochs)
        return steps if self.max_steps is None else min(steps, int(self.max_steps))

    def fit_work(self, n_rows: int) -> float:
        """Units of work of a fit on ``n_rows`` documents (those of `.finetune.sizing`): its
        steps, two texts a pair, every block trained, then the pass the regression reads."""
        step = 2 * int(self.batch_size) / REFERENCE_BATCH * int(self.max_length) / REFERENCE_LENGTH
        return self._steps(n_rows) * step + self.predict_work(n_rows)

    def rows_after_training(self, n_rows: int) -> int:
        """Every row: once the encoder is tuned, its vectors of every row fit the classifier."""
        return n_rows

    def sized_for(self, n_rows: int, seconds: float, cost) -> tuple[dict, int] | None:
        """``({"max_steps": steps}, n_rows)``: its own recipe where its ``cost(work)`` fits in
        ``seconds`` (its ``max_steps``: a refit on more rows draws more pairs), else the most
        steps that fit, at least `LEAST_STEPS`, on every row; None when not even those do."""
        from .._budget import largest

        own = self._steps(n_rows)

        def fits(steps: int) -> bool:
            return cost(clone(self).set_params(max_steps=steps).fit_work(n_rows)) <= seconds

        if fits(own):
            return {"max_steps": self.max_steps}, n_rows
        least = min(own, LEAST_STEPS)
        return ({"max_steps": largest(least, own, fits)}, n_rows) if fits(least) else None

    def least_work(self, n_rows: int) -> float:
        """Units of work of a fit of `LEAST_STEPS` steps (or its own, where fewer)."""
        return clone(self).set_params(max_steps=min(self._steps(n_rows), LEAST_STEPS)).fit_work(n_rows)

    def least_said(self, n_rows: int) -> str:
        return f"{min(self._steps(n_rows), LEAST_STEPS)} steps of {int(self.batch_size)} pairs"

    def probe_recipe(self, steps: int, n_rows: int) -> tuple[dict, int] | None:
        """``({"max_steps": steps}, n_rows)``: its pairs come from every row, so a probe is a fit
        on all of them cut to ``steps``; None where its cheapest recipe is no more steps."""
        return None if steps >= min(self._steps(n_rows), LEAST_STEPS) else ({"max_steps": steps}, n_rows)

    def fit_memory(self) -> float:
        """Bytes a fit grows the process by, whatever its rows: the body trained whole on
        batches of ``batch_size`` pairs, two texts each (`.finetune.sizing.fit_memory`)."""
        return fit_memory(self, sentences=2 * int(self.batch_size))

    def batched_for(self, room: float) -> dict | None:
        """``{}`` where its fit (`fit_memory`) takes at most ``room`` bytes, else None: a
        smaller batch of pairs would change what it learns (its steps draw the pairs)."""
        return {} if self.fit_memory() <= room else None

    # -- inference ----------------------------------------------------------------------------
    def transform(self, X) -> np.ndarray:
        """The tuned encoder's sentence vectors, float32 ``(n_docs, dim_)``."""
        check_is_fitted(self, "head_")
        return self._encode(self._documents(X))

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, columns in ``classes_`` order."""
        vectors = self.transform(X)
        if not len(vectors):
            return np.zeros((0, len(self.classes_)))
        return self.head_.predict_proba(vectors)

    def predict(self, X) -> np.ndarray:
        """The most probable class of each document."""
        proba = self.predict_proba(X)  # before classes_: unfitted is a NotFittedError
        return self.classes_[proba.argmax(axis=1)]

    # -- model folders (embedkit.storage.persist) -------------------------------------------------------
    def _to_state(self, folder):
        """State for `embedkit.save`: the attributes but the encoder, which is written to
        ``folder`` as a sentence-transformers model folder (safetensors, JSON, vocabulary)."""
        check_is_fitted(self, "head_")
        state = dict(self.__getstate__())
        encoder = state.pop("encoder_")
        from ..storage.hf_folders import quiet_transformers

        with quiet_transformers():
            encoder.save(str(folder), safe_serialization=True, create_model_card=False)
        return state

    @classmethod
    def _from_state(cls, state: dict, folder):
        """Inverse of `_to_state`: the tuned encoder from ``folder``, the rest from ``state``."""
        self = cls.__new__(cls)
        self.__setstate__(state)
        # the folder may come from another machine (a GPU's): the device is resolved for this one
        self.device_ = resolve_device(self.device)
        self.encoder_ = self._load(str(folder)).eval()
        return self


def _quiet(trainer, keep_progress: bool) -> None:
    """Unless asked for, drop the trainer's progress bar and log printer."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    if keep_progress:
        return
    for callback in list(trainer.callback_handler.callbacks):
        if isinstance(callback, (ProgressCallback, PrinterCallback)):
            trainer.remove_callback(callback)


def _stop_after(seconds: float):
    """A trainer callback that ends the training at the first step's end past ``seconds`` from
    the training's start."""
    from transformers import TrainerCallback

    class StopAfter(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.began = time.monotonic()

        def on_step_end(self, args, state, control, **kwargs):
            if time.monotonic() - self.began >= seconds:
                control.should_training_stop = True

    return StopAfter()


@functools.cache
def _cardless_trainer() -> type:
    """sentence-transformers' trainer without its model-card callback, which scans the pairs and
    prints a "Computing widget examples" bar at construction for a README that is never written
    (overriding ``add_model_card_callback`` is the documented way to drop it). Built on first use:
    sentence-transformers is imported lazily."""
    from sentence_transformers import SentenceTransformerTrainer

    class CardlessTrainer(SentenceTransformerTrainer):
        def add_model_card_callback(self, default_args_dict) -> None:
            return None

    return CardlessTrainer


def _finite_weights(encoder) -> bool:
    import torch

    with torch.no_grad():
        sums = [p.sum() for p in encoder.parameters()]
        return bool(torch.isfinite(torch.stack(sums).float()).all())


class _kept_global_random_state:
    """Restore Python's, numpy's and torch's global random states on exit: Hugging Face's
    ``Trainer`` seeds them all (``set_seed``), which must not change the caller's streams."""

    def __enter__(self):
        import random

        import torch

        self._states = (random.getstate(), np.random.get_state(), torch.random.get_rng_state(),
                        torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None)
        return self

    def __exit__(self, *exc):
        import random

        import torch

        py, np_state, cpu, cuda = self._states
        random.setstate(py)
        np.random.set_state(np_state)
        torch.random.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)
        return False
