"""Which process is which, on Linux: a pid is only trusted together with its start time, its pid namespace and
the run id in its environment, so a reused pid or a process that merely mentions a run id is never signalled.

Stdlib only (the launcher, the monitors and the cleanup import it); reads /proc.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeGuard

from case_runners.core.run_ids import RUN_ID_ENV

PROC = "/proc"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_PID_ENV = "PERFPLAY_PARENT_PID"  # set by a launcher for its ranks: they die with it (die_with_parent)
ROUND_DEADLINE_ENV = "PERFPLAY_ROUND_DEADLINE"  # time.time() at which a rank ends itself, its launcher stuck or not


@dataclass(frozen=True)
class Stat:
    """The fields of /proc/<pid>/stat that identify a process and its family."""

    state: str
    ppid: int
    session: int
    start: int  # field 22: clock ticks after boot at which the process started
    cpu_ticks: int = 0  # fields 14-17: CPU time (user, system) of the process and of the children it waited for


@dataclass(frozen=True)
class ProcessId:
    """A process as recorded in a pid file: pid, start time and pid namespace (None where unreadable)."""

    pid: int
    start: int
    pidns: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "start": self.start, "pidns": self.pidns}

    @classmethod
    def from_json(cls, doc: Any) -> ProcessId | None:
        if not isinstance(doc, dict):
            return None
        pid, start, pidns = doc.get("pid"), doc.get("start"), doc.get("pidns")
        if not (_is_int(pid) and pid > 0 and _is_int(start) and (pidns is None or _is_int(pidns))):
            return None
        return cls(pid, start, pidns)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def read_stat(pid: int | str, proc: str = PROC) -> Stat | None:
    try:
        with open(f"{proc}/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2:].split()  # "pid (comm) state ppid ...": comm may hold spaces and ")"
    try:
        return Stat(fields[0].decode(), int(fields[1]), int(fields[3]), int(fields[19]),
                    sum(int(x) for x in fields[11:15]))
    except (IndexError, ValueError):
        return None


def pid_namespace(pid: int | str = "self", proc: str = PROC) -> int | None:
    try:
        return os.stat(f"{proc}/{pid}/ns/pid").st_ino
    except OSError:
        return None


def identify(pid: int, proc: str = PROC) -> ProcessId | None:
    """The ProcessId of a live process, or None."""
    stat = read_stat(pid, proc)
    if stat is None or stat.state in ("Z", "X"):
        return None
    return ProcessId(pid, stat.start, pid_namespace(pid, proc))


def own_id() -> ProcessId:
    found = identify(os.getpid())
    if found is None:  # no procfs: pid alone, which nothing will trust
        return ProcessId(os.getpid(), -1, None)
    return found


def read_environ(pid: int, proc: str = PROC) -> dict[str, str]:
    """The environment `pid` started with (empty when unreadable)."""
    try:
        with open(f"{proc}/{pid}/environ", "rb") as handle:
            raw = handle.read()
    except OSError:
        return {}
    pairs = (entry.split(b"=", 1) for entry in raw.split(b"\0") if b"=" in entry)
    return {key.decode("utf-8", "replace"): value.decode("utf-8", "replace") for key, value in pairs}


def read_argv(pid: int, proc: str = PROC) -> list[str]:
    try:
        with open(f"{proc}/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.rstrip(b"\0").split(b"\0")] if raw else []


def is_same(ident: ProcessId, proc: str = PROC) -> bool:
    """True while `ident` runs: the same pid, start time and pid namespace; not a zombie."""
    now = identify(ident.pid, proc)
    if now is None or now.start != ident.start or ident.start < 0:
        return False
    return ident.pidns is None or now.pidns is None or now.pidns == ident.pidns


def is_run_process(ident: ProcessId, run_id: str, proc: str = PROC) -> bool:
    """`ident` runs, in this pid namespace, with RUN_ID_ENV=run_id in its environment."""
    if ident.pidns is not None and ident.pidns != pid_namespace("self", proc):
        return False  # another namespace's pid (a container's): not a pid of this host
    return is_same(ident, proc) and read_environ(ident.pid, proc).get(RUN_ID_ENV) == run_id


def list_pids(proc: str = PROC) -> list[int]:
    return sorted(int(name) for name in os.listdir(proc) if name.isdigit())


def session_members(session: int, run_id: str, proc: str = PROC) -> list[ProcessId]:
    """Live processes of session `session` that carry run_id (a rank's data-loader workers, compilers ...)."""
    found = []
    for pid in list_pids(proc):
        stat = read_stat(pid, proc)
        if stat is None or stat.session != session or stat.state in ("Z", "X"):
            continue
        if read_environ(pid, proc).get(RUN_ID_ENV) == run_id:
            found.append(ProcessId(pid, stat.start, pid_namespace(pid, proc)))
    return found


def _signal(ident: ProcessId, signum: int) -> bool:
    """Signal `ident` if it is still that process; False if it is gone."""
    if not is_same(ident):
        return False
    try:
        os.kill(ident.pid, signum)
        return True
    except ProcessLookupError:
        return False


def terminate(idents: Iterable[ProcessId], grace_s: float) -> tuple[list[int], list[int]]:
    """SIGTERM each process, SIGKILL those still the same process after grace_s. (terminated, killed) pids;
    a process gone before its signal is in neither."""
    signalled = [ident for ident in idents if _signal(ident, signal.SIGTERM)]
    for ident in signalled:
        _signal(ident, signal.SIGCONT)  # a stopped process must run to handle SIGTERM
    killed = [ident.pid for ident in wait_gone(signalled, grace_s) if _signal(ident, signal.SIGKILL)]
    return [ident.pid for ident in signalled if ident.pid not in killed], killed


def wait_gone(idents: Iterable[ProcessId], timeout_s: float, poll_s: float = 0.05) -> list[ProcessId]:
    """Wait up to timeout_s for the processes to end; those still running."""
    deadline = time.monotonic() + timeout_s
    alive = [ident for ident in idents if is_same(ident)]
    while alive and time.monotonic() < deadline:
        time.sleep(poll_s)
        alive = [ident for ident in alive if is_same(ident)]
    return alive


def die_with_parent(signum: int = signal.SIGKILL) -> bool:
    """When PARENT_PID_ENV names this process's starter, have the kernel send `signum` once it exits (Linux prctl
    PR_SET_PDEATHSIG); exit at once when it is already gone. False when not asked, or the platform cannot."""
    raw = os.environ.get(PARENT_PID_ENV, "")
    if not raw.isdigit():
        return False
    parent = int(raw)
    with contextlib.suppress(OSError, AttributeError):
        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0:
            if os.getppid() != parent:  # it died before the prctl: nobody is left to stop us
                os._exit(128 + int(signum))
            return True
    return False
