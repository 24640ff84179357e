"""The monitor process itself: open the plugin, sample on a fixed grid until SIGTERM/SIGINT, close it.

A monitor with an owner (the launcher of its round) stops once the owner has ended, and one with a deadline
stops at it, so that no monitor outlives its round even when nobody is left to stop it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from case_runners.core import files, pidfiles
from case_runners.core.errors import PerfplayError
from case_runners.core.processes import is_same, own_id
from case_runners.monitors.base import Monitor
from case_runners.monitors.loader import load_monitor
from case_runners.monitors.spec import MonitorSpec


class StopSignal:
    """SIGTERM/SIGINT are blocked and waited for, so a stop request can never cut a sample in half."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, self.SIGNALS)

    def wait(self, timeout_s: float) -> bool:
        """Sleep up to timeout_s seconds; True as soon as a stop signal is pending."""
        return signal.sigtimedwait(self.SIGNALS, max(timeout_s, 0.0)) is not None


class ReadyChannel:
    """Tells the starting parent (over an inherited pipe) whether the monitor came up."""

    def __init__(self, fd: int | None) -> None:
        self._fd = fd

    def send(self, line: str) -> None:
        if self._fd is not None:
            os.write(self._fd, (line + "\n").encode())

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def run_monitor(spec: MonitorSpec, ready_fd: int | None = None) -> int:
    """Run in the foreground (the daemon execs this); returns the process exit code."""
    try:
        return _run(spec, ready_fd)
    finally:
        remove_if_empty(spec.daemon_log_path)  # nothing to say (or no room to say it): no empty file left


def _run(spec: MonitorSpec, ready_fd: int | None) -> int:
    stop = StopSignal()  # first, so a stop sent during open() is not lost
    ready = ReadyChannel(ready_fd)
    me = own_id()
    try:
        files.secure_dir(spec.log_dir)
        pidfiles.write(spec.pid_path, me, spec.run_id, role="monitor", monitor=spec.name)
    except FileExistsError:
        return _fail(ready, f"{spec.label} already running: {spec.pid_path} exists")
    except PerfplayError as exc:  # an unsafe or unwritable log dir
        return _fail(ready, f"{spec.label}: {exc}")
    monitor: Monitor | None = None
    try:
        monitor = load_monitor(spec.name, spec.vendor)
        monitor.open()
    except Exception as exc:  # noqa: BLE001 - any plugin failure is reported to the starter
        _close_quietly(monitor)
        pidfiles.remove(spec.pid_path, me)
        return _fail(ready, f"{spec.label} could not open: {type(exc).__name__}: {exc}")
    fd = None
    try:
        try:
            _write_sys_info(spec, monitor)
            fd = files.open_fd(spec.samples_path, append=True)
        except PerfplayError as exc:
            return _fail(ready, f"{spec.label}: {exc}")
        ready.send("ok")
        ready.close()
        _, why = sample_loop(monitor, fd, spec.interval, stop, lambda: _why_stop(spec), str(spec.samples_path))
        if why:
            _say(f"{spec.label}: {why}")
    finally:
        if fd is not None:
            os.close(fd)
        _close_quietly(monitor)
        pidfiles.remove(spec.pid_path, me)
    return 0


def _why_stop(spec: MonitorSpec) -> str | None:
    """Why the monitor must stop although nobody told it to: its owner has ended, or its deadline passed."""
    if spec.owner is not None and not is_same(spec.owner):
        return f"stopped: its owner (pid {spec.owner.pid}) has ended"
    if spec.deadline is not None and time.time() >= spec.deadline:
        return "stopped: its deadline has passed"
    return None


def sample_loop(monitor: Monitor, fd: int, interval: float, stop: StopSignal,
                why_stop: Callable[[], str | None] = lambda: None, where: str = "the samples file"
                ) -> tuple[int, str | None]:
    """Append one JSON line to fd (`where`) per tick at open + k * interval (no drift) until a stop signal,
    why_stop() says why, or a write fails. (lines written, the reason it stopped on its own or None)."""
    lines = 0
    due = time.monotonic() + interval
    while not stop.wait(due - time.monotonic()):
        why = why_stop()
        if why:
            return lines, why
        try:
            os.write(fd, take_sample(monitor))  # one write per line: unbuffered, never interleaved
        except OSError as exc:
            return lines, f"stopped: {files.describe_os_error(exc, where)}"
        lines += 1
        due = next_due(due, interval, time.monotonic())
    return lines, None


def take_sample(monitor: Monitor) -> bytes:
    """One JSON line; a failing sample becomes {"ts", "error"} instead of disappearing."""
    ts = round(time.time(), 3)
    try:
        record: dict[str, Any] = {"ts": ts, **monitor.record()}
        line = json.dumps(record, separators=(",", ":"), allow_nan=False)
    except Exception as exc:  # noqa: BLE001 - recorded in the log, the loop goes on
        line = json.dumps({"ts": ts, "error": f"{type(exc).__name__}: {exc}"})
    return (line + "\n").encode()


def next_due(due: float, interval: float, now: float) -> float:
    """The next grid point after now; ticks missed by a slow sample are skipped, not bunched up."""
    due += interval
    if due <= now:
        due += (math.floor((now - due) / interval) + 1) * interval
    return due


def _write_sys_info(spec: MonitorSpec, monitor: Monitor) -> None:
    info: dict[str, Any] = {"schema": "perfplay.sys_info/1", "monitor": spec.name, "run_id": spec.run_id,
                            "interval_s": spec.interval, "started": round(time.time(), 3)}
    try:
        info.update(monitor.sys_info())
    except Exception as exc:  # noqa: BLE001 - missing facts must not stop the sampling
        info["error"] = f"{type(exc).__name__}: {exc}"
    files.atomic_write_json(spec.sys_info_path, info, default=str)


def remove_if_empty(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.lstat().st_size == 0:
            path.unlink()


def _say(message: str) -> None:
    """To the daemon's log, unless there is no room left to say it."""
    with contextlib.suppress(OSError):
        print(message, file=sys.stderr, flush=True)


def _fail(ready: ReadyChannel, message: str) -> int:
    _say(message)
    ready.send("error " + message.replace("\n", " "))
    ready.close()
    return 1


def _close_quietly(monitor: Monitor | None) -> None:
    if monitor is None:
        return
    try:
        monitor.close()
    except Exception as exc:  # noqa: BLE001 - closing is best effort at exit
        _say(f"closing {monitor.name} monitor failed: {exc}")
