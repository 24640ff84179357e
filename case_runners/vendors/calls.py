"""Calls into a vendor's code at the host preflight and on the controller (its runtime hook, its extern adapter),
each in a child process under a timeout: a hook that hangs (a device_count() stuck on a driver) fails the check
naming the file and the call instead of hanging the play. The child is forked in its own process group and killed with
everything it started when the time is up; what it returns comes back through a pipe.

The timeout: $PERFPLAY_VENDOR_CALL_TIMEOUT_S seconds where set, else VENDOR_CALL_TIMEOUT_S. Stdlib only.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from case_runners.core.errors import PerfplayError

VENDOR_CALL_TIMEOUT_S = 300.0  # importing a vendor's torch extension and opening its devices can take minutes
TIMEOUT_ENV = "PERFPLAY_VENDOR_CALL_TIMEOUT_S"


class VendorCallTimeout(PerfplayError):
    """A call into vendor code did not return within its timeout."""


def call_timeout() -> float:
    """The timeout of one bounded call: $PERFPLAY_VENDOR_CALL_TIMEOUT_S, else VENDOR_CALL_TIMEOUT_S."""
    text = os.environ.get(TIMEOUT_ENV, "")
    try:
        value = float(text) if text else VENDOR_CALL_TIMEOUT_S
    except ValueError:
        raise PerfplayError(f"${TIMEOUT_ENV}={text!r} is not a number of seconds") from None
    if not value > 0:
        raise PerfplayError(f"${TIMEOUT_ENV}={text!r} must be more than 0 seconds")
    return value


def bounded(call: Callable[[Callable[[str], None]], Any], what: str, timeout_s: float | None = None) -> Any:
    """call(note)'s value, call run in a forked child. note("<file>: <call>") says which vendor call the child is
    in, so that a hang names it: "<file>: <call> did not return within N s" (`what` until the first note). A
    PerfplayError the call raises is raised again here (its message); the child and its process group are gone
    when this returns."""
    timeout_s = call_timeout() if timeout_s is None else timeout_s
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        _child(call, write_fd)
    os.close(write_fd)
    try:
        os.setpgid(pid, pid)  # as the child does: its group exists whichever of the two runs first
    except OSError:
        pass  # the child set it, or has ended
    at, reply, data = what, None, b""
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_fd], [], [], left)[0]:
                break
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            data += chunk
            while b"\n" in data:
                line, data = data.split(b"\n", 1)
                kind, value = pickle.loads(bytes.fromhex(line.decode()))
                if kind == "at":
                    at = value
                else:
                    reply = (kind, value)
    finally:
        os.close(read_fd)
        _stop(pid)
    if reply is None:
        raise VendorCallTimeout(f"{at} did not return within {timeout_s:g} s: stopped (the timeout: ${TIMEOUT_ENV})")
    kind, value = reply
    if kind == "error":
        raise PerfplayError(value)
    return value


def _child(call: Callable[[Callable[[str], None]], Any], write_fd: int) -> None:
    os.setpgid(0, 0)  # its own process group: whatever the vendor's code starts is stopped with it

    def send(kind: str, value: Any) -> None:
        os.write(write_fd, pickle.dumps((kind, value)).hex().encode() + b"\n")

    code = 0
    try:
        send("result", call(lambda name: send("at", name)))
    except PerfplayError as exc:
        send("error", str(exc))
    except BaseException as exc:  # noqa: BLE001 - anything else the vendor's code raised, as text
        send("error", f"{type(exc).__name__}: {exc}")
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _stop(pid: int) -> None:
    """Kill the child's process group (it is its leader) and reap the child."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:  # no group left: the child, alone, has ended
        pass
    os.waitpid(pid, 0)
