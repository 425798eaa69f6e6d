"""A skorch fit that a Ctrl-C stops: `fit_or_stop`, used by every head's training loop
(`embedkit.heads._base.NeuralHead.fit`, fine-tuning included)."""

from __future__ import annotations

__all__ = ["fit_or_stop"]


def fit_or_stop(net, X, y=None) -> None:
    """``net.fit(X, y)``, except that a Ctrl-C (``KeyboardInterrupt``) reaches the caller.

    skorch's ``partial_fit`` catches ``KeyboardInterrupt`` and returns as if training had ended,
    so a search that fits the head would score the cut-short model as complete and go on. The
    interrupt is noted as it leaves ``fit_loop`` (skorch still runs its ``on_train_end``
    callbacks, e.g. closing the progress bar) and raised again once skorch returns.
    """
    stopped, loop = [], net.fit_loop

    def fit_loop(*args, **kwargs):
        try:
            return loop(*args, **kwargs)
        except KeyboardInterrupt:
            stopped.append(True)
            raise

    net.fit_loop = fit_loop  # on this net, for this fit only
    try:
        net.fit(X, y)
    finally:
        del net.fit_loop
    if stopped:
        raise KeyboardInterrupt
