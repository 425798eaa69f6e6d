"""What memory this process may still take (embedkit.machine.memory): the machine's and its cgroups'."""

from __future__ import annotations

from embedkit.machine.memory import free_memory


def test_free_memory_reads_the_limit_of_this_processs_own_group_and_those_above_it(tmp_path):
    """A batch job's or a scope's memory limit (issue 60: a CI job with a 4 GB limit) is the
    group the process is in, not the mount's root: cgroup v1 and v2, each group up to the root,
    the tightest of them; a group without a limit ("max") limits nothing."""
    import psutil

    gb = 2**30  # each limit below is far under what the machine has free

    def group(folder, limit, used, v2=True):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ("memory.max" if v2 else "memory.limit_in_bytes")).write_text(f"{limit}\n")
        (folder / ("memory.current" if v2 else "memory.usage_in_bytes")).write_text(f"{used}\n")

    group(tmp_path / "memory", 2**62, 0, v2=False)  # v1: the root unlimited, the job at 1 GB
    job = tmp_path / "memory" / "slurm" / "job_7"
    group(job, gb, gb // 4, v2=False)
    assert free_memory(tmp_path, "4:memory:/slurm/job_7\n1:cpu:/x\n") == 0.75 * gb
    # of its usage, files read (the page cache: a 5 GB file read through a 4 GB group) the kernel
    # hands back before it kills: free (a group at 4 GB, its usage 3.9 GB of cache, said 2 GB)
    group(job, gb, 3 * gb // 4, v2=False)
    (job / "memory.stat").write_text(f"cache {gb // 2}\nrss {gb // 4}\nactive_file 0\n"
                                     f"total_active_file {gb // 4}\ntotal_inactive_file {gb // 4}\n")
    assert free_memory(tmp_path, "4:memory:/slurm/job_7\n") == 0.75 * gb
    group(tmp_path / "system.slice", 3 * gb, gb)  # v2: a scope without a limit, its parent at 3 GB
    group(tmp_path / "system.slice" / "run-1.scope", "max", gb // 2)
    assert free_memory(tmp_path, "0::/system.slice/run-1.scope\n") == 2 * gb
    (tmp_path / "system.slice" / "memory.stat").write_text(
        f"anon {gb}\nfile {gb // 2}\nactive_file {gb // 8}\ninactive_file {gb // 8}\n")
    assert free_memory(tmp_path, "0::/system.slice/run-1.scope\n") == 2.25 * gb
    free = free_memory(tmp_path, "0::/elsewhere\n")  # no such group: the machine's own
    assert abs(free - psutil.virtual_memory().available) < 256 * 2**20 and free > 3 * gb
