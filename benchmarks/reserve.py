"""A machine of one's own on a shared one: a weighted cgroup v1 cpu group for a benchmark.

Both sides of a comparison (or a student's check) run in the group, and so does
everything they start; with a weight far above one busy process, the rest of the
shared machine's work weighs on neither.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def reserve_cpu(shares: int) -> Path | None:
    """Put this process, and so everything it starts (nbgrader's kernels, the engine's
    zygote and children), in a cgroup v1 cpu group weighted ``shares`` (1024 is one busy
    process of the rest of the machine). Both sides of the comparison then run as on a
    machine of their own, however busy the shared one is. None where it cannot be made."""
    base = Path("/sys/fs/cgroup/cpu")
    group = base / f"autograder-bench-{os.getpid()}"
    try:
        group.mkdir()
        (group / "cpu.shares").write_text(str(shares))
        (group / "cgroup.procs").write_text(str(os.getpid()))
    except OSError as error:
        print(f"no cpu reservation ({error}): the machine's other load weighs on both sides")
        return None
    return group


def release_cpu(group: Path | None) -> None:
    if group is not None:
        (group.parent / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(50):  # the last kernels may still be leaving the group
            try:
                group.rmdir()
                return
            except OSError:
                time.sleep(0.1)
