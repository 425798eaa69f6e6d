"""The memory this process may still take: the machine's, and what the memory cgroups it lives
in (a container's, a batch job's, a scope's) leave it (`free_memory`); `embedkit.machine`
measures what it holds."""

from __future__ import annotations

from pathlib import Path

__all__ = ["free_memory"]


def free_memory(root: str = "/sys/fs/cgroup", groups: str | None = None) -> float:
    """Bytes this process may still take: the machine's available memory (psutil's
    ``available``: free, and what the system would hand back from its caches), and under a
    container's or a job's memory limit (cgroup v2 ``memory.max``, v1 ``limit_in_bytes``, of
    this process's own group and each group above it: a container's, a batch job's, a
    ``systemd-run -p MemoryMax=`` scope's) what the tightest leaves, whichever is less. A
    group's usage counts the files read through it (the page cache), which the kernel hands
    back before it kills anything: they count as free, as psutil's ``available`` counts them.
    ``root`` and ``groups`` (the text of ``/proc/self/cgroup``, read where None) say where the
    groups are: for a test, or groups mounted elsewhere."""
    import psutil

    if groups is None:
        try:
            groups = Path("/proc/self/cgroup").read_text()
        except OSError:  # not Linux, or hidden: the root's, as a container sees its own
            groups = "0::/\n4:memory:/"
    free = float(psutil.virtual_memory().available)
    for folder, limit, used in _memory_groups(groups, Path(root)):
        try:
            with open(folder / limit) as f, open(folder / used) as g:
                cap, now = f.read().strip(), g.read().strip()
        except OSError:
            continue
        if cap.isdigit() and now.isdigit():  # "max": no limit
            free = min(free, max(float(cap) - float(now) + _file_cache(folder), 0.0))
    return free


def _file_cache(folder) -> float:
    """Bytes of a memory cgroup's usage that are files read (active and inactive, with the
    groups below it: v1's ``total_*_file``, v2's ``*_file``), from its ``memory.stat``."""
    try:
        lines = (folder / "memory.stat").read_text().splitlines()
    except OSError:
        return 0.0
    stat = dict(line.split()[:2] for line in lines if len(line.split()) >= 2)
    v1 = "total_active_file" in stat
    names = ("total_active_file", "total_inactive_file") if v1 else ("active_file", "inactive_file")
    return float(sum(int(stat.get(n, "0")) for n in names if stat.get(n, "0").isdigit()))


def _memory_groups(groups: str, root) -> list:
    """``(folder, limit file, usage file)`` of the memory cgroups ``groups`` names (a
    ``/proc/self/cgroup``), each one's own first and then each above it to ``root``."""
    out = []
    for line in groups.splitlines():
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if number == "0" and not controllers:
            base, files = root, ("memory.max", "memory.current")
        elif "memory" in controllers.split(","):
            base, files = root / "memory", ("memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        parts = [p for p in path.split("/") if p]
        out += [(base.joinpath(*parts[:k]), *files) for k in range(len(parts), -1, -1)]
    return out
