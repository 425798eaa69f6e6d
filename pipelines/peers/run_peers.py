"""One AutoML peer of `embedkit tune` on one exported split, within a time budget (issue 47).

    python pipelines/peers/run_peers.py --peer flaml --split SPLIT --set trec --budget 600 \\
        --result runs.jsonl
    python pipelines/peers/run_peers.py --peer autogluon-multimodal-minilm --model MINILM_FOLDER \\
        --split SPLIT --set trec --budget 600 --result runs.jsonl

This runs in the peers' own environment, ``.venv-peers`` (``./run.sh peers`` makes it from
``pipelines/peers/requirements*.txt``), never in embedkit's, and imports nothing of embedkit: the
main environment writes the split (``pipelines/benchmarks/peers.py``, with the tuning benchmark's
own `sides`) and resolves the local model folders; this script only reads them. Everything is
offline (``HF_HUB_OFFLINE``, ``TRANSFORMERS_OFFLINE``).

``SPLIT`` holds ``train.parquet`` and ``test.parquet``, each with a ``text`` and a ``label``
column. The peers, each as a user would call it on that training side:

* ``autogluon-tabular``: AutoGluon's ``TabularPredictor`` with the text column declared a text
  feature (its n-gram features feed LightGBM, CatBoost, XGBoost, its neural networks and its
  stacking), ``presets="best_quality"``, ``time_limit`` = the budget (it takes no seed: its
  models and folds are seeded the same every run);
* ``autogluon-multimodal-minilm`` / ``autogluon-multimodal-mpnet``: AutoGluon's
  ``MultiModalPredictor`` fine-tuning the model folder ``--model`` as its text backbone
  (``model.hf_text.checkpoint_name``), ``time_limit`` = the budget, ``seed``, its other settings
  default. Offline, its text augmentation's synonym replacement finds no NLTK WordNet data (it
  would download it): AutoGluon then trains on the next document in place of that one, which a
  user on a machine without network gets too;
* ``flaml``: FLAML's ``AutoML`` (classification, its default estimators, ``time_budget`` = the
  budget) on scikit-learn ``TfidfVectorizer`` features, the same vectorizer as the accuracy
  suite's plain TF-IDF baseline (word 1-2-grams, min_df=2, sublinear tf);
* ``setfit``: SetFit with the model folder ``--model`` (all-mpnet-base-v2) as its body, its
  default training arguments and the seed; it has no budget of its own, so its contrastive phase
  stops when the budget runs out (the few-label benchmark's peer).

Each run appends one JSON line to ``--result``: the peer, the set, the budget, held-out accuracy
and macro-F1,
``held_out_right`` (which test rows it got right, ``"0101..."`` in the test file's row order,
the tuning benchmark's encoding, so a run pairs row by row with a `tune` run), ``wall_s`` (the
whole fit: importing the peer, building its features, its search, its refit; ``import_s`` is the
import alone), ``predict_s``,
memory (``peak_mb``: the largest summed resident memory of this process and every process under
it, sampled every 0.2 s, as AutoGluon fits its bagged models in Ray worker processes; pages that
several processes share, such as Ray's object store, count once per process, so it is an upper
bound; and the kernel's ``ru_maxrss`` of this process and of its largest finished child), what
the peer picked, and the versions it ran.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import random
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

#: peer -> whether it needs a local model folder (``--model``)
PEERS = {"autogluon-tabular": False, "autogluon-multimodal-minilm": True,
         "autogluon-multimodal-mpnet": True, "flaml": False, "setfit": True}
#: the packages whose versions each line records
VERSIONS = ("autogluon.tabular", "autogluon.multimodal", "flaml", "setfit",
            "sentence-transformers", "transformers", "torch", "lightgbm", "xgboost-cpu",
            "catboost", "scikit-learn")


def bits(hits) -> str:
    """Which held-out rows a model got right, ``"1"`` for right, in the test file's order (the
    tuning benchmark's ``_bits`` encoding)."""
    return "".join("1" if hit else "0" for hit in np.asarray(hits, dtype=bool))


def read_split(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(train, test)`` from ``folder``'s ``train.parquet`` and ``test.parquet``.

    Raises
    ------
    FileNotFoundError
        A file is missing.
    ValueError
        A file lacks the ``text`` or ``label`` column.
    """
    sides = []
    for name in ("train", "test"):
        path = folder / f"{name}.parquet"
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is missing: export the split from embedkit's environment first "
                "(`./run.sh peers` does it, through pipelines/benchmarks/peers.py)")
        frame = pd.read_parquet(path)
        missing = {"text", "label"} - set(frame.columns)
        if missing:
            raise ValueError(f"{path} has the columns {list(frame.columns)}; it needs 'text' and "
                             f"'label' (missing: {sorted(missing)})")
        sides.append(frame[["text", "label"]].reset_index(drop=True))
    return sides[0], sides[1]


def offline() -> None:
    """Switch the Hugging Face libraries offline; called before any of them is imported (the
    peers import them inside their functions), as they read these switches once, at import."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ[name] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and (where installed) torch's generators."""
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)


class TreeMemory:
    """The largest summed resident memory of this process and all its descendants while the
    block runs, sampled every ``interval`` seconds (``peak`` in bytes)."""

    def __init__(self, interval: float = 0.2):
        self.interval = interval
        self.peak = 0

    def _now(self) -> int:
        import psutil

        total = 0
        for proc in [self._proc, *self._proc.children(recursive=True)]:
            try:
                total += proc.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):  # ended between list and read
                pass
        return total

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self._now())

    def __enter__(self):
        import psutil

        self._proc = psutil.Process()
        self.peak = self._now()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._now())


# -- the peers: each fits on the training side and returns (predict, describe): predict(test)
# gives the labels; describe() gives (pick, details), read after the timed fit and predict ------
def _autogluon_tabular(train, budget, seed, work, model, quick):
    from autogluon.common.features.feature_metadata import FeatureMetadata
    from autogluon.tabular import TabularPredictor

    # declared, not left to inference: a set of short documents is still text to the user
    metadata = FeatureMetadata.from_df(train[["text"]]).add_special_types({"text": ["text"]})
    predictor = TabularPredictor(label="label", eval_metric="accuracy", path=str(work / "ag"),
                                 verbosity=2)
    predictor.fit(train, presets="best_quality", time_limit=budget, feature_metadata=metadata)

    def describe():
        board = predictor.leaderboard(silent=True)
        best = predictor.model_best
        details = {"models_fitted": len(board),
                   "leaderboard_top": [{"model": str(r.model), "score_val": float(r.score_val),
                                        "fit_time": float(r.fit_time)}
                                       for r in board.head(5).itertuples()]}
        info = predictor.info().get("model_info", {}).get(best, {})
        base = (info.get("stacker_info") or {}).get("base_model_names")
        if base:  # what the winning ensemble is made of
            details["best_base_models"] = list(base)
        return best, details

    return (lambda test: predictor.predict(test[["text"]])), describe


def _autogluon_multimodal(train, budget, seed, work, model, quick):
    from autogluon.multimodal import MultiModalPredictor

    hyperparameters = {"model.hf_text.checkpoint_name": str(model)}
    if quick:
        hyperparameters["optim.max_epochs"] = 1
    predictor = MultiModalPredictor(label="label", eval_metric="accuracy", path=str(work / "mm"),
                                    verbosity=2)
    predictor.fit(train, time_limit=budget, hyperparameters=hyperparameters, seed=seed)

    def describe():
        details = {"checkpoint": str(model), "hyperparameters": hyperparameters}
        try:
            summary = predictor.fit_summary()
            details["fit_summary"] = {k: v for k, v in summary.items()
                                      if isinstance(v, (int, float, str, bool))}
        except Exception as error:  # noqa: BLE001  (a summary is a detail, never the run)
            details["fit_summary"] = f"unavailable: {error}"
        return f"hf_text: {_model_name(model)}", details

    return (lambda test: predictor.predict(test[["text"]])), describe


#: the features FLAML is given: the accuracy suite's plain TF-IDF baseline's vectorizer
FLAML_FEATURES = {"ngram_range": (1, 2), "min_df": 2, "sublinear_tf": True}


def _flaml(train, budget, seed, work, model, quick):
    from flaml import AutoML
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(**FLAML_FEATURES)
    X = vectorizer.fit_transform(train["text"])
    # label codes: on sparse features FLAML hands string labels to XGBoost as they are, which
    # rejects them ("Invalid classes inferred from unique values of `y`")
    classes, y = np.unique(train["label"].to_numpy(), return_inverse=True)
    automl = AutoML()
    automl.fit(X, y, task="classification", metric="accuracy", time_budget=budget, seed=seed,
               log_file_name=str(work / "flaml.log"), verbose=1)

    def describe():
        details = {"best_config": {k: (v if isinstance(v, (int, float, str, bool)) else str(v))
                                   for k, v in (automl.best_config or {}).items()},
                   "best_valid_accuracy": 1.0 - float(automl.best_loss),
                   "trials": len(automl.config_history),
                   "estimators_tried": sorted({e for e, _, _ in automl.config_history.values()}),
                   "features": "TfidfVectorizer(" + ", ".join(
                       f"{k}={v!r}" for k, v in FLAML_FEATURES.items()) + ")"}
        return automl.best_estimator, details

    return (lambda test: classes[automl.predict(vectorizer.transform(test["text"]))]), describe


def _setfit(train, budget, seed, work, model, quick):
    from datasets import Dataset
    from setfit import SetFitModel, Trainer, TrainingArguments
    from transformers import TrainerCallback

    class Budget(TrainerCallback):
        """Stop the contrastive phase once the budget is spent (SetFit has no budget of its own)."""

        def __init__(self, seconds):
            self.end, self.stopped = time.perf_counter() + seconds, False

        def on_step_end(self, args, state, control, **kwargs):
            if time.perf_counter() > self.end:
                control.should_training_stop = self.stopped = True
            return control

    classes = sorted(train["label"].unique())
    code = {label: i for i, label in enumerate(classes)}
    data = Dataset.from_dict({"text": train["text"].tolist(),
                              "label": [code[label] for label in train["label"]]})
    args = TrainingArguments(seed=seed, output_dir=str(work / "setfit"), report_to="none",
                             **({"max_steps": 20} if quick else {}))
    body = SetFitModel.from_pretrained(str(model))
    stop = Budget(budget)
    trainer = Trainer(model=body, args=args, train_dataset=data, callbacks=[stop])
    trainer.train()

    def predict(test):
        return np.asarray(classes, dtype=object)[np.asarray(body.predict(test["text"].tolist()))]

    def describe():
        kept = ("batch_size", "num_epochs", "num_iterations", "max_steps", "sampling_strategy",
                "body_learning_rate", "head_learning_rate", "seed")
        return f"setfit: {_model_name(model)}", {
            "body": str(model), "stopped_by_budget": stop.stopped,
            "args": {k: str(v) for k, v in args.to_dict().items() if k in kept}}

    return predict, describe


def _model_name(folder: Path) -> str:
    """A model folder's name as a reader knows it (the packaged MiniLM's folder is ``model``
    inside its package)."""
    folder = Path(folder)
    return folder.parent.name if folder.name == "model" else folder.name


#: what each peer imports first: timed apart as ``import_s`` (inside ``wall_s``)
IMPORTS = {"autogluon-tabular": ("autogluon.tabular",),
           "autogluon-multimodal-minilm": ("autogluon.multimodal",),
           "autogluon-multimodal-mpnet": ("autogluon.multimodal",),
           "flaml": ("flaml", "sklearn.feature_extraction.text"),
           "setfit": ("setfit", "datasets")}
FIT = {"autogluon-tabular": _autogluon_tabular, "autogluon-multimodal-minilm": _autogluon_multimodal,
       "autogluon-multimodal-mpnet": _autogluon_multimodal, "flaml": _flaml, "setfit": _setfit}


def versions() -> dict:
    """Installed versions of the packages in `VERSIONS` (absent ones left out)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in VERSIONS:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out


def run(peer: str, split: Path, budget: float, seed: int = 0, dataset: str = "",
        model: Path | None = None, quick: bool = False, work: Path | None = None) -> dict:
    """Fit ``peer`` on ``split``'s training side within ``budget`` seconds and score it on its
    test side; the result line (see the module docstring).

    Raises
    ------
    ValueError
        An unknown peer, a peer that needs ``model`` without one, or a budget that is not positive.
    """
    if peer not in PEERS:
        raise ValueError(f"unknown peer {peer!r}; the peers: {', '.join(PEERS)}")
    if PEERS[peer] and model is None:
        raise ValueError(f"{peer} fine-tunes a local model folder: pass --model FOLDER "
                         "(pipelines/benchmarks/peers.py passes embedkit's)")
    if model is not None and not Path(model).is_dir():
        raise ValueError(f"--model {model}: no such folder")
    if budget <= 0:
        raise ValueError(f"the budget is {budget} s; it must be positive")
    train, test = read_split(split)
    offline()
    seed_everything(seed)
    with tempfile.TemporaryDirectory(prefix=f"peer-{peer}-", dir=work) as scratch:
        with TreeMemory() as memory:
            start = time.perf_counter()
            for module in IMPORTS[peer]:
                importlib.import_module(module)
            import_s = time.perf_counter() - start
            predict, describe = FIT[peer](train, budget, seed, Path(scratch), model, quick)
            wall = time.perf_counter() - start
            start = time.perf_counter()
            pred = np.asarray(predict(test))
            predict_s = time.perf_counter() - start
        pick, details = describe()  # untimed, outside the memory watch
    hits = pred == test["label"].to_numpy()
    from sklearn.metrics import f1_score  # every peer's environment has scikit-learn

    # as text on both sides: a peer may give integer labels back as objects, which scikit-learn
    # will not compare with the integers it was given
    f1_macro = float(f1_score(test["label"].to_numpy().astype(str), pred.astype(str),
                              average="macro"))
    mib = 2 ** 20
    # ru_maxrss is in KiB on Linux
    self_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"peer": peer, "dataset": dataset or split.name, "budget_s": float(budget),
            "seed": seed, "quick": quick, "n_train": len(train), "n_test": len(test),
            "accuracy": float(hits.mean()), "f1_macro": f1_macro, "held_out_right": bits(hits),
            "wall_s": wall, "used_share": wall / budget, "import_s": import_s,
            "predict_s": predict_s,
            "peak_mb": memory.peak / mib, "maxrss_self_mb": self_mb,
            "maxrss_children_mb": children_mb, "pick": str(pick), "details": details,
            "versions": versions(), "machine": machine()}


def machine() -> str:
    """The processor, the cores this process may use, and a GPU where torch sees one."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    text = f"{platform.processor() or platform.machine()}, {cores} cores, {platform.system()}"
    try:
        import torch

        if torch.cuda.is_available():
            text += f", {torch.cuda.get_device_name(0)}"
    except ImportError:
        pass
    return text


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peer", required=True, choices=list(PEERS))
    parser.add_argument("--split", type=Path, required=True,
                        help="a folder with train.parquet and test.parquet (text, label)")
    parser.add_argument("--budget", type=float, required=True, help="seconds")
    parser.add_argument("--set", default="", help="the set's name in the result line")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", type=Path, default=None,
                        help="the local model folder (AutoGluon MultiModal, SetFit)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke settings: one epoch (MultiModal), 20 steps (SetFit)")
    parser.add_argument("--work", type=Path, default=None,
                        help="where the peer writes its models (a temporary folder inside it, "
                             "removed after the run)")
    parser.add_argument("--result", type=Path, required=True, help="append the JSON line here")
    args = parser.parse_args(argv)
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
    row = run(args.peer, args.split, args.budget, seed=args.seed, dataset=args.set,
              model=args.model, quick=args.quick, work=args.work)
    with args.result.open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    print(f"{row['peer']} on {row['dataset']}: {row['accuracy']:.3f} held out, {row['wall_s']:.0f} s "
          f"of {row['budget_s']:.0f} s, peak {row['peak_mb'] / 1024:.1f} GB, pick {row['pick']}",
          file=sys.stderr, flush=True)
    return row


if __name__ == "__main__":
    main()
