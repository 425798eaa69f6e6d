"""This process and its machine: the cores it may use, its peak memory, the thread policy, and
the devices models run on.

Threads are set once, by policy: `plan_threads` shares the cores between the fits that run at
once (``cores // workers`` threads each), `Threads` applies a share to every pool of this
process for a block (torch's intra-op threads, BLAS and OpenMP through threadpoolctl, the
tokenizer's Rayon pool) and restores it after, and `start_worker` applies it for good in a
worker process. `embedkit compare` runs its folds under a plan, the encode loop's
``num_threads`` is a `Threads` block, and the comparison runner measures each fold with
`PeakRSS` inside `collecting_new_objects` (so its garbage collections scan only what the fold
made). The memory this process holds (`resident`) and `ShortOfMemory`, what a search's memory
limit watches (what is free, under a container's limit too: `embedkit.machine.memory.free_memory`).
Devices are resolved here too (`resolve_device`: ``"auto"`` is a CUDA GPU, then MPS, then
the CPU), with the precision (`resolve_precision`) and batch sizes (`batch_settings`) each one
takes.
"""

from __future__ import annotations

import math
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .memory import free_memory

__all__ = ["BF16_MIN_STEP_FLOPS", "DEVICES", "POOL_VARIABLES", "RAYON_SIZED_IN", "WORKER_MEMORY_GROWTH",
           "PeakRSS", "ShortOfMemory", "ThreadPlan", "Threads", "available_cores", "batch_settings",
           "collecting_new_objects", "largest_process_mb", "on_accelerator",
           "plan_threads", "process_threads", "release_memory", "resident", "resolve_device",
           "resolve_precision",
           "size_tokenizer_pool", "start_worker"]


@contextmanager
def collecting_new_objects(collect: bool = True):
    """For a block that collects garbage again and again (each `PeakRSS` does; so does the end of
    a transformers ``Trainer``): the objects alive at its start are set aside from the collector
    until the block ends (`gc.freeze`), so each collection inside scans only the objects the
    block made rather than the whole heap of torch and transformers. With ``collect`` their
    garbage is collected once first (what measures memory needs); without it, that garbage
    waits for the first collection after the block. Inside another such block (or any other
    freeze), it leaves the freeze as it is."""
    import gc

    if gc.get_freeze_count():
        yield
        return
    if collect:
        gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def available_cores() -> int:
    """CPU cores this process may use: the machine's, its CPU affinity, a container's CPU quota
    (cgroup) and ``LOKY_MAX_CPU_COUNT``, whichever is least (joblib's count, by which it sizes
    its workers)."""
    from joblib import cpu_count

    return cpu_count(only_physical_cores=False)


def release_memory(collect: bool = True) -> None:
    """Garbage collected (unless ``collect`` is False: each collection scans the whole heap of
    torch) and, on glibc, freed heap handed back to the system (``malloc_trim``, about free):
    memory a block freed below a live object otherwise stays resident, and a reading of
    `resident` would count it as held."""
    import ctypes
    import gc

    if collect:
        gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: freed memory may be counted as held
        pass


class PeakRSS:
    """Peak resident memory of this process while the block runs (sampled every 10 ms).

    On entry, garbage is collected (unless ``collect`` is False: a block whose callers measure
    many, each collection scanning the whole heap of torch) and (glibc) freed heap handed back
    to the system, so the start reflects live memory rather than what earlier pipelines freed.
    Inside `collecting_new_objects` that collection scans only what the block made.
    """

    def __init__(self, collect: bool = True):
        self.collect = collect

    def __enter__(self):
        import threading

        import psutil

        release_memory(self.collect)
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


#: the environment variables thread pools read once, when they start, by what they size: torch's
#: intra-op pool (OpenMP, and MKL inside torch) and the Rayon pool of Hugging Face's tokenizers
#: get ``threads``; the BLAS libraries of numpy and scipy (OpenBLAS, BLIS, Accelerate) and
#: numexpr get ``blas``
POOL_VARIABLES = {"OMP_NUM_THREADS": "threads", "MKL_NUM_THREADS": "threads",
                  "RAYON_NUM_THREADS": "threads", "OPENBLAS_NUM_THREADS": "blas",
                  "BLIS_NUM_THREADS": "blas", "VECLIB_MAXIMUM_THREADS": "blas",
                  "NUMEXPR_NUM_THREADS": "blas"}


def process_threads() -> int:
    """Threads this process's work may use: `available_cores`, or the share its parent gave it.

    A joblib worker is started with ``OMP_NUM_THREADS`` set to its share of the cores (a Dask
    worker with 1, a user's shell with their choice); that share is respected.
    """
    cores = available_cores()
    try:
        given = int(os.environ.get("OMP_NUM_THREADS", ""))
    except ValueError:
        return cores
    return max(1, min(cores, given))


@dataclass(frozen=True)
class ThreadPlan:
    """``workers`` fits at once on ``cores`` cores: ``threads`` each for torch and the tokenizer,
    ``blas`` each for BLAS and the other OpenMP runtimes.

    Built by `plan_threads`. ``workers * threads`` never exceeds ``cores`` unless more workers
    than cores were asked for (each then has one thread, the least there is). Within one fit the
    pools run one after another, never at once, so each may have the worker's share.
    """

    workers: int
    threads: int
    cores: int
    blas: int = 1

    def block(self) -> Threads:
        """The block for one worker's work in this process (`Threads`)."""
        return Threads(self.threads, blas=self.blas)

    def joblib_config(self) -> dict:
        """Keyword arguments of ``joblib.parallel_config`` that start loky workers under this
        plan: joblib's own thread variables (``inner_max_num_threads``) and `start_worker`, which
        each worker runs before its first task."""
        return {"backend": "loky", "inner_max_num_threads": self.threads,
                "initializer": start_worker, "initargs": (self.threads, self.blas)}


def plan_threads(workers: int = 1, cores: int | None = None, blas: int | None = 1,
                 reserve: int = 0) -> ThreadPlan:
    """How ``workers`` fits running at once share the cores: ``cores // workers`` threads each.

    Parameters
    ----------
    workers : int, default=1
        Fits that run at the same time (processes, or one thread each).
    cores : int or None, default=None
        Cores to share; None: `process_threads` (affinity, container quota, a parent's share).
    blas : int or None, default=1
        Threads of BLAS (numpy's and scipy's OpenBLAS) and of OpenMP runtimes other than torch's
        (scikit-learn's), at most the share; None: the share. One by default: the scikit-learn
        heads' BLAS calls (L-BFGS steps, products with a few columns) are too small to gain
        from threads, and a pool that waits for all its threads at every call slows a fit by
        an order of magnitude as soon as another thread wants the same cores.
    reserve : int, default=0
        Cores kept out of the plan for other work of this process (a thread that feeds an
        accelerator); at least one core is always planned.

    Examples
    --------
    >>> plan_threads(workers=3, cores=16)
    ThreadPlan(workers=3, threads=5, cores=16, blas=1)
    >>> plan_threads(workers=4, cores=2, blas=None).threads
    1
    >>> plan_threads(cores=16, reserve=1).threads
    15
    """
    cores = process_threads() if cores is None else max(1, int(cores))
    cores = max(1, cores - max(0, int(reserve)))
    workers = max(1, int(workers))
    threads = max(1, cores // workers)
    return ThreadPlan(workers, threads, cores, threads if blas is None else min(threads, blas))


def _sizes(threads: int, blas: int | None) -> tuple[int, int]:
    threads = max(1, int(threads))
    return threads, threads if blas is None else max(1, int(blas))


def _set_pools(threads: int, blas: int):
    """Every BLAS / OpenMP library loaded in this process to ``blas`` threads (threadpoolctl),
    then torch's pool, if torch is imported, to ``threads``; the environment likewise for pools
    that start later. Returns what to restore: the environment, the threadpoolctl limits and
    torch's thread count before."""
    from threadpoolctl import threadpool_limits

    names = (*POOL_VARIABLES, "TOKENIZERS_PARALLELISM")
    environ = {name: os.environ.get(name) for name in names}
    for name, pool in POOL_VARIABLES.items():
        os.environ[name] = str(threads if pool == "threads" else blas)
    if threads == 1:
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
    torch = sys.modules.get("torch")
    before = (torch, torch.get_num_threads()) if torch is not None else None
    limits = threadpool_limits(limits=blas)  # torch's OpenMP runtime too: torch sets its own next
    if torch is not None:
        torch.set_num_threads(threads)
    return environ, limits, before


#: how far a worker's memory may grow past what it held after its first task before loky takes
#: the growth for a leak and replaces the worker (loky's own allowance is 300 MB): a worker keeps
#: every model its tasks loaded (fastText, GloVe's table, MiniLM: some hundreds of MB together)
WORKER_MEMORY_GROWTH = 2**30


def start_worker(threads: int, blas: int | None = 1) -> None:
    """Set up this (worker) process for the rest of its life: what a worker runs before its
    first task (`ThreadPlan.joblib_config` passes it to loky).

    Sizes the thread pools: those that have started now, those that start later (torch, scipy's
    BLAS, the tokenizer's Rayon pool) through the environment they read; one thread also turns
    the tokenizer's parallelism off. And lets the worker's memory grow by
    `WORKER_MEMORY_GROWTH` before loky's leak check replaces it: the models a worker keeps
    loaded are not a leak, and each replacement reloaded them and printed "A worker stopped
    while some jobs were given to the executor".
    """
    _set_pools(*_sizes(threads, blas))
    try:
        from joblib.externals.loky import process_executor
    except ImportError:  # pragma: no cover - joblib without loky
        return
    if hasattr(process_executor, "_MAX_MEMORY_LEAK_SIZE"):  # read by the worker after each task
        process_executor._MAX_MEMORY_LEAK_SIZE = max(process_executor._MAX_MEMORY_LEAK_SIZE,
                                                     WORKER_MEMORY_GROWTH)


#: the process whose share `size_tokenizer_pool` wrote into ``RAYON_NUM_THREADS``: a child started
#: after (a joblib worker) inherits the value, which is its parent's share, not a user's say
RAYON_SIZED_IN = "EMBEDKIT_RAYON_SIZED_IN"


def size_tokenizer_pool() -> None:
    """Let Hugging Face's tokenizers start their Rayon pool at this process's share
    (`process_threads`) rather than at every core of the machine, unless ``RAYON_NUM_THREADS``
    already says (the user's setting, or a worker's plan, `start_worker`); a value it wrote in a
    parent process is sized again here. Called before a fast tokenizer is loaded; the pool starts
    at its first batch.
    """
    sized_in = os.environ.get(RAYON_SIZED_IN)
    if "RAYON_NUM_THREADS" not in os.environ or sized_in not in (None, str(os.getpid())):
        os.environ["RAYON_NUM_THREADS"] = str(process_threads())
        os.environ[RAYON_SIZED_IN] = str(os.getpid())


class Threads:
    """This process's CPU thread pools at a given size inside the block, restored after.

    Sets torch's intra-op threads to ``n`` (when torch is imported), every loaded BLAS and other
    OpenMP library to ``blas`` (threadpoolctl) and, for pools that start inside the block, the
    environment they read (`POOL_VARIABLES`); one thread (``n`` 1) also turns the tokenizer's
    parallelism off. A pool first started inside the block keeps its size. ``n`` None leaves
    everything as it is.

    The settings are the process's (torch's count too, whichever thread sets it): threads of one
    process share one plan, set once around all of their work; concurrent CPU work that needs a
    plan of its own runs in its own process (`ThreadPlan.joblib_config`).

    Parameters
    ----------
    n : int or None
        torch's intra-op threads, and the tokenizer's pool.
    blas : int or None, default=None
        BLAS and other OpenMP threads; None: ``n``.

    Examples
    --------
    >>> with Threads(1):
    ...     pass  # one thread in every pool here
    """

    def __init__(self, n: int | None, blas: int | None = None):
        self.n = n
        self.blas = blas

    def __enter__(self):
        if self.n is not None:
            self._saved = _set_pools(*_sizes(self.n, self.blas))
        return self

    def __exit__(self, *exc):
        if self.n is None:
            return
        environ, limits, torch_before = self._saved
        limits.restore_original_limits()
        if torch_before is not None:
            torch, before = torch_before
            torch.set_num_threads(before)
        for name, value in environ.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class ShortOfMemory:
    """Whether this process is short of memory: resident over ``limit`` bytes (None: no limit),
    or the machine (or its container) with less than ``floor`` bytes free. Cheap enough to ask
    every few milliseconds: the resident memory is read each time, the free memory (which
    parses /proc/meminfo) at most every ``every`` seconds. ``why()`` says which, as a reason a
    fit was stopped."""

    def __init__(self, limit: float | None, floor: float, every: float = 0.25):
        import psutil

        self.limit, self.floor, self.every = limit, floor, every
        self._process, self._free, self._read = psutil.Process(), math.inf, -math.inf
        self._seen: float | None = None  # the resident bytes over the limit, when they were

    def __call__(self) -> bool:
        return self._over() or self._low()

    def _over(self) -> bool:
        if self.limit is None:
            return False
        rss = self._process.memory_info().rss
        if rss > self.limit:
            self._seen = float(rss)
        return rss > self.limit

    def _low(self) -> bool:
        import time

        if time.monotonic() - self._read >= self.every:
            self._free, self._read = free_memory(), time.monotonic()
        return self._free < self.floor

    def why(self) -> str:
        """Why it said so, as it was when it did: the fit it stopped has let go of its memory
        since."""
        from .._budget import format_bytes

        if self._seen is not None or self._over():
            return (f"stopped at {format_bytes(self._seen)} of memory, over the limit of "
                    f"{format_bytes(self.limit)}")
        return f"stopped where the machine had less than {format_bytes(self.floor)} of memory free"


def resident() -> float:
    """Bytes of this process's resident memory now."""
    import psutil

    return float(psutil.Process().memory_info().rss)


def largest_process_mb() -> float | None:
    """Peak resident memory of this process or of its largest finished worker, in MB."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    scale = 1 if os.uname().sysname == "Darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    peaks = [resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return max(peaks) * scale / 2**20


# -- devices: which one a model runs on, in what precision, in what batches -----------------------
#: device names accepted wherever a ``device`` parameter exists ("cuda:N" too)
DEVICES = ("auto", "cpu", "cuda", "mps")


def resolve_device(device: str) -> str:
    """``"auto"`` -> ``"cuda"``, then ``"mps"``, then ``"cpu"``; an explicit device is checked.

    Raises a ValueError naming the fix when the device does not exist here (e.g. ``"cuda"`` on a
    machine without a CUDA build of torch), instead of torch's assertion deep in a forward pass.

    Examples
    --------
    >>> resolve_device("cpu")
    'cpu'
    """
    import torch

    device = str(device)
    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return "mps"
        return "cpu"
    kind = device.split(":")[0]
    if kind not in DEVICES[1:] or (kind != "cuda" and ":" in device):
        raise ValueError(f"device={device!r}; use 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'.")
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but torch sees no CUDA GPU here; use device='auto' "
                         "(it falls back to the CPU) or device='cpu'.")
    if kind == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(f"device={device!r} but torch has no MPS backend here; use "
                             "device='auto' or device='cpu'.")
    return device


#: a training step (forward and backward) of at least this many floating-point operations runs
#: in bf16 under ``precision="auto"`` on a CUDA GPU: below it the step is bound by kernel
#: launches, where autocast's extra casts cost more than bf16's faster matrix products save
#: (``pipelines/benchmarks/results/bench_gpu.md``: MiniLM at batch 32 x 64 tokens, ~3e11 per step)
BF16_MIN_STEP_FLOPS = 1e12


def resolve_precision(precision: str, device: str, step_flops: float | None = None) -> str:
    """A training ``precision`` for a resolved ``device``: ``"fp32"`` / ``"bf16"`` stay (bf16
    autocast runs on a CPU too, slowly where it has no bf16 units); ``"auto"`` is ``"bf16"`` on a
    CUDA GPU with bf16 units (Ampere and later) when a training step is large enough,
    ``step_flops`` (about 6 x parameters x tokens per batch; None: large) at least
    `BF16_MIN_STEP_FLOPS`, and ``"fp32"`` otherwise (CPU, MPS, small steps).

    Examples
    --------
    >>> resolve_precision("auto", "cpu"), resolve_precision("bf16", "cpu")
    ('fp32', 'bf16')
    """
    if precision != "auto":
        return precision
    if str(device).split(":")[0] != "cuda":
        return "fp32"
    if step_flops is not None and step_flops < BF16_MIN_STEP_FLOPS:
        return "fp32"
    import torch

    try:
        native = torch.cuda.is_bf16_supported(including_emulation=False)
    except TypeError:  # pragma: no cover - torch < 2.3
        native = torch.cuda.is_bf16_supported()
    return "bf16" if native else "fp32"


def on_accelerator(device: str) -> bool:
    """Whether ``device`` (a resolved torch device) is not the CPU: the encode loop then
    overlaps preparing batches with the device's work (`run_batches`, `chunk_bounds`)."""
    return str(device).split(":")[0] != "cpu"


def batch_settings(device: str) -> tuple[int, int]:
    """``(rows, padded tokens)`` per batch that ``"auto"`` batch settings resolve to on ``device``.

    CPU: 32 rows and 2,048 padded tokens (larger batches only add padding there;
    ``pipelines/benchmarks/results/defaults.md``). CUDA: 512 rows and 2,048 tokens per GiB of
    the card's memory, rounded down to a power of two between 16,384 and 131,072 (a large batch
    keeps the card busy between launches; ``pipelines/benchmarks/bench_gpu.py`` measures it).
    MPS: 256 rows and 16,384 tokens.

    Examples
    --------
    >>> batch_settings("cpu")
    (32, 2048)
    """
    kind = str(device).split(":")[0]
    if kind == "cuda":
        import torch

        gib = torch.cuda.get_device_properties(torch.device(device)).total_memory / 2**30
        tokens = 2048 * 2 ** int(np.floor(np.log2(max(gib, 1.0))))
        return 512, int(min(max(tokens, 16384), 131072))
    if kind == "mps":
        return 256, 16384
    return 32, 2048
