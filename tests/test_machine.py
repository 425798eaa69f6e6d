"""The thread policy (embedkit.machine): the plan's arithmetic, the block's restore, the worker
start inside a real loky worker, and the process measurements."""

from __future__ import annotations

import os
import re

import pytest

from embedkit.machine import (
    POOL_VARIABLES,
    RAYON_SIZED_IN,
    PeakRSS,
    ShortOfMemory,
    ThreadPlan,
    Threads,
    available_cores,
    collecting_new_objects,
    plan_threads,
    process_threads,
    resident,
    size_tokenizer_pool,
    start_worker,
)
from embedkit.machine.memory import free_memory


def _blas_threads() -> dict:
    from threadpoolctl import threadpool_info

    return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
            if lib["user_api"] == "blas"}


@pytest.mark.parametrize("cores", [1, 2, 16])
def test_the_plan_never_puts_more_threads_than_cores_to_work(cores):
    for workers in range(1, cores + 1):
        plan = plan_threads(workers=workers, cores=cores)
        assert plan.workers * plan.threads <= cores, plan
        assert plan.threads == cores // workers and 1 <= plan.blas <= plan.threads
        # no core idles that a worker could have: one more thread each would exceed the cores
        assert plan.workers * (plan.threads + 1) > cores
    crowded = plan_threads(workers=cores + 3, cores=cores)
    assert crowded.threads == 1 and crowded.blas == 1
    assert plan_threads(workers=1, cores=cores, blas=None).blas == cores
    assert plan_threads(workers=2, cores=16, blas=4) == ThreadPlan(2, 8, 16, 4)
    # a core kept for a thread that feeds the accelerator is out of the plan, never all of them
    assert plan_threads(workers=3, cores=16, reserve=1) == ThreadPlan(3, 5, 15, 1)
    assert plan_threads(cores=1, reserve=1).threads == 1


def test_cores_follow_the_quota_and_a_parent_given_share(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert process_threads() == available_cores() >= 1
    monkeypatch.setenv("LOKY_MAX_CPU_COUNT", "1")  # joblib's count: affinity, cgroup quota, this
    assert available_cores() == 1 and plan_threads(workers=1).threads == 1
    monkeypatch.delenv("LOKY_MAX_CPU_COUNT")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # what joblib gives a worker, or a user's choice
    assert process_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", str(10 * available_cores()))  # never above the cores
    assert process_threads() == available_cores()
    monkeypatch.setenv("OMP_NUM_THREADS", "many")
    assert process_threads() == available_cores()


def test_the_tokenizer_pool_keeps_a_users_setting_but_sizes_again_what_a_parent_process_sized(monkeypatch):
    """A parent that sized its tokenizer pool (its share: every core) passes the variable to the
    joblib workers it starts later; a worker sizes its own share rather than taking the parent's
    for a user's setting (found as a worker's Rayon pool at 2 threads on a 1-thread share)."""
    monkeypatch.delenv("RAYON_NUM_THREADS", raising=False)
    monkeypatch.delenv(RAYON_SIZED_IN, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    size_tokenizer_pool()
    assert os.environ["RAYON_NUM_THREADS"] == "1" and os.environ[RAYON_SIZED_IN] == str(os.getpid())
    monkeypatch.setenv("RAYON_NUM_THREADS", "5")  # a later change in this process is its own say
    size_tokenizer_pool()
    assert os.environ["RAYON_NUM_THREADS"] == "5"
    monkeypatch.setenv(RAYON_SIZED_IN, str(os.getpid() + 1))  # as a child sees its parent's value
    size_tokenizer_pool()
    assert os.environ["RAYON_NUM_THREADS"] == "1" and os.environ[RAYON_SIZED_IN] == str(os.getpid())
    monkeypatch.delenv(RAYON_SIZED_IN)
    monkeypatch.setenv("RAYON_NUM_THREADS", "7")  # the user's own setting, in any process
    size_tokenizer_pool()
    assert os.environ["RAYON_NUM_THREADS"] == "7"


def test_the_block_sets_every_pool_and_restores_them_even_after_an_error(monkeypatch):
    import numpy  # noqa: F401 - its BLAS is one of the pools
    import scipy.linalg  # noqa: F401 - scipy's own BLAS, another
    import torch

    monkeypatch.setenv("RAYON_NUM_THREADS", "7")
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    torch.set_num_threads(2)
    blas_before = _blas_threads()
    env_before = {name: os.environ.get(name) for name in POOL_VARIABLES}
    assert len(blas_before) >= 1
    with pytest.raises(RuntimeError, match="inside"), Threads(3, blas=1):
        assert torch.get_num_threads() == 3
        assert set(_blas_threads().values()) == {1}
        assert os.environ["OMP_NUM_THREADS"] == "3" and os.environ["RAYON_NUM_THREADS"] == "3"
        assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
        assert "TOKENIZERS_PARALLELISM" not in os.environ  # three threads may tokenize
        raise RuntimeError("inside")
    assert torch.get_num_threads() == 2 and _blas_threads() == blas_before
    assert {name: os.environ.get(name) for name in POOL_VARIABLES} == env_before
    with Threads(1):
        assert torch.get_num_threads() == 1 and os.environ["TOKENIZERS_PARALLELISM"] == "false"
        assert set(_blas_threads().values()) == {1}  # blas None: the same as the threads
    assert "TOKENIZERS_PARALLELISM" not in os.environ and torch.get_num_threads() == 2
    with Threads(None):  # nothing changes
        assert torch.get_num_threads() == 2 and _blas_threads() == blas_before
    torch.set_num_threads(1)


def _probe(size_the_tokenizer: bool = False) -> dict:
    """What a worker's pools are, read in the worker; torch and scipy load here, after the
    worker started."""
    import scipy.linalg  # noqa: F401
    import torch

    if size_the_tokenizer:
        size_tokenizer_pool()
    return {"torch": torch.get_num_threads(), "blas": set(_blas_threads().values()),
            "rayon": os.environ.get("RAYON_NUM_THREADS"),
            "tokenizers": os.environ.get("TOKENIZERS_PARALLELISM"), "share": process_threads(),
            "pid": os.getpid()}


def test_loky_workers_start_under_the_plan_and_a_plain_workers_tokenizer_takes_its_share():
    from joblib import Parallel, cpu_count, delayed, parallel_config

    # two workers of two threads and one BLAS thread: joblib alone would give each worker
    # cores // 2 of every kind (torch never starts more threads than the machine has cores)
    threads = min(2, available_cores())
    plan = ThreadPlan(workers=2, threads=threads, cores=2 * threads, blas=1)
    with parallel_config(**plan.joblib_config()):
        seen = Parallel(n_jobs=2)(delayed(_probe)() for _ in range(4))
    assert all(s["pid"] != os.getpid() for s in seen)
    assert {s["torch"] for s in seen} == {threads} and all(s["blas"] == {1} for s in seen)
    assert {s["rayon"] for s in seen} == {str(threads)} and {s["share"] for s in seen} == {threads}
    # more than one thread leaves the tokenizer's switch as the parent had it (conftest: off)
    parent = os.environ.get("TOKENIZERS_PARALLELISM")
    assert {s["tokenizers"] for s in seen} == ({parent} if threads > 1 else {"false"})
    # joblib alone (a user's GridSearchCV(n_jobs=2)): the worker's share reaches the tokenizer
    share = max(1, cpu_count() // 2)
    plain = Parallel(n_jobs=2, backend="loky")(delayed(_probe)(True) for _ in range(2))
    assert {(s["share"], s["rayon"]) for s in plain} == {(share, str(share))}


def test_start_worker_sizes_pools_for_good(monkeypatch):
    import torch

    for name in (*POOL_VARIABLES, "TOKENIZERS_PARALLELISM"):
        monkeypatch.delenv(name, raising=False)
    before = torch.get_num_threads()
    try:
        start_worker(1)
        assert torch.get_num_threads() == 1 and set(_blas_threads().values()) == {1}
        assert os.environ["TOKENIZERS_PARALLELISM"] == "false"
        assert os.environ["RAYON_NUM_THREADS"] == "1" == os.environ["OPENBLAS_NUM_THREADS"]
    finally:
        torch.set_num_threads(before)
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=available_cores())


_KEPT = []  # a worker's "model cache": what a task loaded stays loaded


def _task(megabytes: int) -> int:
    """A fold's work in a worker: load a model of ``megabytes`` and keep it, as embedkit's
    representations keep theirs; past loky's leak check delay (1 s)."""
    import time

    import numpy as np

    if megabytes:
        _KEPT.append(np.ones(megabytes * 2**20 // 8))
    time.sleep(1.1)
    return os.getpid()


def _run_in_one_worker(initializer=None) -> tuple[set, list]:
    import warnings

    from joblib.externals.loky import get_reusable_executor

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        executor = get_reusable_executor(max_workers=1, reuse=False, initializer=initializer,
                                         initargs=(1,) if initializer else ())
        # a light first task, then a model a third of a GB: work is still pending when it ends
        pids = [f.result() for f in [executor.submit(_task, mb) for mb in (0, 350, 0)]]
        executor.shutdown(wait=True)
    return set(pids), [str(w.message) for w in caught if "worker stopped" in str(w.message)]


def test_a_worker_keeping_its_models_is_not_replaced_as_a_leak():
    # loky alone takes 350 MB kept past the first task for a leak: it replaces the worker and
    # warns "A worker stopped while some jobs were given to the executor" (compare did so)
    pids, warned = _run_in_one_worker()
    assert len(pids) == 2 and warned
    pids, warned = _run_in_one_worker(start_worker)
    assert len(pids) == 1 and not warned


def test_memory_measured_inside_a_run_collects_only_what_the_run_made():
    """A full collection scans every object of torch and transformers (a quarter second a fold,
    three times a fold in `compare`); inside `collecting_new_objects` the objects alive at its
    start are set aside, a cycle made inside is still freed by `PeakRSS`, and the collector is
    left as it was found, also after an error and when nested; without its first collection,
    the garbage from before waits for the first collection after the block."""
    import gc
    import weakref

    class Node:
        pass

    assert gc.get_freeze_count() == 0
    gc.disable()  # no automatic collection between the steps below
    try:
        _collect_inside_a_run(gc, weakref, Node)
    finally:
        gc.enable()
    assert gc.get_freeze_count() == 0


def _collect_inside_a_run(gc, weakref, Node) -> None:
    with pytest.raises(RuntimeError), collecting_new_objects():
        assert gc.get_freeze_count() > 0  # the heap alive at the start, set aside
        with collecting_new_objects():  # nested: the outer freeze stays as it is
            assert gc.get_freeze_count() > 0
        assert gc.get_freeze_count() > 0  # (a set-aside object freed since leaves the count)
        cycle = Node()
        cycle.me = cycle
        gone = weakref.ref(cycle)
        del cycle
        assert gone() is not None  # a cycle: reference counts alone do not free it
        with PeakRSS() as memory:
            assert gone() is None  # freed on entry, though the heap at the start was set aside
        assert memory.peak >= memory.start > 0
        raise RuntimeError("inside the block")
    old = Node()
    old.me = old
    before = weakref.ref(old)
    del old
    with collecting_new_objects(collect=False):  # a block that collects itself (a Trainer's end)
        gc.collect()
        assert before() is not None  # garbage from before the block: set aside, not scanned
    gc.collect()
    assert before() is None  # the first collection after the block frees it


def test_a_block_that_outgrows_its_memory_limit_is_stopped_there():
    """`stop_when` watching the resident memory stops a block that only grows (10 MB at a time,
    every page written) soon after it passes the limit, as the deadline stops one, with its own
    error; a block within its limit runs to its end. What `free_memory` says is never more than
    the machine has."""
    import time

    import numpy as np
    import psutil

    from embedkit._stopping import MemoryLimitReached, stop_when

    assert 0 < free_memory() <= psutil.virtual_memory().total
    limit, held = resident() + 200 * 2**20, []
    with pytest.raises(MemoryLimitReached, match="over its limit"), stop_when(
            lambda: resident() > limit, lambda: MemoryLimitReached("over its limit")):
        for _ in range(300):  # up to 3 GB
            held.append(np.ones(10 * 2**20 // 8))
            time.sleep(0.005)
    grown = sum(a.nbytes for a in held)
    held.clear()
    assert 150 * 2**20 < grown < 800 * 2**20, grown / 2**20
    with stop_when(lambda: resident() > limit + 2**30, lambda: MemoryLimitReached("never")):
        time.sleep(0.1)


def test_short_of_memory_says_which_limit_was_passed():
    held = resident()
    assert not ShortOfMemory(None, 0)() and not ShortOfMemory(held + 2**30, 0)()
    over = ShortOfMemory(held / 2, 0)
    assert over() and over.why().startswith("stopped at ") and "over the limit of" in over.why()
    floor = 2 * free_memory() + 2**30  # more than is free: short
    low = ShortOfMemory(None, floor)
    assert low() and low.why() == (f"stopped where the machine had less than "
                                   f"{floor / 2**30:.1f} GB of memory free")


def test_short_of_memory_says_the_limit_passed_after_the_stopped_work_let_go_of_its_memory():
    """The reason is the one that held when it fired: a fit stopped over the limit frees its
    memory before the search words why (a TF-IDF baseline over a 4 GB limit was said to have
    stopped where "the machine had less than 256 MB of memory free", with 18 GB free)."""
    import numpy as np

    from embedkit._budget import format_bytes

    held = resident()
    short = ShortOfMemory(held + 150 * 2**20, 0)
    block = np.ones(300 * 2**20 // 8)  # 300 MB, touched
    assert short()
    del block
    assert resident() < held + 150 * 2**20  # let go of
    said = re.fullmatch(r"stopped at ([\d.]+ [MG]B) of memory, over the limit of ([\d.]+ [MG]B)",
                        short.why())
    # what it was when it fired, not what it is now: 300 MB more than before, not 150 fewer
    assert said and said[2] == format_bytes(held + 150 * 2**20), short.why()
    assert said[1] in {format_bytes(held + 300 * 2**20 + d * 2**20) for d in range(-10, 60)}, said[1]
