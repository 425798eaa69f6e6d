"""Named experiments for `embedkit compare --experiment NAME`: one short module each.

An experiment module holds a docstring (its first line is the summary `--list` prints) and
``PAIRS``, a list of ``(representation, head)`` names from `pipelines.grids`. Add a file here
to add an experiment.
"""

from __future__ import annotations

import importlib
import pkgutil


def available() -> dict[str, str]:
    """Experiment name -> one-line summary."""
    out = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        out[info.name] = (module.__doc__ or "").strip().splitlines()[0]
    return out


def load(name: str) -> list[tuple[str, str]]:
    """The ``(representation, head)`` pairs of experiment ``name``."""
    known = available()
    if name not in known:
        raise ValueError(f"unknown experiment {name!r}; choose from {sorted(known)} "
                         f"(add a module to pipelines/experiments/ to define one).")
    return list(importlib.import_module(f"{__name__}.{name}").PAIRS)
