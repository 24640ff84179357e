"""What a node's launcher owns besides its ranks, for the length of its round: a safe node directory, its pid
file (pid, start time, run id) for a cleanup to find it, and the round's monitors.

The monitors are owned: each watches the launcher (pid and start time) and stops once it has ended, and
stops at the round's deadline whatever happens, so none outlives its round even if the launcher is killed.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any

from case_runners.core import files, pidfiles
from case_runners.core.errors import PerfplayError
from case_runners.core.processes import ProcessId, own_id
from case_runners.monitors import daemon
from case_runners.monitors.spec import MonitorSpec

LAUNCHER_ROLE = "launcher"


class SetupError(PerfplayError):
    """The node could not be set up (its directory, pid file or monitors); the message says why."""


@contextlib.contextmanager
def guarded_node(spec: Any, deadline: float) -> Iterator[ProcessId]:
    """Hold the launcher's pid file and run its monitors (spec.monitors) until the block ends; deadline is
    time.time() at which the monitors stop in any case. SetupError when any of it cannot be done."""
    me = own_id()
    with contextlib.ExitStack() as stack:  # unwound in reverse: monitors stopped, then the pid file removed
        try:
            files.secure_dir(spec.log_dir)
            if not spec.inside_container:  # inside, its host-side twin holds the pid file and the monitors
                stack.enter_context(pidfiles.held(
                    pidfiles.pid_path(spec.log_dir, LAUNCHER_ROLE, spec.run_id), me, spec.run_id,
                    role=LAUNCHER_ROLE, node_rank=spec.node_rank))
            for name in spec.monitors:
                monitor = MonitorSpec(spec.log_dir, name, spec.run_id, spec.monitor_interval_s, owner=me,
                                      deadline=deadline)
                _start(monitor)
                stack.callback(_stop, monitor)
        except FileExistsError:
            raise SetupError(f"another launcher of run {spec.run_id} is running in {spec.log_dir}") from None
        except PerfplayError as exc:
            raise SetupError(str(exc)) from None
        yield me


def _start(monitor: MonitorSpec) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):  # stdout is the launcher's document
        code = daemon.start(monitor)
    if code != daemon.EXIT_OK:
        said = " ".join((err.getvalue() or out.getvalue()).split())
        raise SetupError(f"the {monitor.name} monitor did not start: {said or f'exit code {code}'}")


def _stop(monitor: MonitorSpec) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        daemon.stop(monitor)
