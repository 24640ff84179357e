"""What tests share about the processes they start: finding a run's processes, waiting without timing bounds
a busy machine breaks, needing root, and killing what a test started, also when it fails."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from case_runners.core.processes import identify, list_pids, read_environ
from case_runners.core.run_ids import RUN_ID_ENV

# Bounds on a hang, never on speed (tests/unit/test_suite_guards.py requires one on every blocking call in tests/):
REAPED_S = 60  # a killed process is gone and reaped
SHORT_S = 300  # a command that does little: mount, git, pip config, a CLI's --help, an import check
RUN_S = 900  # a real run of a case or a playbook, a package install

SLEEPER = "import os, signal, sys, time\n{}\nsys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(300)\n"


def run_pids(run_id: str) -> list[int]:
    """Live processes with the run id in their environment, anywhere this namespace sees (every test host
    included): how a test checks that nothing of a run is left. (A cleanup acts on pid files, never on this.)"""
    return [pid for pid in list_pids() if read_environ(pid).get(RUN_ID_ENV) == run_id and identify(pid) is not None]


def kill_run(run_id: str) -> None:
    for pid in run_pids(run_id):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def wait_for(condition: Callable[[], Any], timeout: float = 300, interval: float = 0.1) -> Any:
    """condition()'s first true value, polled until `timeout`; its last value (false) after that. The timeout is
    a bound on a hang, never on speed: tests must pass on a busy machine."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def communicate_or_kill(procs: Iterable[subprocess.Popen], timeout: float = 600) -> list[str]:
    """Each process's output once it has exited; every one is killed if any fails to exit in time."""
    procs = list(procs)
    try:
        return [proc.communicate(timeout=timeout)[0] for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=REAPED_S)


def require_root(what: str) -> None:
    """Skip off CI without root; in CI (CI=true) a missing root is a failure, never a silent skip."""
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{what} needs root")
        pytest.skip(f"{what} needs root; CI runs it")


class Sleepers:
    """Plain processes a test starts (stand-ins, decoys); every one is killed at the end of the test."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen] = []

    def __call__(self, *argv: str, code: str = "", run_id: str | None = None, session: bool = False,
                 env: dict[str, str] | None = None) -> subprocess.Popen:
        environ = {k: v for k, v in os.environ.items() if k != RUN_ID_ENV}
        environ.update({RUN_ID_ENV: run_id} if run_id else {}, **(env or {}))
        proc = subprocess.Popen([sys.executable, "-c", SLEEPER.format(code), *argv], stdout=subprocess.PIPE,
                                env=environ, start_new_session=session)
        self.started.append(proc)
        assert proc.stdout.readline() == b"ready\n"
        return proc

    def kill_all(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=REAPED_S)
