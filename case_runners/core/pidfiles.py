"""Pid files of a run: `<role>.<run_id>.pid` (launcher, rank<R>, <name>_monitor, env_file) in the node directory,
one JSON object: the process's pid, start time and pid namespace, the run id, and what else cleanup needs.

A pid file is created new (O_EXCL) and never through a symlink; it is trusted only while the process it
names runs with the same start time, in this pid namespace, with the run id in its environment
(processes.is_run_process). Anything else is stale.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from case_runners.core import files
from case_runners.core.processes import ProcessId, is_run_process

SUFFIX = ".pid"
MAX_BYTES = 1 << 16


def pid_path(directory: Path | str, role: str, run_id: str) -> Path:
    return Path(directory) / f"{role}.{run_id}{SUFFIX}"


def write(path: Path | str, ident: ProcessId, run_id: str, **extra: Any) -> None:
    """Create `path` for `ident`; FileExistsError if it exists, files.WriteError if it cannot be written."""
    doc = {**ident.to_json(), "run_id": run_id, **extra}
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, files.FILE_MODE)
    except FileExistsError:
        raise
    except OSError as exc:
        raise files.write_error(exc, path) from None
    try:
        os.write(fd, (json.dumps(doc) + "\n").encode())
    except OSError as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise files.write_error(exc, path) from None
    os.close(fd)


def read(path: Path | str) -> dict[str, Any] | None:
    """The pid file's object with "id" (a ProcessId), or None when absent, a symlink or malformed."""
    try:
        doc = json.loads(files.read_text_nofollow(path, MAX_BYTES))
    except (OSError, ValueError):
        return None
    ident = ProcessId.from_json(doc)
    return None if ident is None else {**doc, "id": ident}


def live(path: Path | str, run_id: str) -> ProcessId | None:
    """The process `path` names if it is a live process of run_id, else None."""
    doc = read(path)
    if doc is None or doc.get("run_id") != run_id or not is_run_process(doc["id"], run_id):
        return None
    return doc["id"]


def remove(path: Path | str, ident: ProcessId) -> None:
    """Remove `path` if it still names `ident` (another process may have taken it over)."""
    doc = read(path)
    if doc is not None and doc["id"] == ident:
        with contextlib.suppress(OSError):
            os.unlink(path)


def find(root: Path | str, run_id: str) -> list[Path]:
    """Every pid file of run_id under root (symlinked directories are not followed)."""
    suffix = f".{run_id}{SUFFIX}"
    found = []
    for directory, _dirs, names in os.walk(root):
        found += [Path(directory) / name for name in names if name.endswith(suffix)]
    return sorted(found)


@contextlib.contextmanager
def held(path: Path | str, ident: ProcessId, run_id: str, **extra: Any) -> Iterator[None]:
    """`path` names `ident` for the length of the block (a stale file of a dead process is replaced)."""
    try:
        write(path, ident, run_id, **extra)
    except FileExistsError:
        if live(path, run_id) is not None:
            raise
        with contextlib.suppress(OSError):
            os.unlink(path)
        write(path, ident, run_id, **extra)
    try:
        yield
    finally:
        remove(path, ident)
