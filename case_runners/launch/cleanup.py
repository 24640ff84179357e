"""Stop what is left of a run on this host, and nothing else.

A process is stopped only when a pid file of the run (pidfiles.find under the given directory: the host's
run directory for a whole run, a node directory after a failed round) names it and it still is that process:
same pid, start time and pid namespace, with the run id in its environment. The members of such a process's
session that carry the run id (a rank's data-loader workers) go with it. Never a match on argv.

Also removed: the run's containers (by label) and stale pid files.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from case_runners.core import pidfiles
from case_runners.core.processes import (
    ProcessId,
    is_run_process,
    pid_namespace,
    read_argv,
    read_stat,
    session_members,
    terminate,
)


def _ancestors() -> set[int]:
    seen, pid = set(), os.getpid()
    while pid and pid not in seen:
        seen.add(pid)
        stat = read_stat(pid)
        pid = stat.ppid if stat else 0
    return seen


def find_run(root: Path | str, run_id: str) -> tuple[list[dict[str, Any]], list[Path]]:
    """(processes, stale pid files) of run_id under root: each process as {pid, start, role, pid_file, argv},
    session members included."""
    found: dict[int, dict[str, Any]] = {}
    stale: list[Path] = []
    excluded = _ancestors()
    own_ns = pid_namespace()
    for path in pidfiles.find(root, run_id):
        doc = pidfiles.read(path)
        role = str((doc or {}).get("role") or path.name.split(".", 1)[0])
        if doc is None or doc.get("run_id") != run_id or not is_run_process(doc["id"], run_id):
            stale.append(path)
            if doc is not None and doc["id"].pidns in (None, own_ns):
                # A rank killed with its launcher may have left children in its session; while any is left,
                # the session id (its pid) cannot be taken by another process.
                _add(found, session_members(doc["id"].pid, run_id), None, role, path, excluded, "left behind")
            continue
        ident: ProcessId = doc["id"]
        members = [ident]
        stat = read_stat(ident.pid)
        if stat is not None and stat.session == ident.pid:  # a rank leads its own session
            members += [m for m in session_members(ident.pid, run_id) if m.pid != ident.pid]
        _add(found, members, ident, role, path, excluded)
    return sorted(found.values(), key=lambda p: p["pid"]), stale


def _add(found: dict[int, dict[str, Any]], members: list[ProcessId], leader: ProcessId | None, role: str,
         path: Path, excluded: set[int], others: str = "child") -> None:
    for member in members:
        if member.pid not in excluded and member.pid not in found:
            found[member.pid] = {**member.to_json(), "role": role if member == leader else f"{role} ({others})",
                                 "pid_file": str(path), "argv": read_argv(member.pid)}


def stop_run(root: Path | str, run_id: str, grace_s: float, *, check: bool = False, containers: bool = False,
             round_name: str | None = None) -> dict[str, Any]:
    """Stop the run's processes under root (SIGTERM, SIGKILL after grace_s), remove its stale pid files, its
    containers (all of the run's, or only round_name's). check: report, change nothing."""
    result: dict[str, Any] = {"containers": [], "engine": None, "processes": [], "terminated": [], "killed": [],
                              "stale_pid_files": []}
    if containers:  # removing a container ends its processes too
        try:
            from case_runners.launch.container.supervise import remove_run_containers
            result["containers"] = remove_run_containers(run_id, check=check, round_name=round_name)
            result["engine"] = "ok"
        except Exception as exc:  # noqa: BLE001 - no Docker here: no container of the run either
            result["engine"] = f"{type(exc).__name__}: {exc}"
    processes, stale = find_run(root, run_id) if os.path.isdir(root) else ([], [])
    result["processes"] = processes
    result["stale_pid_files"] = [str(path) for path in stale]
    if check:
        return result
    if processes:
        idents = [ProcessId(p["pid"], p["start"], p["pidns"]) for p in processes]
        result["terminated"], result["killed"] = terminate(idents, grace_s)
    for path in stale:
        with contextlib.suppress(OSError):
            path.unlink()
    return result
