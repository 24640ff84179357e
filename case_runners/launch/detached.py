"""A node's launcher in the background, for the playbook: started by one module run (`launch --detach`), then
waited for by long polls (`wait`) and finished (`finish`), never a module process per second.

The launcher runs in a session of its own with its output in `launcher.log` of the node directory; the start
returns its identity (pid, start time, pid namespace), which every later poll checks, so a recycled pid is
never mistaken for it. Stdlib only.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from case_runners.core import files
from case_runners.core.paths import project_root
from case_runners.core.processes import identify

LAUNCHER_LOG = "launcher.log"
DETACHED_FLAG = "--detached"  # the launcher started by start(): it does not die with the process that started it


def start(launch_args: list[str], log_dir: Path) -> dict[str, Any]:
    """Start `python -m case_runners launch <launch_args>` in the background; its identity (with its wall-clock
    start, started_at) and log."""
    files.secure_dir(log_dir)
    log_path = log_dir / LAUNCHER_LOG
    argv = [sys.executable, "-m", "case_runners", "launch", *launch_args, DETACHED_FLAG]
    started_at = round(time.time(), 3)
    with files.open_text(log_path, append=True) as log:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   cwd=project_root(), start_new_session=True)
    ident = identify(process.pid)
    process.returncode = 0  # never waited for here: its new parent reaps it (no ResourceWarning on exit)
    if ident is None:  # gone already: only an exec failure ends it this fast
        return {"started": False, "launcher": None, "log": str(log_path),
                "reason": f"the launcher exited at once (see {log_path})"}
    return {"started": True, "launcher": {**ident.to_json(), "started_at": started_at}, "log": str(log_path),
            "reason": None}
