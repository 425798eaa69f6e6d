"""How the ``embedkit`` command reports what went wrong: an error in the command line's own terms
(``--text-column``, not ``text_column=``), a failure, an interruption.

`embedkit.cli` and its sub-command modules use these; nothing here imports them.
"""

from __future__ import annotations

import re

import typer

__all__ = ["fail", "in_flags", "interrupted"]


def in_flags(message: str, ctx: typer.Context | None = None) -> str:
    """An error message in the running command's terms: ``text_column=`` becomes
    ``--text-column``, and "(text_column=, ...; on the command line --text-column, ...)" keeps
    only the command-line part."""
    message = re.sub(r"\(([^();]*); on the command line ([^()]*)\)", r"(\2)", message)
    if ctx is None:
        return message
    flags = {p.name: max(p.opts, key=len) for p in ctx.command.params
             if p.param_type_name == "option" and p.name}
    return re.sub(r"(?<![\w.\-])([a-z][a-z_]*)=(?=\S)",
                  lambda m: f"{flags[m.group(1)]} " if m.group(1) in flags else m.group(0), message)


def fail(err: Exception, ctx: typer.Context | None = None) -> typer.Exit:
    """Print ``error: ...`` in red and give the exit (code 2) to raise."""
    typer.secho(f"error: {in_flags(str(err), ctx)}", fg=typer.colors.RED, err=True)
    return typer.Exit(2)


def interrupted(what: str) -> typer.Exit:
    """Print what Ctrl-C (or SIGTERM) left undone and give the exit (code 130) to raise."""
    typer.secho(f"interrupted: {what}", fg=typer.colors.YELLOW, err=True)
    return typer.Exit(130)
