"""Pid files and process liveness, without trusting a pid file blindly (stale files, reused pids, zombies)."""

from __future__ import annotations

import os
from pathlib import Path


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None


def create_exclusive(path: Path, pid: int) -> None:
    """Write pid to a new file; FileExistsError if another monitor of this run got there first."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, f"{pid}\n".encode())
    finally:
        os.close(fd)


def remove_if_owned(path: Path, pid: int) -> None:
    if read_pid(path) == pid:
        path.unlink(missing_ok=True)


def is_alive(pid: int) -> bool:
    """True if pid runs; a zombie (exited, not yet reaped by its parent) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True  # no procfs: trust kill(0)
    return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X")


def is_monitor_process(pid: int) -> bool:
    """Alive and a perfplay monitor (argv mentions "monitor"): guards against a recycled pid."""
    if not is_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return True  # no procfs: cannot tell, assume it is ours
    return b"monitor" in cmdline
