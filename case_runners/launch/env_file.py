"""A vendor case's environment_variables.sh applied in the host runtime (the container's entry shell sources it
there): bash sources it over the launcher's environment, and the ranks start with what it leaves set.

The bash runs in a session of its own, recorded in a pid file (`env_file.<run_id>.pid`) while it runs, and its
whole process group is killed when it ends or times out: nothing the file starts outlives it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from case_runners.core import pidfiles
from case_runners.core.errors import PerfplayError
from case_runners.core.processes import identify
from case_runners.core.run_ids import RUN_ID_ENV

BASH_OWN = ("_", "SHLVL", "PWD", "OLDPWD")  # what bash itself sets, not the file
ENV_FILE_TIMEOUT_S = 60  # bash checking or sourcing the vendor case's environment_variables.sh
ROLE = "env_file"  # its pid file's role
POLL_S = 0.05


def syntax_problem(path: Path) -> str | None:
    """What `bash -n` says of the file (a syntax error, without running it), or None when it parses."""
    try:
        done = subprocess.run(["bash", "-n", str(path)], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=ENV_FILE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bash -n could not check it: {exc}"
    if done.returncode == 0:
        return None
    said = done.stderr.strip().splitlines()
    return f"bash -n: {said[0].removeprefix(f'{path}: ')}" if said else f"bash -n: exit code {done.returncode}"


def sourced(path: Path, base: dict[str, str], pid_dir: Path | None = None,
            run_id: str | None = None) -> dict[str, str]:
    """The environment after `. path` in bash, started with base. PerfplayError naming the file when it fails.
    pid_dir and run_id: where its pid file goes while it runs; what it starts carries run_id."""
    if run_id:
        base = {**base, RUN_ID_ENV: run_id}
    argv = ["bash", "-c", '. "$1" >&2 && env -0', "perfplay-env", str(path)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:  # files, not pipes: a background child holding them open cannot block the read
            process = subprocess.Popen(argv, env=base, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                       start_new_session=True)
        except OSError as exc:
            raise PerfplayError(f"{path}: cannot be sourced: {exc}") from None
        try:
            with contextlib.ExitStack() as stack:
                ident = identify(process.pid)
                if pid_dir is not None and run_id and ident is not None:
                    stack.enter_context(pidfiles.held(pidfiles.pid_path(pid_dir, ROLE, run_id), ident, run_id,
                                                      role=ROLE))
                exited = _wait_unreaped(process.pid, ENV_FILE_TIMEOUT_S)
        finally:  # bash is not reaped yet, so its group id is still its own
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if not exited:
            raise PerfplayError(f"{path}: cannot be sourced: it did not finish within {ENV_FILE_TIMEOUT_S:g} s "
                                "(stopped with everything it started)")
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode:
        said = stderr.decode(errors="replace").strip().splitlines()
        raise PerfplayError(f"{path}: sourcing it failed (exit code {process.returncode})"
                            + (f": {said[-1]}" if said else ""))
    env = dict(entry.split("=", 1) for entry in stdout.decode(errors="replace").split("\0") if "=" in entry)
    for name in BASH_OWN:
        env.pop(name, None)
        if name in base:
            env[name] = base[name]
    return env


def _wait_unreaped(pid: int, timeout_s: float) -> bool:
    """Wait up to timeout_s for child `pid` to exit, leaving it unreaped; False if it still runs."""
    deadline = time.monotonic() + timeout_s
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)
    return True
