"""Built-in experiments for ``embedkit compare --experiment NAME``: one short module each.

An experiment module holds a docstring (its first line is the summary ``--list`` prints) and
``PAIRS``, a list of ``(representation, head)`` names from `embedkit.registry`; a file of your
own in the same shape runs with ``--experiment path/to/file.py`` and may name steps of its own
(see `embedkit.registry.load_experiment`).
"""
