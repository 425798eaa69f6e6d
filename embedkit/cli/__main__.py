"""``python -m embedkit.cli``: the ``embedkit`` command, from an environment without its script."""

from . import app

app(prog_name="embedkit")
