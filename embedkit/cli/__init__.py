"""The ``embedkit`` command.

Examples
--------
    embedkit compare                              # every default pipeline on BBC News
    embedkit compare --quick                      # a smoke run: 300 documents, 3 folds
    embedkit compare -d trec -r tfidf -r lsa -H mlp -p head.epochs=3
    embedkit compare -d sms-spam --metric f1 --metric accuracy   # spam F1 first
    embedkit compare --file my.csv --text-column review --label-column stars
    embedkit compare -e pipelines/experiments/tfidf_variants.py   # an experiment file
    embedkit tune --file my.csv --text-column review --label-column stars --budget 15m
    embedkit predict embedkit-tune/model new.csv -o predictions.csv
    embedkit embed corpus.csv vectors.parquet -r minilm --id-column id
    embedkit cache info
    embedkit datasets
    embedkit resources                            # named models and data: size, fetched or not

``-h`` / ``--help`` is help on every command.
"""

from __future__ import annotations

import typer

from ._compare import compare
from ._files import datasets, embed, predict
from ._stores import cache_app, resources_app
from ._tune import tune
from ._words import analogy, neighbors

__all__ = ["app"]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="embedkit: compare text representations and neural heads as scikit-learn pipelines.",
)
app.add_typer(cache_app, name="cache")
app.add_typer(resources_app, name="resources")
for command in (compare, tune, embed, neighbors, analogy, datasets, predict):
    app.command()(command)


if __name__ == "__main__":  # pragma: no cover
    app()
