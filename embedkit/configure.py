"""Step parameters: ``[step.]name=value`` settings parsed, assigned to steps and checked before
any work, and pipelines built from registry names with them.

``embedkit compare -p head.epochs=3``, ``embedkit embed -r minilm -p pooling=cls`` and
``make_pipeline("glove", "mlp", ["head.epochs=3"])`` all go through here: a name is resolved
against the estimator's own parameters (nested ``step__name`` ones and, for a Pipeline, a step's
bare name where it is unambiguous), an unknown one gets the closest valid name, and every value
is checked against the estimator's parameter table (`embedkit._params.validate_steps`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ._params import validate_steps
from ._suggest import did_you_mean
from .registry import (
    HEADS,
    REPRESENTATIONS,
    Entry,
    compatible,
    head_forms,
    pair_pipeline,
    representation_form,
    resolve,
)

__all__ = ["Param", "assign_params", "configure", "configured", "make_pipeline", "make_representation",
           "parse_params"]


@dataclass(frozen=True)
class Param:
    """One ``[step.]name=value`` setting: ``step`` is ``"features"``, ``"head"``, a step's
    registry name, or None (whichever step has a parameter of that name)."""

    step: str | None
    name: str
    value: Any
    text: str


def _parse_value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_params(items) -> tuple[Param, ...]:
    """Parse ``"[step.]name=value"`` strings; values are Python literals, else strings.

    Examples
    --------
    >>> parse_params(["head.epochs=3", "pooling=sif"])[0]
    Param(step='head', name='epochs', value=3, text='head.epochs=3')
    """
    out = []
    for item in items or ():
        key, sep, value = str(item).partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"-p {item!r}: write [step.]name=value, e.g. -p head.epochs=3 or "
                             "-p features.pooling=sif.")
        step_, dot, name = key.rpartition(".")
        out.append(Param(step_ if dot else None, name, _parse_value(value.strip()), str(item)))
    return tuple(out)


def _settable(estimator) -> dict[str, str]:
    """``{name a user may write: set_params key}``: the estimator's parameters, its nested ones
    (``step__name``) and, for a Pipeline, each step's bare names where they are unambiguous."""
    if isinstance(estimator, str) or not hasattr(estimator, "get_params"):
        return {}
    names = {k: k for k in estimator.get_params(deep=True)}
    bare: dict[str, list[str]] = {}
    for step_name, part in getattr(estimator, "steps", ()):
        if hasattr(part, "get_params"):
            for k in part.get_params(deep=False):
                bare.setdefault(k, []).append(f"{step_name}__{k}")
    names.update({k: v[0] for k, v in bare.items() if len(v) == 1 and k not in names})
    return names


def configure(estimator, params: Mapping[str, Any], label: str = ""):
    """A clone of ``estimator`` with ``params`` set and checked against the parameter tables
    (`embedkit._params.validate_steps`: every step of a Pipeline).

    Names are the estimator's own (``epochs``), nested ones (``logisticregressioncv__Cs``) or,
    for a Pipeline, a step's bare name where only one step has it. An unknown name gets the
    closest valid one.

    Examples
    --------
    >>> configure(HEADS["mlp"].factory(), {"epochs": 3}).epochs
    3
    """
    from sklearn.base import clone

    if not params:
        return estimator
    label = label or (estimator if isinstance(estimator, str) else type(estimator).__name__)
    names = _settable(estimator)
    if not names:
        raise ValueError(f"{label} takes no parameters; drop {sorted(params)} for it.")
    unknown = [n for n in params if n not in names]
    if unknown:
        n = unknown[0]
        listed = sorted(k for k in names if "__" not in k)
        raise ValueError(f"{label} has no parameter {n!r}.{did_you_mean(n, names)} Its parameters: "
                         f"{', '.join(listed)}.")
    configured = clone(estimator)
    configured.set_params(**{names[k]: v for k, v in params.items()})
    try:
        validate_steps(configured)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{label}: {err}") from None
    return configured


def configured(factory: Callable[[], Any], params: dict, label: str):
    """``configure(factory(), params, label)``: a registry entry's fresh step with ``params``
    set and checked (a factory, so each call builds its own estimator)."""
    return configure(factory(), params, label)


def assign_params(params: tuple[Param, ...], reps: Mapping[str, Entry], heads: Mapping[str, Entry],
            used_reps: list[str], used_heads: list[str]) -> dict[tuple[str, str], dict]:
    """``{(kind, name): {param: value}}``: which selected step each `Param` goes to.

    ``features.x`` / ``head.x`` go to every selected representation / head that has ``x``; a
    bare ``x`` to every selected step that has it, as long as those are all representations or
    all heads; ``glove.x`` to that step alone. Nothing is dropped silently: a parameter that no
    step it names has is an error with the closest valid name.
    """
    built = {("representation", r): reps[r].factory() for r in used_reps}
    built.update({("head", h): heads[h].factory() for h in used_heads})
    names = {key: _settable(est) for key, est in built.items()}

    def listing(keys):
        return ", ".join(sorted({n for k in keys for n in names[k] if "__" not in n}))

    out: dict[tuple[str, str], dict] = {}
    for p in params:
        if p.step is None or p.step in ("features", "head"):
            kinds = {"features": ["representation"], "head": ["head"]}.get(
                p.step, ["representation", "head"])
            candidates = [k for k in built if k[0] in kinds]
            targets = [k for k in candidates if p.name in names[k]]
            if len({k[0] for k in targets}) > 1:
                raise ValueError(f"-p {p.text}: both representations and heads have {p.name!r}; "
                                 f"write -p features.{p.text} or -p head.{p.text}.")
            if not targets:
                where = {"features": "representation", "head": "head"}.get(p.step, "step")
                steps = ", ".join(k[1] for k in candidates)
                guess = did_you_mean(p.name, [n for k in candidates for n in names[k]])
                raise ValueError(f"-p {p.text}: no selected {where} ({steps}) has a parameter "
                                 f"{p.name!r}.{guess} Their parameters: {listing(candidates)}.")
        else:
            target = None
            for kind, registry in (("representation", reps), ("head", heads)):
                try:
                    target = (kind, resolve(p.step, kind, registry))
                    break
                except ValueError:
                    continue
            steps = ["features", "head", *used_reps, *used_heads]
            if target is None:
                raise ValueError(f"-p {p.text}: no step {p.step!r} in this run."
                                 f"{did_you_mean(p.step, steps)} Name one of {', '.join(steps)}.")
            if target not in built:
                raise ValueError(f"-p {p.text}: {p.step!r} is not in this run's selection; its "
                                 f"steps are {', '.join(steps[2:])}.")
            if p.name not in names[target]:
                raise ValueError(f"-p {p.text}: {target[1]} ({type(built[target]).__name__}) has no "
                                 f"parameter {p.name!r}.{did_you_mean(p.name, names[target])} Its "
                                 f"parameters: {listing([target])}.")
            targets = [target]
        for target in targets:
            out.setdefault(target, {})[p.name] = p.value
    return out


def make_pipeline(representation: str, head: str, params=()):
    """A fresh ``Pipeline([("features", ...), ("head", ...)])`` for two registry names.

    Examples
    --------
    >>> make_pipeline("glove", "mlp", ["head.epochs=3"]).named_steps["head"].epochs
    3
    """
    rep, hd = resolve(representation, "representation"), resolve(head, "head")
    if not compatible(REPRESENTATIONS[rep], HEADS[hd]):
        raise ValueError(f"{hd!r} accepts {', '.join(head_forms(HEADS[hd]))} but {rep!r} produces "
                         f"{representation_form(REPRESENTATIONS[rep])!r}; see `embedkit compare --list` "
                         "for the pairs that fit.")
    settings = assign_params(parse_params(params), REPRESENTATIONS, HEADS, [rep], [hd])
    return pair_pipeline(
        configure(REPRESENTATIONS[rep].factory(), settings.get(("representation", rep), {}), rep),
        configure(HEADS[hd].factory(), settings.get(("head", hd), {}), hd))


def make_representation(name: str, params=()):
    """A representation by registry name or alias, with ``[features.]name=value`` parameters.

    What ``embedkit embed -r NAME -p key=value`` builds: the same step as ``embedkit compare
    -r NAME``.

    Examples
    --------
    >>> make_representation("minilm", ["pooling=cls"]).pooling
    'cls'
    """
    rep = resolve(name, "representation")
    settings = {}
    for p in parse_params(params):
        if p.step not in (None, "features") and resolve(p.step, "representation") != rep:
            raise ValueError(f"-p {p.text}: this command builds one representation, {rep}; "
                             f"write -p {p.name}=... or -p features.{p.name}=....")
        settings[p.name] = p.value
    return configure(REPRESENTATIONS[rep].factory(), settings, rep)
