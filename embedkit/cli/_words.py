"""The ``embedkit`` commands that query word vectors: ``embedkit neighbors`` (nearest words) and
``embedkit analogy`` (a : b :: c : ?).

`embedkit.cli` registers both on the ``embedkit`` command; nothing here imports it.
"""

from __future__ import annotations

import typer

from ._errors import fail

__all__ = ["analogy", "neighbors"]

_VECTORS_HELP = "Word vectors: a named resource (glove-6b-50d) or a GloVe/word2vec/fastText file."


def _word_vectors(vectors: str):
    from .. import GloveEmbedder

    return GloveEmbedder(vectors=vectors).fit([])


def _print_words(query) -> None:
    """Run a word-vector query and print its (word, score) pairs, or a clean error."""
    try:
        found = query()
    except (ValueError, FileNotFoundError) as err:
        raise fail(err) from None
    for other, score in found:
        typer.echo(f"{other:<20} {score:.3f}")


def neighbors(word: str = typer.Argument(..., help="The word to look up."),
              topn: int = typer.Option(10, min=1, help="How many neighbours."),
              vectors: str = typer.Option("glove-6b-50d", help=_VECTORS_HELP)):
    """Nearest words by cosine similarity."""
    _print_words(lambda: _word_vectors(vectors).most_similar(word, topn=topn))


def analogy(a: str = typer.Argument(..., help="a, as in a : b :: c : ?"),
            b: str = typer.Argument(...), c: str = typer.Argument(...),
            topn: int = typer.Option(5, min=1, help="How many answers."),
            vectors: str = typer.Option("glove-6b-50d", help=_VECTORS_HELP)):
    """Solve a : b :: c : ? by b - a + c (e.g. `embedkit analogy man king woman`)."""
    _print_words(lambda: _word_vectors(vectors).analogy(a, b, c, topn=topn))
