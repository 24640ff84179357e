"""One rank: `python -m case_runners worker --config RESOLVED.json --log-dir DIR`, whatever its task.

Reads the resolved config, runs its task (`task` in the config, training by default: TASK_MODULE's run) and writes
`rank<R>.result.json` in DIR (the task's events go to `rank<R>.events.jsonl`). Returns 0 for success and
not_converged (both are results), 1 when the run crashed (the traceback is in the result),
128 + the signal when SIGTERM or SIGINT stopped it (stop_request.py; the phase is in the result).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from case_runners.core import files
from case_runners.core.errors import PerfplayError
from case_runners.core.processes import ROUND_DEADLINE_ENV
from case_runners.rank import stop_request
from case_runners.rank.driver import events as ev
from case_runners.rank.driver.events import EventLogger
from case_runners.rank.env import DistEnv, result_path
from case_runners.rank.start import thread_settings
from case_runners.records import names
from case_runners.records.rank import RankResult, build_rank_result
from case_runners.records.resolved import ResolvedConfig

TASK_MODULE = "case_runners.tasks.{task}.task"  # a task's package and its run(config, config_path, log, env)


def _say(text: str) -> None:
    """To the rank's log (stderr), unless there is no room left to say it."""
    with contextlib.suppress(OSError):
        print(text, file=sys.stderr, flush=True)


def task_runner(config: ResolvedConfig) -> Callable[[ResolvedConfig, str, EventLogger, DistEnv], dict[str, Any]]:
    """The run() of the config's task, found by name: a task imports the rank runtime, never the reverse. It returns
    the fields of its rank result (records/rank.py) but rank, world_size and e2e_time."""
    task = config.task_name
    if task not in names.TASKS:
        raise PerfplayError(f"unknown task '{task}' in the resolved config (allowed: {', '.join(names.TASKS)})")
    return importlib.import_module(TASK_MODULE.format(task=task)).run


def write_result(path: Path, result: RankResult) -> None:
    """The rank's result, atomically (whole or absent); files.WriteError names the cause and the path."""
    files.atomic_write_json(path, result.to_json(), default=str)


def round_deadline() -> float | None:
    """The time.time() at which this rank ends itself (ROUND_DEADLINE_ENV, set by its launcher), or None."""
    try:
        return float(os.environ[ROUND_DEADLINE_ENV])
    except (KeyError, ValueError):
        return None


def main(config_path: str, log_dir: str, launcher_grace_s: float | None = None) -> int:
    """launcher_grace_s: the launcher's time between SIGTERM and SIGKILL (the `worker` command passes it). Given,
    SIGTERM and SIGINT stop the rank within part of it (stop_request), for the rest of the process; None, for
    in-process callers, leaves signal handling alone."""
    started = time.perf_counter()
    try:
        out = files.secure_dir(log_dir)
    except PerfplayError as e:  # not a directory this user may safely write in: nowhere to leave a result
        _say(f"error: {e}")
        return 2
    env, log, code = DistEnv(), None, 0

    def record(fields: dict[str, Any]) -> RankResult:
        return build_rank_result(env.rank, env.world_size, {**fields, "threads": thread_settings()},
                                 time.perf_counter() - started)

    if launcher_grace_s is not None:  # the watchdog's result; it writes no event (the main thread may be writing one)
        stop_request.install(launcher_grace_s, lambda reason: write_result(
            result_path(out, env.rank), record({"status": names.FAILED, "reason": reason})), round_deadline())
    try:
        env = DistEnv.from_environ()
        config = ResolvedConfig.load(config_path)
        log = EventLogger(out, env.rank, int(config.params.get("log_freq", 10)))
        result = task_runner(config)(config, config_path, log, env)
    except stop_request.Stopped as e:
        result, code = {"status": names.FAILED, "reason": str(e)}, e.request.exit_code
    except PerfplayError as e:  # a bad input found only on the host (a corrupt ONNX file): its message, no traceback
        _say(f"error: {e}")
        result, code = {"status": names.FAILED, "reason": str(e)}, 1
    except Exception:  # noqa: BLE001 - any crash becomes a "failed" result with its traceback
        reason = traceback.format_exc()
        _say(reason)
        result, code = {"status": names.FAILED, "reason": reason}, 1
    finally:
        from case_runners.rank.dist import shutdown_distributed
        shutdown_distributed()
    written = record(result)
    code = code or (1 if written.status == names.FAILED else 0)  # a task's result that is not valid fails the rank
    try:
        log = log or EventLogger(out, env.rank, 10)
        log.event(ev.FINISHED, {k: v for k, v in written.to_json().items()
                                if k not in ("metrics_history", "measurements", "reason")})
        stop_request.write_result(lambda: write_result(result_path(out, env.rank), written), code)
        log.close()
    except (OSError, PerfplayError) as e:  # a full disk: the launcher names it from the free space it sees
        _say(f"error: the rank's result could not be written: {e}")
        code = code or 1
    stop_request.end_if_requested(code)
    return code
