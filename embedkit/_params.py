"""The parameter table: every estimator declares its constructor parameters once, checked once.

Each exported estimator has a class-level ``_parameter_constraints`` dict in scikit-learn's style
(``{"window": [Interval(Integral, 1, None, closed="left")], ...}``), optionally
``_parameter_rules``, the checks that relate two parameters (`Rule`), and optionally a
``_parameter_hint(name)`` method whose sentence is added to that parameter's error (e.g. why an
output form does not exist). `validate_params` checks them at the start of ``fit``
(`Representation` and `NeuralHead` call it before touching any data) and raises
`InvalidParameterError` (a ``ValueError`` and a ``TypeError``) naming the estimator, the
parameter, the value received and what is allowed, with a did-you-mean for near-miss words.

The constraint objects are scikit-learn's (``Interval``, ``StrOptions``, ``Options``,
``HasMethods``, ``"boolean"``, ``"verbose"``, ``None``, types), so the table reads like any
scikit-learn estimator's. The loop that applies them is this module's, not
``validate_parameter_constraints``, for three reasons: scikit-learn's loop skips parameters that
have no entry (here a missing entry is a bug, reported as such); it only accepts its own
constraint classes, and our parameters need a few more (`Sizes` for layer widths given as an int
or a tuple, `NgramRange`, `Layers`, `Device`, `CacheSpec`); and its messages list options in set
order with no suggestion, where ours are sorted and say "did you mean".

Where embedkit builds a pipeline (`embedkit.configure.make_pipeline`, ``compare``, ``tune``, an
ensemble's members) every step is checked before any work (`validate_steps`), so a head's bad
parameter is reported before a single document is encoded. In a ``Pipeline`` of your own, each
step checks its parameters at the start of its own ``fit`` (a step is never told which pipeline
fits it; embedkit does not look for it on the call stack).

`invalid_values` and `edge_values` derive, from a table entry, values just past and exactly at
the edges of what it allows; the contract and hostile-input suites use them, so a new parameter
is tested as soon as it has an entry. A constraint written for one class lists its own
(``edge_examples``, ``invalid_examples``; e.g. `embedkit.heads.ensemble.Members`).

Examples
--------
>>> from embedkit import Word2VecEmbedder
>>> try:
...     Word2VecEmbedder(window=0).fit(["the cat sat"])
... except ValueError as err:
...     print(err)
Word2VecEmbedder(window=0): window must be an int in the range [1, inf).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    InvalidParameterError,
    Options,
    RealNotInt,
    StrOptions,
    _Constraint,
    make_constraint,
)

from ._suggest import did_you_mean

__all__ = ["SEED", "CacheSpec", "Device", "HasMethods", "Interval", "InvalidParameterError", "Layers",
           "NgramRange", "Options", "PositiveFloats", "RealNotInt", "Rule", "Sizes", "StrOptions", "as_sizes",
           "edge_values", "invalid_values", "positive_int", "validate_params",
           "validate_steps"]


def positive_int(low: int = 1) -> Interval:
    """``Interval(Integral, low, None, closed="left")``: the most common entry."""
    return Interval(Integral, low, None, closed="left")


#: a random seed: what numpy, torch and gensim all accept
SEED = Interval(Integral, 0, 2**32 - 1, closed="both")
#: a multi-label classifier's ``threshold``: the probability a label must exceed to be predicted,
#: or "tune" (the value maximising micro-F1 on held-out rows, `embedkit.data.targets.tune_threshold`)
THRESHOLD = [Interval(Real, 0, 1, closed="neither"), StrOptions({"tune"})]


# ---------------------------------------------------------------------------------------------
# constraints scikit-learn does not have
# ---------------------------------------------------------------------------------------------

def _is_int(value) -> bool:
    return isinstance(value, Integral) and not isinstance(value, (bool, np.bool_))


class Sizes(_Constraint):
    """Layer widths: an int >= 1 (one layer, as scikit-learn's MLP accepts) or a tuple/list of them.

    ``empty`` allows ``()`` (no layer). Read the value with `as_sizes`.
    """

    def __init__(self, empty: bool = True):
        super().__init__()
        self.empty = empty

    def is_satisfied_by(self, val):
        if _is_int(val):
            return val >= 1
        if not isinstance(val, (tuple, list)):
            return False
        return (self.empty or len(val) > 0) and all(_is_int(v) and v >= 1 for v in val)

    def __str__(self):
        return ("an int >= 1 or a tuple of ints >= 1" + (" (() for none)" if self.empty
                                                          else " (at least one)"))


def as_sizes(value) -> tuple[int, ...]:
    """A `Sizes` value as a tuple of ints: ``32 -> (32,)``, ``[64, 32] -> (64, 32)``."""
    return (int(value),) if _is_int(value) else tuple(int(v) for v in value)


class PositiveFloats(_Constraint):
    """A non-empty sequence of positive, finite floats (regularisation strengths to try)."""

    edge_examples = ((1e-4,), (1e-6, 1.0))
    invalid_examples = ((), (0.0,), (1e-4, -1.0), "1e-4", (float("nan"),))

    def is_satisfied_by(self, val):
        if isinstance(val, (str, bytes)) or not hasattr(val, "__len__") or len(val) == 0:
            return False
        return all(isinstance(v, Real) and not isinstance(v, bool) and np.isfinite(v) and v > 0
                   for v in val)

    def __str__(self):
        return "a non-empty sequence of positive floats, e.g. (1e-6, 1e-5, 1e-4)"


class NgramRange(_Constraint):
    """A pair ``(low, high)`` of ints with ``1 <= low <= high``, as scikit-learn's ``ngram_range``."""

    def is_satisfied_by(self, val):
        return (isinstance(val, (tuple, list)) and len(val) == 2 and all(map(_is_int, val))
                and 1 <= val[0] <= val[1])

    def __str__(self):
        return "a pair (low, high) of ints with 1 <= low <= high, e.g. (1, 2)"


class Layers(_Constraint):
    """A non-empty list (or tuple) of ints: hidden-layer indices (the model's depth is checked at fit)."""

    def is_satisfied_by(self, val):
        return isinstance(val, (tuple, list)) and len(val) > 0 and all(map(_is_int, val))

    def __str__(self):
        return "a non-empty list of layer indices, e.g. [-1] or [-4, -3, -2, -1]"


class Device(_Constraint):
    """A torch device name that exists on this machine: "auto", "cpu", "cuda", "cuda:N" or "mps".

    Availability is part of the check (through `embedkit.machine.resolve_device`), so
    ``device="cuda"`` on a machine without a GPU is reported at the start of ``fit``, with the fix,
    instead of by torch in the first forward pass.
    """

    def is_satisfied_by(self, val):
        return isinstance(val, str) and self.explain(val) is None

    def explain(self, val) -> str | None:
        from .machine import resolve_device

        try:
            resolve_device(val)
        except ValueError as err:
            return str(err)
        return None

    def __str__(self):
        return "one of 'auto', 'cpu', 'cuda', 'cuda:N', 'mps' (available on this machine)"


class CacheSpec(_Constraint):
    """A ``cache=`` value: None, "memory", "disk", an ``EmbeddingCache`` or a folder path.

    The rules are `embedkit.cache.cache_spec_problem`'s (one place for fit and transform).
    """

    def is_satisfied_by(self, val):
        return self.explain(val) is None

    def explain(self, val) -> str | None:
        from .cache import cache_spec_problem

        return cache_spec_problem(val)

    def __str__(self):
        return ("None, 'memory', 'disk', an embedkit.cache.MemoryCache / DiskCache, or a folder "
                "path (a pathlib.Path, or a str containing a path separator)")


@dataclass(frozen=True)
class Rule:
    """A check that relates parameters, e.g. ``min_n <= max_n``.

    Parameters
    ----------
    names : tuple of str
        The parameters involved, in the order ``test`` takes them.
    test : callable
        ``test(*values) -> bool``; True when the combination is valid.
    need : str
        What must hold, as a sentence ending, e.g. ``"min_n must be <= max_n"``.
    bad : dict
        A combination that breaks the rule (the contract suite checks it is refused).
    """

    names: tuple[str, ...]
    test: Callable[..., bool]
    need: str
    bad: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------

def _constraint(c) -> _Constraint:
    return c if isinstance(c, _Constraint) else make_constraint(c)


def _satisfied(c: _Constraint, value) -> bool:
    if isinstance(c, Interval) and isinstance(value, (bool, np.bool_)):
        return False  # True is an Integral in Python, but never a count or a rate
    try:
        return bool(c.is_satisfied_by(value))
    except (TypeError, ValueError):  # e.g. an unhashable value tested against Options
        return False


def _describe(c: _Constraint) -> str:
    if isinstance(c, Options):
        return "one of " + ", ".join(repr(o) for o in sorted(c.options, key=repr))
    name = type(c).__name__
    if name == "_Booleans":
        return "a bool"
    if name == "_VerboseHelper":
        return "an int >= 0 or a bool"
    if name == "_NoneConstraint":
        return "None"
    if name == "_InstancesOf":
        kind = c.type
        return {str: "a str", dict: "a dict", list: "a list", Real: "a float",
                Integral: "an int"}.get(kind, f"a {getattr(kind, '__name__', kind)}")
    return str(c)


def _suggestion(value, constraints) -> str:
    if not isinstance(value, str):
        return ""
    return did_you_mean(value, [o for c in constraints if isinstance(c, Options)
                                for o in c.options if isinstance(o, str)])


def _check_one(owner: str, name: str, value, spec, hint: str = "") -> None:
    if spec == "no_validation":
        return
    constraints = [_constraint(c) for c in spec]
    if any(_satisfied(c, value) for c in constraints):
        return
    hint = f" {hint}" if hint else ""
    shown = [c for c in constraints if not c.hidden]
    subject = f"{owner}({name}={value!r})"
    details = [d for c in shown if (d := getattr(c, "explain", lambda v: None)(value))]
    if details:  # the constraint's own account of the problem and its fix
        raise InvalidParameterError(f"{subject}: {details[0]}{hint}")
    allowed = ", ".join(_describe(c) for c in shown[:-1])
    allowed = f"{allowed} or {_describe(shown[-1])}" if allowed else _describe(shown[-1])
    raise InvalidParameterError(f"{subject}: {name} must be {allowed}."
                                f"{_suggestion(value, shown)}{hint}")


def validate_params(estimator, only: tuple[str, ...] | None = None) -> None:
    """Check ``estimator``'s parameters against its class's table; raise on the first bad one.

    Parameters
    ----------
    estimator : an embedkit representation or head
    only : tuple of str, optional
        Check just these parameters (e.g. ``("output",)`` where one is read again after fit).

    Raises
    ------
    InvalidParameterError
        A ``ValueError`` (and ``TypeError``): ``"Cls(param=value): param must be <allowed>."``
    TypeError
        When the class has a constructor parameter without a table entry (a bug in the class).
    """
    cls = type(estimator)
    owner = cls.__name__
    table = getattr(cls, "_parameter_constraints", {})
    params = estimator.get_params(deep=False)
    missing = sorted(set(params) - set(table))
    if missing:
        raise TypeError(f"{owner} has no _parameter_constraints entry for {missing}; every "
                        "constructor parameter must be declared (see embedkit._params).")
    hints = getattr(estimator, "_parameter_hint", lambda name: "")
    for name in params if only is None else only:
        _check_one(owner, name, params[name], table[name], hints(name))
    if only is not None:
        return
    for rule in getattr(cls, "_parameter_rules", ()):
        values = [params[n] for n in rule.names]
        if not rule.test(*values):
            given = ", ".join(f"{n}={v!r}" for n, v in zip(rule.names, values, strict=True))
            raise InvalidParameterError(f"{owner}({given}): {rule.need}.")


def validate_steps(model, skip=None) -> None:
    """Validate ``model`` and every estimator inside it (Pipeline steps, FeatureUnion and
    ColumnTransformer parts, nested) that has a parameter table: embedkit's with
    `validate_params`, scikit-learn's with their own ``_validate_params`` (what their ``fit``
    runs first). ``skip``: one estimator not to check (it checks itself)."""
    inside = model.get_params(deep=True).values() if hasattr(model, "get_params") else ()
    for step in (model, *inside):
        if step is skip or not hasattr(type(step), "_parameter_constraints") \
                or not hasattr(step, "get_params"):
            continue
        if type(step).__module__.split(".")[0] == "embedkit":
            validate_params(step)
        elif hasattr(step, "_validate_params"):  # a scikit-learn estimator: its own check
            step._validate_params()


# ---------------------------------------------------------------------------------------------
# values at and past the edges, for the test suites
# ---------------------------------------------------------------------------------------------

_NOT_A_CHOICE = object()


def _invalid_for(c: _Constraint) -> list:
    if hasattr(c, "invalid_examples"):  # a constraint of one class lists its own
        return list(c.invalid_examples)
    if isinstance(c, Interval):
        integral = c.type is Integral
        step = 1 if integral else 1e-6
        out = []
        if c.left is not None:  # the bound itself when open, one step below it when closed
            out.append(c.left - step if c.closed in ("left", "both") else c.left)
        if c.right is not None:
            out.append(c.right + step if c.closed in ("right", "both") else c.right)
        out.append(1.5 if integral else float("nan"))  # a float for an int; NaN for a float
        return out
    if isinstance(c, Options):
        words = sorted(o for o in c.options if isinstance(o, str))
        if words:  # a near miss, e.g. "meax" for "mean"
            w = words[0]
            return [next(v for v in (w[:-1] + "x", w + "x") if v not in c.options)]
        numbers = [o for o in c.options if _is_int(o)]
        return [max(numbers) + 1, min(numbers) - 1] if numbers else [_NOT_A_CHOICE]
    if isinstance(c, Sizes):
        return [0, (0,), (8, -1)] + ([] if c.empty else [()])
    if isinstance(c, NgramRange):
        return [(0, 0), (2, 1), 1]
    if isinstance(c, Layers):
        return [[], -1]
    if isinstance(c, Device):
        return ["tpu", "cuda:x"]
    if isinstance(c, CacheSpec):
        return ["memroy", 3]
    name = type(c).__name__
    if name in ("_Booleans", "_VerboseHelper"):
        return ["yes", -1]
    return []


def invalid_values(spec) -> list:
    """Values that every constraint of a table entry refuses (just past its edges, near-miss
    words, wrong types)."""
    if spec == "no_validation":
        return []
    constraints = [_constraint(c) for c in spec]
    out = []
    for c in constraints:
        for value in _invalid_for(c):
            if value is _NOT_A_CHOICE or any(_satisfied(k, value) for k in constraints):
                continue
            if not any(value is v or (type(value) is type(v) and value == v) for v in out):
                out.append(value)
    return out


def _edges_for(c: _Constraint) -> list:
    if hasattr(c, "edge_examples"):
        return list(c.edge_examples)
    if isinstance(c, Interval):
        out = []
        if c.left is not None:
            closed = c.closed in ("left", "both")
            out.append(c.left if closed else c.left + 1 if c.type is Integral else c.left + 1e-6)
        if c.right is not None:
            closed = c.closed in ("right", "both")
            out.append(c.right if closed else c.right - 1 if c.type is Integral
                       else c.right - 1e-6)
        return out
    if isinstance(c, Options):
        return sorted(c.options, key=repr)
    if isinstance(c, Sizes):
        return [1, (1,)] + ([()] if c.empty else [])
    if isinstance(c, NgramRange):
        return [(1, 1)]
    if isinstance(c, Layers):
        return [[0]]
    if isinstance(c, Device):
        return ["cpu", "auto"]
    if type(c).__name__ == "_VerboseHelper":
        return [0, 1]
    if type(c).__name__ == "_Booleans":
        return [True, False]
    if type(c).__name__ == "_NoneConstraint":
        return [None]
    return []


def edge_values(spec) -> list:
    """Values a table entry allows, at the edges of each constraint (interval bounds, each
    option, the smallest sizes, None)."""
    if spec == "no_validation":
        return []
    out = []
    for c in (_constraint(c) for c in spec):
        for value in _edges_for(c):
            if not any(value is v or (type(value) is type(v) and value == v) for v in out):
                out.append(value)
    return out
