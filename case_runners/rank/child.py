"""A program a rank runs as its child (a vendor stack's trainer, a base toolkit's build and run): its output passed on
to the rank's log, its last lines kept for the rank's reason, a stop request (a signal, the round's deadline)
forwarded to it, and never outliving the rank."""

from __future__ import annotations

import collections
import contextlib
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from case_runners.core.errors import PerfplayError
from case_runners.rank import stop_request

TAIL_LINES = 20  # of the program's output, in a failed rank's reason
STOP_WAIT_S = 10.0  # after forwarding a stop: the program's time to end before SIGKILL


def run_child(argv: list[str], cwd: Path, env: dict[str, str], on_line: Callable[[str], None] | None = None,
              what: str = "the stack's command", doing: str = "training") -> tuple[int, list[str]]:
    """Run the program (`what`, in messages), its output (stdout and stderr) passed on to the rank's stderr and each
    line, without its newline, to on_line; a stop request (a signal or the round's deadline) forwarded to it,
    Stopped raised once it ended (`doing`: the rank's phase, in the stop's message). (exit code, its last lines)."""
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    try:
        child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, text=True, errors="replace")
    except OSError as exc:
        raise PerfplayError(f"cannot start {what} {argv}: {exc}") from None
    assert child.stdout is not None
    reader = threading.Thread(target=_pass_on, args=(child.stdout, tail, on_line), daemon=True)
    reader.start()
    try:
        while child.poll() is None:
            stop_request.check(f"{doing} ({what})")
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=0.2)
    except stop_request.Stopped as stopped:
        _stop(child, stopped)
        raise
    finally:
        if child.poll() is None:  # any other exit of this frame: the program does not outlive its rank
            child.kill()
            child.wait()
        reader.join(timeout=5)
    return child.returncode, list(tail)


def _stop(child: subprocess.Popen, stopped: stop_request.Stopped) -> None:
    """Forward the stop request's signal (SIGTERM at the deadline), then SIGKILL after STOP_WAIT_S."""
    signum = stopped.request.signum if stopped.request.signum in stop_request.SIGNALS else signal.SIGTERM
    with contextlib.suppress(ProcessLookupError):
        child.send_signal(signum)
    try:
        child.wait(timeout=STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _pass_on(out: IO[str], tail: collections.deque[str], on_line: Callable[[str], None] | None) -> None:
    for line in out:
        tail.append(line.rstrip("\n"))
        if on_line is not None:
            on_line(line.rstrip("\n"))
        with contextlib.suppress(OSError):
            sys.stderr.write(line)
            sys.stderr.flush()
