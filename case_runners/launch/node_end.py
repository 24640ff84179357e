"""The end of a node of a round (`finish`, after the long polls): stop what is left when the launcher did not end
cleanly, and pack the node directory for the controller to fetch. Above the launcher: it may remove containers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from case_runners.core.processes import ProcessId, is_same
from case_runners.launch.cleanup import stop_run
from case_runners.launch.waiting import ended, pack
from case_runners.records.names import FAILED, SUCCESS


def finish(log_dir: Path, run_id: str, launcher: ProcessId | None, *, grace_s: float, containers: bool = False,
           round_name: str | None = None, archive: Path | None = None) -> dict[str, Any]:
    """The node's end: when its launcher is still running or the node did not succeed, stop what is left of the
    round on this host (cleanup.stop_run, this node directory only); then pack the directory into archive."""
    running = launcher is not None and is_same(launcher)
    answer: dict[str, Any] = ended(log_dir, run_id) if not running else \
        {"finished": False, "status": FAILED, "reason": "the launcher was still running", "node_result": None}
    answer["cleanup"] = None
    if running or answer["status"] != SUCCESS:
        answer["cleanup"] = stop_run(log_dir, run_id, grace_s, containers=containers, round_name=round_name)
    answer["archive"] = None
    if archive is not None and log_dir.is_dir():
        answer["archive"] = {"path": str(archive), "bytes": pack(log_dir, archive)}
    return answer
