"""The long poll of a background launcher (`wait`), what it answers once the launcher has ended, and the node
directory packed for the controller to fetch: into a file (node_end.finish) or, when small, into the wait's last
answer (pack_inline), which spares a remote node that succeeded the module run of `finish`."""

from __future__ import annotations

import base64
import io
import os
import select
import tarfile
import time
from pathlib import Path
from typing import Any

from case_runners.core import files
from case_runners.core.processes import ProcessId, is_same
from case_runners.launch import progress
from case_runners.launch.detached import LAUNCHER_LOG
from case_runners.records.names import FAILED, RUNNING
from case_runners.records.node import NODE_RESULT, NodeResult
from case_runners.records.schema import RecordError, read_json

POLL_S = 0.2  # without a pidfd
EXITED_S = 0.005  # with one: its exit signalled, the next look at /proc finds it a zombie (or gone) at once
LOG_TAIL_LINES = 5


def read_node_result(log_dir: Path, run_id: str) -> NodeResult | None:
    """The node's node_result.json when there is one of this run (never through a symlink); RecordError when it is
    not a valid one."""
    path = log_dir / NODE_RESULT
    if path.is_symlink() or not path.is_file():
        return None
    doc = read_json(path)
    if isinstance(doc, dict) and doc.get("run_id") != run_id:
        return None  # another run's, left behind
    return NodeResult.from_json(doc, str(path))


def _log_tail(log_dir: Path) -> str:
    try:
        lines = files.read_text_nofollow(log_dir / LAUNCHER_LOG, 1 << 16).strip().splitlines()
    except OSError:
        return ""
    return " | ".join(lines[-LOG_TAIL_LINES:])


def _drop_empty_log(log_dir: Path) -> None:
    """An ended launcher that said nothing leaves no launcher.log (its node result is in node_result.json)."""
    log = log_dir / LAUNCHER_LOG
    if log.is_file() and not log.is_symlink() and log.stat().st_size == 0:
        log.unlink()


def ended(log_dir: Path, run_id: str) -> dict[str, Any]:
    """The answer once the launcher has ended: its node result, or a failed one saying it wrote none. A node that
    succeeded needs nothing more on its host (its directory comes back in this answer: pack_inline); finish
    (node_end) is for the others and for a directory too big for the answer."""
    _drop_empty_log(log_dir)
    try:
        result = read_node_result(log_dir, run_id)
    except RecordError as exc:
        return {"finished": True, "status": FAILED, "reason": f"the launcher's node result is not valid: {exc}",
                "node_result": None}
    if result is None:
        tail = _log_tail(log_dir)
        reason = f"the launcher ended without writing {NODE_RESULT}" + (f": {tail}" if tail else "")
        return {"finished": True, "status": FAILED, "reason": reason, "node_result": None}
    return {"finished": True, "status": result.status, "reason": result.reason, "node_result": result.to_json()}


def _exit_fd(pid: int) -> int | None:
    """A pidfd that becomes readable when pid ends (Linux >= 5.3), or None: then the wait polls."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def wait(log_dir: Path, run_id: str, launcher: ProcessId, for_s: float, started_at: float | None = None,
         timeout_s: float | None = None) -> dict[str, Any]:
    """Wait up to for_s for the launcher to end, returning as it ends. Ended: its node result. Still running:
    {finished: false} with for_s, where the round stands (progress.progress) and the seconds since its start."""
    deadline = time.monotonic() + max(0.0, for_s)
    exit_fd = _exit_fd(launcher.pid)
    try:
        while is_same(launcher):
            left = deadline - time.monotonic()
            if left <= 0:
                state = progress.progress(log_dir)
                elapsed = round(time.time() - started_at, 1) if started_at else None
                return {"finished": False, "status": RUNNING, "reason": None, "node_result": None, "for_s": for_s,
                        "progress": {**state, "elapsed_s": elapsed, "timeout_s": timeout_s},
                        "line": line(state, elapsed, timeout_s)}
            if exit_fd is None:
                time.sleep(min(POLL_S, left))
            elif select.select([exit_fd], [], [], left)[0]:
                time.sleep(min(EXITED_S, left))  # ended: look again now, not a poll later
    finally:
        if exit_fd is not None:
            os.close(exit_fd)
    return ended(log_dir, run_id)


def line(state: dict[str, Any], elapsed: float | None, timeout_s: float | None) -> str:
    """'training: epoch 2, step 120, loss 0.312, 812.4 samples/s (rank 0); 45 s of 1800 s'."""
    clock = f"{elapsed:.0f} s" if elapsed is not None else ""
    if clock and timeout_s:
        clock += f" of {timeout_s:g} s"
    return progress.describe(state) + (f"; {clock}" if clock else "")


def _write_tar(log_dir: Path, **into: Any) -> None:
    """log_dir as a gzipped tar (its top folder: the node directory's name) into a file (name=) or a buffer
    (fileobj=): what pack and pack_inline write."""
    with tarfile.open(mode="w:gz", **into) as tar:
        tar.add(log_dir, arcname=log_dir.name)


def pack(log_dir: Path, archive: Path) -> int:
    """Write log_dir as a gzipped tar (its top folder: the node directory's name); the archive's size."""
    _write_tar(log_dir, name=archive)
    return archive.stat().st_size


def pack_inline(log_dir: Path, max_bytes: int) -> str | None:
    """log_dir packed as by pack, base64-encoded for a JSON answer; None when the archive is over max_bytes (then
    `finish` packs it into a file that the controller fetches)."""
    buffer = io.BytesIO()
    _write_tar(log_dir, fileobj=buffer)
    data = buffer.getvalue()
    return base64.b64encode(data).decode("ascii") if len(data) <= max_bytes else None

