"""What makes a directory a run directory (results/<run_id>), for every command that reads runs: summary,
history, compare-runs and report refuse anything else with this one message."""

from __future__ import annotations

import re
from pathlib import Path

from case_runners.core.errors import PerfplayError
from case_runners.core.paths import RESOLVED_NAME
from case_runners.records.round import RECORD_NAME, find_records, record_path

ROUND_DIR = re.compile(r"round(\d+)")  # a round directory's name: round<N>


def check_run_dir(path: Path) -> Path:
    """`path` when it is a run directory (a case directory with its resolved config, or a round record, in it);
    else a PerfplayError naming it, and its run directory when it is a case or round directory."""
    path = Path(path)
    if not path.is_dir():
        raise PerfplayError(f"{path}: no such directory (give a run directory, results/<run_id>)" if not path.exists()
                            else f"{path}: not a directory (give a run directory, results/<run_id>)")
    if any(path.glob(f"*/{RESOLVED_NAME}")) or find_records(path, "*/round*"):
        return path
    if (path / RESOLVED_NAME).is_file():
        hint = f": a case directory; its run directory is {path.parent}"
    elif ROUND_DIR.fullmatch(path.name) or record_path(path).is_file():
        hint = f": a round directory; its run directory is {path.parent.parent}"
    else:
        hint = f" (no <case_id>/{RESOLVED_NAME} and no <case_id>/round<N>/{RECORD_NAME} in it)"
    raise PerfplayError(f"{path}: not a run directory{hint}")
