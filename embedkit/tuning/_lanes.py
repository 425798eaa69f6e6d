"""Where a budgeted search's candidates run: its lanes (`embedkit.tuning._engine`).

* `Inline`: the cores of this process, one candidate at a time, run at once in the caller's
  thread (so Ctrl-C lands inside the fit);
* `Device`: a thread that trains one model on the accelerator while the cores fit others;
  stopped by raising ``KeyboardInterrupt`` in it (Ctrl-C only reaches the main thread);
* `Cluster`: the workers of a Dask cluster (``distributed.Client``), as many candidates at once
  as they have threads; the training data is sent to them once. The frozen encoder's pass is
  spread over them too (`Cluster.encode`).

Every lane's ``submit`` returns a future (``done()``, ``result()``, ``exception()``); `first_done`
waits for any of them, whatever lane it came from.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["Cluster", "Device", "Inline", "accelerated", "failed", "first_done"]


def failed(err: BaseException) -> Future:
    """A future that ended with ``err``."""
    future = Future()
    future.set_exception(err)
    return future


class Inline:
    """This process's cores: one candidate at a time, run by `submit` itself."""

    slots, blocking = 1, True

    def submit(self, fn, *args) -> Future:
        try:
            result = fn(*args)
        except Exception as err:  # a candidate that breaks leaves the others running
            return failed(err)
        future = Future()
        future.set_result(result)
        return future

    def stop(self) -> None:
        pass


class Device:
    """One thread training on the accelerator beside the cores."""

    slots, blocking = 1, False

    def __init__(self):
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="embedkit-device")

    def submit(self, fn, *args) -> Future:
        return self._pool.submit(fn, *args)

    def stop(self) -> None:
        """Stop what the thread runs (a ``KeyboardInterrupt`` at its next Python instruction)."""
        import ctypes

        for thread in list(getattr(self._pool, "_threads", ())):
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                                       ctypes.py_object(KeyboardInterrupt))
        self._pool.shutdown(wait=False, cancel_futures=True)


class Cluster:
    """A Dask cluster's workers, one candidate per worker thread."""

    blocking = False

    def __init__(self, client, data: tuple):
        self.client = client
        self.slots = max(sum(client.nthreads().values()), 1)
        self.data = client.scatter(list(data), broadcast=True, hash=False)  # sent once
        self._placed = []  # (future, worker) of what this lane runs

    def submit(self, fn, *args) -> Future:
        """Run ``fn(*args)`` on the worker with the most of its threads free of this search's
        candidates. Dask's scheduler alone may queue two candidates on one worker while another
        idles; another worker takes it if that one leaves the cluster."""
        self._placed = [(f, w) for f, w in self._placed if not f.done()]
        threads = self.client.nthreads()
        busy = {w: 0 for w in threads}
        for _, w in self._placed:
            busy[w] = busy.get(w, 0) + 1
        worker = min(threads, key=lambda w: (busy[w] / max(threads[w], 1), w), default=None)
        future = self.client.submit(_on_worker, fn, *args, *self.data, pure=False,
                                    workers=None if worker is None else [worker],
                                    allow_other_workers=True)
        self._placed.append((future, worker))
        return future

    def encode(self, encoder, docs):
        """``encoder.transform(docs)`` spread over the workers, four tasks a worker thread, in
        the documents' order. The fitted encoder is sent once without its cache, as
        `embedkit.distributed.extract_features` sends it (each worker loads the weights by
        name)."""
        import copy

        import numpy as np

        from ..distributed import ship

        model = copy.copy(encoder)
        model.cache = None
        handle = ship(model, self.client)
        chunk = max(32, -(-len(docs) // (4 * self.slots)))
        futures = [self.client.submit(_transform, handle, docs[i:i + chunk], pure=False)
                   for i in range(0, len(docs), chunk)]
        return np.concatenate(self.client.gather(futures))

    def stop(self) -> None:
        pass


def _transform(model, docs):
    return model.transform(docs)


def _on_worker(fn, *args):
    """``fn(*args)`` on a Dask worker, with the worker's address."""
    from distributed import get_worker

    return fn(*args), get_worker().address


def first_done(futures, poll: float = 0.05, timeout: float | None = None) -> None:
    """Wait until one of ``futures`` (of any lane) is done, or ``timeout`` seconds."""
    until = None if timeout is None else time.monotonic() + timeout
    while futures and not any(f.done() for f in futures):
        if until is not None and time.monotonic() > until:
            return
        time.sleep(poll)


def accelerated() -> bool:
    """Whether this machine has an accelerator torch can train on (the search's device lane)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return False
    from ..machine import resolve_device

    return resolve_device("auto") != "cpu"
