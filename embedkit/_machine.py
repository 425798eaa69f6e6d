"""This process and its machine: the cores it may use, its peak memory, and its thread limits.

The comparison runner measures each fold with `PeakRSS` and bounds BLAS/OpenMP/torch threads
with `Threads`; the tuning search and the benchmarks read `available_cores`.
"""

from __future__ import annotations

import os

__all__ = ["PeakRSS", "Threads", "available_cores", "largest_process_mb"]


def available_cores() -> int:
    """CPU cores this process may run on (its affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


class PeakRSS:
    """Peak resident memory of this process while the block runs (sampled every 10 ms).

    On entry, garbage is collected and (glibc) freed heap handed back to the system, so the
    start reflects live memory rather than what earlier pipelines freed.
    """

    def __enter__(self):
        import ctypes
        import gc
        import threading

        import psutil

        gc.collect()
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # not glibc: the start may include freed memory
            pass

        self._proc = psutil.Process()
        self.start = self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self._proc.memory_info().rss)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)


class Threads:
    """Limit BLAS/OpenMP (threadpoolctl) and torch intra-op threads to ``n`` inside the block."""

    def __init__(self, n: int | None):
        self.n = n

    def __enter__(self):
        if self.n is None:
            return self
        import importlib.util

        from threadpoolctl import threadpool_limits

        self._limits = threadpool_limits(limits=self.n)
        self._torch = None
        if importlib.util.find_spec("torch") is not None:
            import torch

            self._torch = torch.get_num_threads()
            torch.set_num_threads(self.n)
        return self

    def __exit__(self, *exc):
        if self.n is None:
            return
        if self._torch is not None:
            import torch

            torch.set_num_threads(self._torch)
        self._limits.restore_original_limits()


def largest_process_mb() -> float | None:
    """Peak resident memory of this process or of its largest finished worker, in MB."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    scale = 1 if os.uname().sysname == "Darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    peaks = [resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return max(peaks) * scale / 2**20
