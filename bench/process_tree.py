"""The CPU time of a command's whole process tree, what detaches from it included: while the command runs, this
process is a child subreaper (Linux), so that a descendant whose parent exits (the playbook's background launcher
with its ranks, an ssh ControlMaster) is reparented here instead of to init; once the command is done, those
orphans are given orphan_grace_s to end on their own, then ended, and reaped, so that their CPU time (theirs and
that of every process they waited for) joins RUSAGE_CHILDREN beside the command's own."""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.05


def children_cpu() -> float:
    """User + system CPU seconds of every child this process has reaped."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def subreaper(on: bool) -> None:
    """While on, processes that detach from a descendant are reparented to this one."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        sys.exit(f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")


def _children() -> set[int]:
    return {int(pid) for task in Path("/proc/self/task").iterdir() for pid in (task / "children").read_text().split()}


def reap_orphans(grace_s: float) -> None:
    """Reap every child left (the orphans reparented here), giving them grace_s to end on their own before SIGTERM,
    so that their CPU time joins RUSAGE_CHILDREN. Call it only where every child is an orphan of the command run
    (the command itself already waited for): it waits for all of them."""
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(POLL_S)
    for pid in _children():
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def run_tree(argv: list[str], orphan_grace_s: float,
             **kwargs: Any) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """subprocess.run(argv, capture_output=True, text=True, **kwargs), its wall seconds (until it exits) and the CPU
    seconds of its whole tree, what detached from it included. The caller has no other child running: every child
    is reaped here."""
    cpu0 = children_cpu()
    subreaper(True)
    try:
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)
        wall = time.perf_counter() - start
        reap_orphans(orphan_grace_s)
    finally:
        subreaper(False)
    return proc, wall, children_cpu() - cpu0
