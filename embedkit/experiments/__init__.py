"""Built-in experiments for ``embedkit compare --experiment NAME``: one short module each.

An experiment module holds a docstring (its first line is the summary ``--list`` prints) and
``PAIRS``, a list of ``(representation, head)`` names from `embedkit.registry`; a file of your
own in the same shape runs with ``--experiment path/to/file.py`` and may name steps of its own
(see `load_experiment`).

This package also holds the machinery: `Experiment` (compatible pairs and the entries their
names refer to), `select` (every compatible pair of a representation x head selection),
`load_experiment`, and `BASELINES`, the five-line models every report stands beside.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .._suggest import did_you_mean
from ..configure import Param, assign_params, configured, parse_params
from ..registry import (
    DEFAULT_HEADS,
    DEFAULT_REPRESENTATIONS,
    HEADS,
    QUICK_HEADS,
    QUICK_REPRESENTATIONS,
    REPRESENTATIONS,
    Entry,
    compatible,
    head_forms,
    passthrough,
    representation_form,
    resolve,
    step,
)

__all__ = ["BASELINES", "Experiment", "experiments", "load_experiment", "select"]


@dataclass(frozen=True)
class Experiment:
    """Compatible ``(representation, head)`` name pairs and the entries the names refer to."""

    pairs: tuple[tuple[str, str], ...]
    representations: Mapping[str, Entry] = field(default_factory=lambda: REPRESENTATIONS)
    heads: Mapping[str, Entry] = field(default_factory=lambda: HEADS)
    about: str = ""

    def with_params(self, params) -> Experiment:
        """This experiment with ``params`` (`Param` or ``"[step.]name=value"`` strings) set on
        its steps; every value is checked here, before any work."""
        params = tuple(p if isinstance(p, Param) else parse_params([p])[0] for p in params or ())
        if not params:
            return self
        used_reps = list(dict.fromkeys(r for r, _ in self.pairs))
        used_heads = list(dict.fromkeys(h for _, h in self.pairs))
        settings = assign_params(params, self.representations, self.heads, used_reps, used_heads)
        reps, heads = dict(self.representations), dict(self.heads)
        for (kind, name), values in settings.items():
            where = reps if kind == "representation" else heads
            entry = where[name]
            factory = functools.partial(configured, entry.factory, values, name)
            factory()  # checks the values now
            where[name] = dataclasses.replace(entry, factory=factory)
        return Experiment(self.pairs, reps, heads, self.about)


def checked_pairs(pairs, representations, heads, where: str) -> tuple[tuple[str, str], ...]:
    pairs = tuple((resolve(str(r), "representation", representations),
                   resolve(str(h), "head", heads)) for r, h in pairs)
    bad = [(r, h) for r, h in pairs if not compatible(representations[r], heads[h])]
    if bad:
        r, h = bad[0]
        raise ValueError(f"{where} pairs steps that do not fit together: {bad}; {r!r} produces "
                         f"{representation_form(representations[r])!r} and {h!r} accepts "
                         f"{', '.join(head_forms(heads[h]))}.")
    return pairs


def select(representations=None, heads=None, *, quick: bool = False,
           experiment: str | Path | None = None, params=()) -> Experiment:
    """Every compatible pair of a representation x head selection, or a named experiment.

    Parameters
    ----------
    representations, heads : list of str, optional
        Names (or aliases) from `REPRESENTATIONS` / `HEADS`; the defaults (or the quick ones)
        when None.
    quick : bool, default=False
        Use ``QUICK_REPRESENTATIONS`` x ``QUICK_HEADS`` as the defaults.
    experiment : str or Path, optional
        A built-in experiment's name or an experiment file (`load_experiment`), instead of a
        selection.
    params : list of str, optional
        Step parameters, ``"[step.]name=value"`` (`Experiment.with_params`).

    Examples
    --------
    >>> select(["tfidf", "glove-seq"], ["logreg", "rnn"]).pairs
    (('tfidf', 'logreg'), ('glove-seq', 'rnn'))
    """
    if experiment is not None:
        if representations or heads:
            raise ValueError("give either an experiment (-e) or a representation/head selection "
                             "(-r/-H), not both.")
        return load_experiment(experiment).with_params(params)
    reps = list(representations or (QUICK_REPRESENTATIONS if quick else DEFAULT_REPRESENTATIONS))
    hds = list(heads or (QUICK_HEADS if quick else DEFAULT_HEADS))
    reps = list(dict.fromkeys(resolve(r, "representation") for r in reps))
    hds = list(dict.fromkeys(resolve(h, "head") for h in hds))
    pairs = tuple((r, h) for r in reps for h in hds if compatible(REPRESENTATIONS[r], HEADS[h]))
    if not pairs:
        raise ValueError(f"no head in {hds} accepts what {reps} produce; see `embedkit compare --list`.")
    return Experiment(pairs).with_params(params)


def _plain_tfidf():
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)


def _plain_logreg():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=3000)


def _majority():
    from sklearn.dummy import DummyClassifier

    return DummyClassifier(strategy="most_frequent")


#: the rows every `embedkit compare` report carries (``--no-baselines`` leaves them out): what a
#: user writes in five lines, to judge every other row against. ``baseline-minilm`` is
#: ``TransformerEmbedder(normalize=True)``: the packaged all-MiniLM-L6-v2, mean-pooled over
#: 256 tokens and L2-normalised, which is what sentence-transformers' ``encode`` returns for
#: that model (cosine 1.0 to it, tested); it shares its cache entries with ``minilm``.
BASELINES = Experiment(
    pairs=(("baseline", "majority-class"), ("baseline-tfidf", "plain-lr"),
           ("baseline-minilm", "plain-lr")),
    representations={
        "baseline": Entry(passthrough, "no features"),
        "baseline-tfidf": Entry(_plain_tfidf, "scikit-learn TfidfVectorizer(ngram_range=(1, 2), "
                                              "min_df=2, sublinear_tf=True)"),
        "baseline-minilm": Entry(step("TransformerEmbedder", normalize=True),
                                 "all-MiniLM-L6-v2 mean-pooled, L2-normalised (sentence-"
                                 "transformers encode)"),
    },
    heads={
        "majority-class": Entry(_majority, "DummyClassifier: always the most frequent class"),
        "plain-lr": Entry(_plain_logreg, "LogisticRegression(max_iter=3000), default C, no "
                                         "scaling"),
    },
    about="majority class, plain TF-IDF + LR, plain MiniLM + LR",
)


def _summary(module) -> str:
    return (module.__doc__ or "").strip().split("\n")[0]


def experiments() -> dict[str, str]:
    """The built-in experiments: name -> one-line summary."""
    return {info.name: _summary(importlib.import_module(f"{__name__}.{info.name}"))
            for info in pkgutil.iter_modules(__path__)}


def _extra(module, attribute: str, builtin: Mapping[str, Entry], where: str) -> dict[str, Entry]:
    extra = {name: entry for name, entry in getattr(module, attribute, {}).items()
             if builtin.get(name) is not entry}  # a module may import the built-in dict
    for name, entry in extra.items():
        if name in builtin:
            raise ValueError(f"{where}: {attribute} redefines the built-in {name!r}; give your "
                             "step another name (results are recorded under it).")
        if not isinstance(entry, Entry):
            raise ValueError(f"{where}: {attribute}[{name!r}] is a {type(entry).__name__}; "
                             "write Entry(factory, 'what it is'), e.g. "
                             "Entry(step('TfidfEmbedder', min_df=2), 'TF-IDF, min_df=2').")
    return extra


def load_experiment(experiment: str | Path) -> Experiment:
    """A built-in experiment by name, or an experiment file by path.

    An experiment is a Python module: its docstring's first line is the summary
    ``embedkit compare --list`` prints, ``PAIRS`` lists ``(representation, head)`` names, and
    optional ``REPRESENTATIONS`` / ``HEADS`` dicts name steps of its own (`Entry` values, new
    names only). A file runs as Python, like any script you run: load only your own files.
    Copy ``embedkit/experiments/course_comparison.py`` to start one.

    Examples
    --------
    >>> len(load_experiment("course_comparison").pairs)
    12
    """
    text = str(experiment)
    builtin = [info.name for info in pkgutil.iter_modules(__path__)]
    if text in builtin:
        module = importlib.import_module(f"{__name__}.{text}")
        where = f"experiment {text!r}"
    elif text.endswith(".py") or Path(text).exists():
        path = Path(text)
        if not path.is_file():
            raise FileNotFoundError(f"experiment file {path} does not exist.")
        spec = importlib.util.spec_from_file_location(f"embedkit_experiment_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        where = str(path)
    else:
        raise ValueError(f"unknown experiment {text!r}.{did_you_mean(text, builtin)} Choose from "
                         f"{', '.join(sorted(builtin))} or pass the path of a .py file that "
                         "defines PAIRS (copy embedkit/experiments/course_comparison.py to start one).")
    if not hasattr(module, "PAIRS"):
        raise ValueError(f"{where} defines no PAIRS; list (representation, head) names in it, "
                         "e.g. PAIRS = [('tfidf', 'logreg')].")
    reps = {**REPRESENTATIONS, **_extra(module, "REPRESENTATIONS", REPRESENTATIONS, where)}
    hds = {**HEADS, **_extra(module, "HEADS", HEADS, where)}
    return Experiment(checked_pairs(module.PAIRS, reps, hds, where), reps, hds, _summary(module))
