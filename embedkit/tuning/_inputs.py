"""What a search is given, checked: the pairs it searches, the labels, the documents cut to what
any model reads (`prepare`: all of a search's inputs at once), the two five-line baselines, and
the least budget that scores anything."""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd

from .._budget import format_bytes, parse_memory
from ..data.documents import MAX_DOCUMENT_CHARS
from ..data.reading import one_label_per_name
from ..registry import HEADS, REPRESENTATIONS, TRAINS_ENCODER, pair_kind, pair_pipeline
from ..storage.outputs import WRITE_SECONDS
from ._settings import (
    BASELINE_COST,
    DATA_SHARE,
    DEFAULT_PAIRS,
    FEW_LABEL_PAIRS,
    FEW_LABELS,
    MARGIN,
    MEMORY_SHARE,
    MIN_PER_LABEL,
    MIN_ROWS,
    PER_DOC_SECONDS,
    VALID_ROWS,
)

__all__ = ["DEFAULT_SCORING", "MINILM_BASELINE", "TFIDF_BASELINE", "Inputs", "Target",
           "baseline_pipelines", "beyond_reach", "check_labels", "check_scoring", "check_table",
           "chosen_pairs", "least_budget", "memory_limit", "pairs_for_task", "prepare", "rows_to_read",
           "standing_pairs"]

TFIDF_BASELINE, MINILM_BASELINE = "plain TF-IDF + LR", "plain MiniLM + LR"


def baseline_pipelines(cache="memory", task: str = "classification", column=None,
                       solver: str = "saga") -> dict:
    """The two five-line baselines a user would write (issue 13), by leaderboard name.

    They are `embedkit.experiments.BASELINES`' rows, the ones every ``embedkit compare`` report
    carries: *plain TF-IDF + LR* is scikit-learn ``TfidfVectorizer(ngram_range=(1, 2),
    min_df=2, sublinear_tf=True)`` + ``LogisticRegression(max_iter=3000)``; *plain MiniLM + LR*
    the packaged all-MiniLM-L6-v2, L2-normalised as sentence-transformers' ``encode`` returns it,
    + the same ``LogisticRegression``. The search solves the TF-IDF one by SAGA (``solver``):
    the same loss and penalty, so the same model up to the solvers' tolerance, where lbfgs pays
    for every coefficient (terms times classes) at each of its steps
    (`pipelines/benchmarks/bench_linear.py` measures both); the benchmarks fit the five lines as
    written (``solver="lbfgs"``). The MiniLM one uses ``cache``, so it reads the vectors
    the search already computed (the registry's ``minilm`` has the same fingerprint). For a
    number (``task="regression"``) both end in a plain ``Ridge`` instead, for label sets in one
    ``LogisticRegression`` per label (``OneVsRestClassifier``), named so. On a table they read
    its text ``column`` alone, as five lines on one column would (`embedkit.representations.table.text_only`).
    """

    from ..experiments import BASELINES
    from ..registry import for_task
    from ..representations.table import text_only

    reps, heads = BASELINES.representations, BASELINES.heads

    def reading(step):
        return step if column is None else text_only(step, column)

    pipes = {  # the candidates' step names, so a baseline pick reads like any other
        TFIDF_BASELINE: pair_pipeline(reading(reps["baseline-tfidf"].factory()),
                                      heads["plain-lr"].factory().set_params(solver=solver, random_state=0)),
        MINILM_BASELINE: pair_pipeline(
            reading(reps["baseline-minilm"].factory().set_params(cache=cache)),
            heads["plain-lr"].factory()),
    }
    renamed = {"regression": "+ Ridge", "multilabel": "+ LR one-vs-rest"}
    if task not in renamed:
        return pipes
    return {name.replace("+ LR", renamed[task]): for_task(pipe, task) for name, pipe in pipes.items()}


def check_table(X, text=None, categorical=None, numeric=None):
    """``(table, roles)`` where ``X`` is a table (a DataFrame of several columns, or any
    DataFrame whose roles are named): only its columns with a role, their index reset, each text
    column read as str (a missing text is the empty document) and cut where no model reads
    further; the roles named or read from the values (`embedkit.data.columns.infer_columns`, which
    checks them). None where ``X`` is documents."""
    from ..data.columns import infer_columns
    from ..data.documents import within_reach

    named = any(v is not None for v in (text, categorical, numeric))
    if not isinstance(X, pd.DataFrame) or (X.shape[1] < 2 and not named):
        if named:
            raise ValueError("text_columns / categorical / numeric name the columns of a table; "
                             f"X is a {type(X).__name__}. Give a pandas DataFrame.")
        return None
    roles = infer_columns(X, text=text, categorical=categorical, numeric=numeric)
    table = X[list(roles.columns)].reset_index(drop=True)
    for column in roles.text:
        values = table[column].astype(object).where(table[column].notna(), "").astype(str)
        table[column] = np.asarray(within_reach(values.tolist(), MAX_DOCUMENT_CHARS), dtype=object)
    return table, roles


def least_budget(docs=(), output=None, *, rows: int | None = None,
                 characters: int | None = None) -> float:
    """Seconds below which a budget cannot score anything on ``docs`` (or, before a file is
    read, on ``rows`` documents of ``characters`` in all: `embedkit.data.sizes.size_file`'s
    bounds, which give as much or more): the search's own work a document (`PER_DOC_SECONDS`:
    checks, the split, the report), the plain TF-IDF baseline on the rows it starts on
    (`BASELINE_COST` for `MIN_ROWS` and the validation rows, with the margin) and writing
    ``output`` (`WRITE_SECONDS`)."""
    if rows is None:
        rows = len(docs)
        chars = float(np.mean([min(len(d), MAX_DOCUMENT_CHARS) for d in docs])) if rows else 0.0
    else:
        chars = min(characters / rows, MAX_DOCUMENT_CHARS) if rows else 0.0
    used = min(rows, MIN_ROWS + VALID_ROWS)
    fit = MARGIN * used / 1000 * (BASELINE_COST[0] + BASELINE_COST[1] * chars / 500)
    return 1.0 + PER_DOC_SECONDS * rows + fit + (WRITE_SECONDS if output is not None else 0.0)


def memory_limit(memory) -> float:
    """Bytes the search may hold: ``memory`` (a size), else `MEMORY_SHARE` of the memory free
    now on top of what this process holds. A limit this process has passed already is refused."""
    from ..machine import resident
    from ..machine.memory import free_memory

    held = resident()
    if memory is None:
        return held + MEMORY_SHARE * free_memory()
    limit = parse_memory(memory)
    if limit <= held:
        raise ValueError(f"memory={memory!r}: this process holds {format_bytes(held)} already "
                         "(the data, the libraries); give a larger limit, or None for "
                         f"{MEMORY_SHARE:.0%} of the memory free.")
    return limit


def rows_to_read(rows: int, characters: int, limit: float, source: str = "the file") -> int:
    """How many of a file's ``rows`` (``characters`` bytes in all) a search within ``limit``
    bytes reads: all of them where, as read (`embedkit.data.sizes.READ_MEMORY` bytes a byte
    of the file), they take at most `DATA_SHARE` of what the limit leaves this process, else as
    many as do (a random sample of the file, `embedkit.data.reading.read_table`'s ``rows``);
    room for fewer than a search starts on (`MIN_ROWS` and `VALID_ROWS`) is an error.

    Examples
    --------
    >>> rows_to_read(1000, 100_000, 1e12)
    1000
    """
    from ..data.sizes import READ_MEMORY
    from ..machine import resident

    held = resident()
    room = DATA_SHARE * max(limit - held, 0.0)
    per_row = READ_MEMORY * characters / max(rows, 1)
    if per_row * rows <= room:
        return rows
    read = int(room / per_row)
    if read < MIN_ROWS + VALID_ROWS:
        raise ValueError(
            f"{source}: its {rows:,} rows ({format_bytes(characters)}) would hold about "
            f"{format_bytes(per_row * rows)} of memory as read; within the limit of "
            f"{format_bytes(limit)}, beside the {format_bytes(held)} this process holds, the "
            f"search has room for {read:,} of them, fewer than the {MIN_ROWS + VALID_ROWS:,} it "
            "starts on: give a larger limit (memory=8GB, say), or free memory.")
    return read


def few_labels(per_class: float | None) -> bool:
    """Whether the median class holds at most `FEW_LABELS` documents (``per_class``; None for
    numbers and label sets)."""
    return per_class is not None and per_class <= FEW_LABELS


def chosen_pairs(pairs, representations, heads, finetune,
                 per_class: float | None = None) -> list[tuple[str, str]]:
    """The pairs a search holds: those given, else those ``representations`` and ``heads``
    select, else `DEFAULT_PAIRS`, where labels are few (`few_labels`) with `FEW_LABEL_PAIRS`
    (those it lacks) instead of the classifier fine-tuning ones; those that train an encoder
    removed where ``finetune`` is False."""
    from .. import experiments

    if pairs is not None and (representations or heads):
        raise ValueError("give either pairs=[(representation, head), ...] or representations= / "
                         "heads= selections, not both.")
    if pairs is None and not (representations or heads):
        chosen = list(DEFAULT_PAIRS)
        if few_labels(per_class):
            chosen = [p for p in chosen if pair_kind(*p) != "finetune"]
            chosen += [p for p in FEW_LABEL_PAIRS if p not in chosen]
    elif pairs is None:
        chosen = list(experiments.select(representations or None, heads or None).pairs)
    else:
        chosen = list(experiments.checked_pairs(pairs, REPRESENTATIONS, HEADS, "tune(pairs=...)"))
    if finetune is False:
        chosen = [(r, h) for r, h in chosen if pair_kind(r, h) not in TRAINS_ENCODER]
    if not chosen:
        raise ValueError("no pair left to search: finetune=False removed every pair given; "
                         "add pairs that do not fine-tune, or allow fine-tuning.")
    return chosen


def standing_pairs(pairs, per_class: float | None) -> tuple:
    """The pairs whose best model is the pick until another beats it beyond the noise (`FEW_LABEL_PAIRS`
    among ``pairs`` where labels are few); none: the better baseline stands."""
    return tuple(p for p in FEW_LABEL_PAIRS if p in pairs) if few_labels(per_class) else ()


def beyond_reach(docs: list[str]) -> list[str]:
    """A line saying which documents are longer than any model reads (they are cut there, once),
    or none."""
    from ..data.documents import CHARS_PER_TOKEN

    long = [len(d) for d in docs if len(d) > MAX_DOCUMENT_CHARS]
    if not long:
        return []
    return [f"{len(long):,} document{'s' if len(long) > 1 else ''} longer than "
            f"{MAX_DOCUMENT_CHARS:,} characters (the longest {max(long):,}) "
            f"{'are' if len(long) > 1 else 'is'} read to the first {MAX_DOCUMENT_CHARS:,} by "
            "every model; an encoder reads less of every document (all-MiniLM-L6-v2 at its 256 "
            f"tokens: the first {256 * CHARS_PER_TOKEN:,} characters at most)"]


class Target(NamedTuple):
    """The target of a search, checked: ``y`` (classes or numbers, one per document; for label
    sets a 0/1 matrix, a column per label), its ``task``, the label ``names`` of the matrix's
    columns (label sets only) and ``notes`` on what was left out."""

    y: np.ndarray
    task: str
    names: np.ndarray | None = None
    notes: tuple[str, ...] = ()


def check_labels(y, n_docs: int, task: str | None = None) -> Target:
    """The labels checked, and what they hold (a class, a number or a set of labels per
    document, read from the values unless ``task`` names it; `embedkit.data.targets.infer_task`)."""
    from ..data.datasets import is_multilabel
    from ..data.targets import infer_task, numeric_target

    if getattr(y, "ndim", 1) == 2 and not isinstance(y, pd.DataFrame):
        raise ValueError("y is a 2-D array; give tune a label set per document as a list (or a "
                         "cell 'a|b'), and it makes the label columns itself.")
    if len(y) != n_docs:
        raise ValueError(f"y has {len(y)} rows; expected one label per document ({n_docs}).")
    if is_multilabel(y) or task == "multilabel":
        return _label_sets(y)
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y has shape {y.shape}; expected one label per document ({n_docs}).")
    if pd.isna(pd.Series(y)).any():
        rows = np.flatnonzero(pd.isna(pd.Series(y)).to_numpy())[:10].tolist()
        raise ValueError(f"y has missing labels at rows {rows}; drop those rows or label them.")
    kind = infer_task(y, task) if len(pd.unique(y)) > 1 else "classification"
    if kind == "multilabel":  # cells "a|b" whose labels recombine
        return _label_sets(y)
    if kind == "regression":
        return Target(numeric_target(y), "regression")
    y, note = one_label_per_name(pd.Series(y))
    if note:  # "pos" and "pos ": one class, said
        warnings.warn(note.replace("were read as one", "are taken as one"), UserWarning, stacklevel=3)
    classes, counts = np.unique(y.astype(str) if y.dtype == object else y, return_counts=True)
    if len(classes) < 2:
        raise ValueError(f"y has a single class ({classes[0]!r}); tune needs at least two.")
    if counts.min() < MIN_PER_LABEL:
        rare = [str(c) for c, n in zip(classes, counts, strict=True) if n < MIN_PER_LABEL][:10]
        raise ValueError(f"classes {rare} have fewer than {MIN_PER_LABEL} documents; the training "
                         "and the validation rows each need some of every class. Add documents "
                         "or merge rare classes.")
    return Target(y, "classification")


def _label_sets(y) -> Target:
    """Label sets (a list per document, or cells ``a|b``) as a 0/1 matrix of the labels tune can
    learn: a label on fewer than `MIN_PER_LABEL` documents, or on every one, is left out, said."""
    from sklearn.preprocessing import MultiLabelBinarizer

    from ..data.targets import split_label_sets

    sets = split_label_sets(y.to_numpy(dtype=object) if isinstance(y, pd.Series) else list(y))
    binarizer = MultiLabelBinarizer().fit(sets)
    matrix = binarizer.transform(sets).astype(np.int8)
    counts = matrix.sum(axis=0)
    kept = (counts >= MIN_PER_LABEL) & (counts < len(matrix))
    left = [f"{name} ({n:,})" for name, n in zip(binarizer.classes_, counts, strict=True)
            if not (MIN_PER_LABEL <= n < len(matrix))]
    if not kept.any():
        raise ValueError(f"no label is on at least {MIN_PER_LABEL} documents and off others "
                         f"({', '.join(left[:10])}); tune needs labels to learn from.")
    notes = (f"{len(left)} label{'s' if len(left) > 1 else ''} left out, on fewer than "
             f"{MIN_PER_LABEL} documents or on every one (documents in brackets): "
             f"{', '.join(left[:10])}{' ...' if len(left) > 10 else ''}; tune predicts the other "
             f"{int(kept.sum()):,}",) if left else ()
    return Target(matrix[:, kept], "multilabel", binarizer.classes_[kept], notes)


#: what the search chooses by unless ``scoring`` says otherwise, by task
DEFAULT_SCORING = {"classification": "accuracy", "regression": "r2", "multilabel": "f1_micro"}


class Inputs(NamedTuple):
    """A search's inputs, checked (`prepare`): ``docs`` (the documents, or the table's rows),
    ``texts`` (what the baselines read: the documents, or the table's first text column), the
    table's ``roles`` (None for documents), the ``target``, the ``scoring`` and the ``notes`` the
    search says before it starts."""

    docs: object
    texts: np.ndarray
    roles: object
    target: Target
    scoring: str
    notes: list[str]


def prepare(X, y, *, text_columns=None, categorical=None, numeric=None, task=None,
            scoring=None) -> Inputs:
    """Documents (or a table) and their target checked and read once: texts past what any model
    reads cut once here, the task read from ``y`` unless given, the scoring checked against it."""
    from ..data.documents import validate_documents, within_reach

    table = check_table(X, text_columns, categorical, numeric)
    if table is None:  # documents
        texts = validate_documents(X)
        roles, notes = None, beyond_reach(texts)
        docs = texts = np.asarray(within_reach(texts, MAX_DOCUMENT_CHARS), dtype=object)
    else:  # a table: its text columns cut once, in check_table; the first is the baselines' text
        docs, roles = table
        texts = docs[roles.text[0]].to_numpy(dtype=object)
        notes = [roles.describe(), *beyond_reach(list(texts))]
    target = check_labels(y, len(docs), task)
    scoring = scoring or DEFAULT_SCORING[target.task]
    check_scoring(scoring, target.task)
    kind = {"classification": "a class", "regression": "a number",
            "multilabel": "a set of labels"}[target.task]
    notes += [f"task: {target.task} ({kind} per document), chosen by {scoring}", *target.notes]
    return Inputs(docs, texts, roles, target, scoring, notes)


def check_scoring(scoring: str, task: str) -> None:
    """A scorer of the other kind (accuracy on a number, RMSE on classes) refused with the fix;
    on label sets, a scorer other than the F1 the search thresholds (`LABEL_SET_SCORERS`)."""
    from sklearn.metrics import get_scorer

    from ._selection import LABEL_SET_SCORERS

    if task == "multilabel":
        if scoring not in LABEL_SET_SCORERS:
            raise ValueError(f"scoring={scoring!r} on label sets: tune chooses by F1 at each "
                             f"model's best threshold; use one of {', '.join(LABEL_SET_SCORERS)} "
                             "(default f1_micro).")
        return
    numbers = get_scorer(scoring)._score_func.__module__.endswith("_regression")
    if numbers != (task == "regression"):
        raise ValueError(f"scoring={scoring!r} scores {'numbers' if numbers else 'classes'}; y "
                         f"holds {'numbers' if task == 'regression' else 'classes'}. Leave scoring "
                         "out (accuracy for classes, r2 for a number), or name task=.")


def pairs_for_task(pairs, task: str) -> tuple[list, list[str]]:
    """The pairs whose steps can learn ``task``'s target, and a note naming the others: on a
    number, heads without a regression form; on a number or label sets, representations that
    learn from classes (NBSVM's log-count ratios: one block of columns per distinct value)."""
    if task == "classification":
        return pairs, []
    from ..base import needs_classes
    from ..registry import HEADS, REPRESENTATIONS, for_task

    by_classes = {r for r, _ in pairs if needs_classes(REPRESENTATIONS[r].factory())}
    no_form = {h for _, h in pairs if task == "regression"
               and for_task(HEADS[h].factory(), task) is None}
    kept = [(r, h) for r, h in pairs if r not in by_classes and h not in no_form]
    what = "a number" if task == "regression" else "label sets"
    if not kept:
        named = ", ".join(sorted(by_classes | no_form))
        raise ValueError(f"none of the pairs given can learn {what} ({named}); add pairs with "
                         "logreg (Ridge on a number), mlp or finetune heads.")
    notes = []
    if no_form:
        notes.append(f"{', '.join(sorted(no_form))}: no regression form; their pairs are left out "
                     "on this numeric target")
    if by_classes:
        notes.append(f"{', '.join(sorted(by_classes))}: learns from classes; its pairs are left "
                     f"out on {what}")
    return kept, notes
