"""The one suggestion of every error about a misspelt name: a leaf, imported by everything else.

Examples
--------
>>> did_you_mean("poolng", ["pooling", "output"])
" Did you mean 'pooling'?"
"""

from __future__ import annotations

import difflib

__all__ = ["did_you_mean"]


def did_you_mean(name, choices) -> str:
    """``" Did you mean 'x'?"`` for the closest of ``choices`` (difflib), or ``""``: for
    parameters, options, registry names, cache words, datasets and labels alike."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""
