"""Stopping when asked, everywhere: a skorch fit that Ctrl-C stops (`fit_or_stop`, every
head's training loop, fine-tuning included), SIGTERM taken as Ctrl-C (`sigterm_stops`, the
``embedkit`` commands), and a block stopped as Ctrl-C would stop it, at a deadline (`deadline`)
or once a watched condition turns true (`stop_when`: a memory limit), each with its own error.
A leaf: it imports nothing of the package."""

from __future__ import annotations

import contextlib
import signal
import threading
import time

__all__ = ["DeadlineReached", "MemoryLimitReached", "OutOfTime", "deadline", "fit_or_stop",
           "interrupts_held", "sigterm_stops", "stop_when"]


@contextlib.contextmanager
def sigterm_stops():
    """SIGTERM (a scheduler's polite kill) stops the block as Ctrl-C does: a ``KeyboardInterrupt``
    in the main thread, so a search finishes with its best model so far and nothing is left
    half-written. The previous handler is restored after; in another thread, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def interrupts_held():
    """A Ctrl-C (SIGINT) or SIGTERM that comes inside the block is delivered again when it ends,
    to the handler that was in place (a ``KeyboardInterrupt`` in the ``embedkit`` commands): for
    a step that must not stop half-way (swapping a result in, then recording that it was). A
    second one stops the block at once. In another thread, or for a signal that is ignored (a
    background job's SIGINT), nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = []

    def hold(signum, frame):
        if held:
            raise KeyboardInterrupt
        held.append(signum)

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    previous = {sig: handler for sig, handler in previous.items() if handler is not signal.SIG_IGN}
    for sig in previous:
        signal.signal(sig, hold)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        if held:
            signal.raise_signal(held[0])


class OutOfTime(KeyboardInterrupt):
    """Raised inside a skorch training by a head's own time limit: skorch ends the training as
    it does for early stopping, and `fit_or_stop` returns the head as trained so far (unlike a
    Ctrl-C, which reaches the caller)."""


class DeadlineReached(Exception):
    """The block ran past its `deadline` and was stopped there."""


class MemoryLimitReached(Exception):
    """The block's process grew past its memory limit (`stop_when`) and was stopped there."""


@contextlib.contextmanager
def deadline(seconds: float):
    """Stop the block once it has run ``seconds`` (at least a tenth of a second): a timer
    interrupts the main thread as Ctrl-C would, and the block ends with `DeadlineReached`
    instead of a ``KeyboardInterrupt`` (a Ctrl-C of the user's during the block stays one). Work
    in one long call of compiled code stops when that call returns. In another thread, or for
    an infinite ``seconds``, nothing changes."""
    if seconds == float("inf"):
        yield
        return

    def start(fire):
        timer = threading.Timer(max(seconds, 0.1), fire)
        timer.daemon = True
        timer.start()
        return timer.cancel

    with _interrupting(start, lambda: DeadlineReached(f"stopped after {seconds:.0f} s, at its deadline")):
        yield


@contextlib.contextmanager
def stop_when(check, error, every: float = 0.02):
    """Stop the block as `deadline` does, with ``error()`` raised, once ``check()`` (polled every
    ``every`` seconds in a thread: it must be cheap) is true: a memory limit's watch. In another
    thread, nothing changes."""
    def start(fire):
        done, lock = threading.Event(), threading.Lock()

        def watch():
            while not done.wait(every):
                if check():
                    with lock:  # never once the block has ended: the interrupt would land after it
                        if not done.is_set():
                            fire()
                    return

        def cancel():
            with lock:
                done.set()

        threading.Thread(target=watch, daemon=True).start()
        return cancel

    with _interrupting(start, error):
        yield


@contextlib.contextmanager
def _interrupting(start, error):
    """The block, which ``start(fire)`` may stop by calling ``fire()`` from another thread (it
    returns what cancels it): the main thread is interrupted as Ctrl-C would, and the block ends
    with ``error()`` instead of a ``KeyboardInterrupt``; any other SIGINT goes where it went
    before. Nested blocks each stop with their own error."""
    import _thread

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired = threading.Event()
    previous = signal.getsignal(signal.SIGINT)

    def on_interrupt(signum, frame):
        # this block's interrupt stops it; any other SIGINT goes where it went before (a
        # process started in the background ignores SIGINT, and Python then ignores
        # `interrupt_main` too: the block would never be stopped without this handler)
        if fired.is_set():
            raise KeyboardInterrupt
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            raise KeyboardInterrupt

    def fire():
        fired.set()
        _thread.interrupt_main()

    signal.signal(signal.SIGINT, on_interrupt)
    cancel = start(fire)
    try:
        yield
    except KeyboardInterrupt:
        if fired.is_set():
            raise error() from None
        raise
    finally:
        cancel()
        try:
            if fired.is_set():  # it fired as the block ended: the interrupt may be on its way
                time.sleep(0.05)
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


def fit_or_stop(net, X, y=None) -> None:
    """``net.fit(X, y)``, except that a Ctrl-C (``KeyboardInterrupt``) reaches the caller.

    skorch's ``partial_fit`` catches ``KeyboardInterrupt`` and returns as if training had ended
    (its ``EarlyStopping`` stops training by raising one), so a search that fits the head would
    score the cut-short model as complete and go on. An interrupt that is neither early stopping
    nor the head's own time limit (`OutOfTime`) is noted as it leaves ``fit_loop`` (skorch still
    runs its ``on_train_end`` callbacks: the best weights restored, the progress bar closed) and
    raised again once skorch returns.
    """
    stopped, loop = [], net.fit_loop

    def fit_loop(*args, **kwargs):
        try:
            return loop(*args, **kwargs)
        except KeyboardInterrupt as err:
            if not (isinstance(err, OutOfTime) or _stopped_early(err)):
                stopped.append(True)
            raise

    net.fit_loop = fit_loop  # on this net, for this fit only
    try:
        net.fit(X, y)
    finally:
        del net.fit_loop
    if stopped:
        raise KeyboardInterrupt


def _stopped_early(err: KeyboardInterrupt) -> bool:
    """Whether ``err`` is skorch's ``EarlyStopping`` ending the training: raised by its
    ``on_epoch_end`` once its score missed ``patience`` epochs in a row, not by a signal."""
    frame = err.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    if frame is None or frame.tb_frame.f_code.co_name != "on_epoch_end":
        return False
    callback = frame.tb_frame.f_locals.get("self")
    return getattr(callback, "misses_", None) == getattr(callback, "patience", object())

