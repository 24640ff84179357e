# -*- coding: utf-8 -*-
# PRIVATE: find and stop the processes of one perfplay run. Not a public API.
#
# Stdlib only, Linux /proc only, no ``ansible.*`` import (see _perfplay_cli.py).
#
# A process belongs to run RUN_ID when one of its argv elements is exactly
# RUN_ID (launchers and monitors get ``--run-id RUN_ID``) or its environment has
# PERFPLAY_RUN_ID=RUN_ID (workers, which the launcher starts with that variable).
# Exact matching keeps ``ansible-playbook -e perfplay_run_id=RUN_ID`` and its
# forks out; the caller's own process and its ancestors are always excluded.

from __future__ import annotations

import os
import signal
import time

RUN_ID_ENV = "PERFPLAY_RUN_ID"


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:  # gone, or not ours to read
        return None


def read_argv(pid, proc_root="/proc"):
    """argv of ``pid`` as a list of str, or ``None`` when unreadable."""
    raw = _read(os.path.join(proc_root, str(pid), "cmdline"))
    if not raw:
        return None
    return [part.decode("utf-8", "replace") for part in raw.rstrip(b"\0").split(b"\0")]


def read_environ(pid, proc_root="/proc"):
    """Environment of ``pid`` as a dict of str (empty when unreadable)."""
    raw = _read(os.path.join(proc_root, str(pid), "environ")) or b""
    pairs = (entry.split(b"=", 1) for entry in raw.split(b"\0") if b"=" in entry)
    return dict((key.decode("utf-8", "replace"), value.decode("utf-8", "replace")) for key, value in pairs)


def read_run_env(pid, proc_root="/proc"):
    """Value of PERFPLAY_RUN_ID in the environment of ``pid``, or ``None``."""
    return read_environ(pid, proc_root).get(RUN_ID_ENV)


def parent_pid(pid, proc_root="/proc"):
    """Parent pid from /proc/PID/stat, or ``None``."""
    raw = _read(os.path.join(proc_root, str(pid), "stat"))
    if not raw:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    fields = raw[raw.rfind(b")") + 2:].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def ancestors(pid, proc_root="/proc"):
    """``pid`` and all its ancestors."""
    seen = set()
    while pid and pid not in seen:
        seen.add(pid)
        pid = parent_pid(pid, proc_root)
    return seen


def list_pids(proc_root="/proc"):
    return sorted(int(name) for name in os.listdir(proc_root) if name.isdigit())


def find_run_processes(run_id, proc_root="/proc", self_pid=None):
    """Processes of ``run_id`` as ``[{"pid": int, "argv": [str]}]``, oldest pid first."""
    excluded = ancestors(self_pid or os.getpid(), proc_root)
    found = []
    for pid in list_pids(proc_root):
        if pid in excluded:
            continue
        argv = read_argv(pid, proc_root)
        if argv is None:  # kernel thread or already gone
            continue
        if run_id in argv or read_run_env(pid, proc_root) == run_id:
            found.append({"pid": pid, "argv": argv})
    return found


def is_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is dead for our purposes: its parent just has not reaped it yet.
    stat = _read("/proc/%d/stat" % pid) or b""
    return stat[stat.rfind(b")") + 2:][:1] != b"Z"


def _signal(pid, signum):
    try:
        os.kill(pid, signum)
        return True
    except ProcessLookupError:
        return False


def terminate(pids, grace_period, poll_interval=0.1, sleep=time.sleep, clock=time.monotonic):
    """SIGTERM ``pids``, SIGKILL those still alive after ``grace_period`` seconds.

    Returns ``(terminated, killed)``: pids that exited after SIGTERM, pids that
    needed SIGKILL. Pids already gone before the signal are in neither.
    """
    signalled = [pid for pid in pids if _signal(pid, signal.SIGTERM)]
    deadline = clock() + grace_period
    alive = list(signalled)
    while alive and clock() < deadline:
        sleep(poll_interval)
        alive = [pid for pid in alive if is_alive(pid)]
    killed = [pid for pid in alive if _signal(pid, signal.SIGKILL)]
    terminated = [pid for pid in signalled if pid not in killed]
    return terminated, killed
