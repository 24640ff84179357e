"""The monitor process itself: open the plugin, sample on a fixed grid until SIGTERM/SIGINT, close it."""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from case_runners.monitors import pidfile
from case_runners.monitors.base import Monitor
from case_runners.monitors.loader import load_monitor
from case_runners.monitors.spec import MonitorSpec


class StopSignal:
    """SIGTERM/SIGINT are blocked and waited for, so a stop request can never cut a sample in half."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, self.SIGNALS)

    def wait(self, timeout: float) -> bool:
        """Sleep up to timeout seconds; True as soon as a stop signal is pending."""
        return signal.sigtimedwait(self.SIGNALS, max(timeout, 0.0)) is not None


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
    stop = StopSignal()  # first, so a stop sent during open() is not lost
    ready = ReadyChannel(ready_fd)
    spec.log_dir.mkdir(parents=True, exist_ok=True)
    try:
        pidfile.create_exclusive(spec.pid_path, os.getpid())
    except FileExistsError:
        return _fail(ready, f"{spec.label} already running: {spec.pid_path} exists")
    monitor: Monitor | None = None
    try:
        monitor = load_monitor(spec.name, spec.vendor)
        monitor.open()
    except Exception as exc:  # noqa: BLE001 - any plugin failure is reported to the starter
        _close_quietly(monitor)
        pidfile.remove_if_owned(spec.pid_path, os.getpid())
        return _fail(ready, f"{spec.label} could not open: {type(exc).__name__}: {exc}")
    try:
        _write_sys_info(spec, monitor)
        ready.send("ok")
        ready.close()
        sample_loop(monitor, spec.samples_path, spec.interval, stop)
    finally:
        _close_quietly(monitor)
        pidfile.remove_if_owned(spec.pid_path, os.getpid())
    return 0


def sample_loop(monitor: Monitor, samples_path: Path, interval: float, stop: StopSignal) -> int:
    """Append one JSON line per tick at open + k * interval (no drift); returns the number of lines."""
    fd = os.open(samples_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    lines = 0
    try:
        due = time.monotonic() + interval
        while not stop.wait(due - time.monotonic()):
            os.write(fd, take_sample(monitor))  # one write per line: unbuffered, never interleaved
            lines += 1
            due = next_due(due, interval, time.monotonic())
    finally:
        os.close(fd)
    return lines


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
    tmp = spec.sys_info_path.with_name(spec.sys_info_path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(info, indent=2, default=str) + "\n")
    tmp.replace(spec.sys_info_path)


def _fail(ready: ReadyChannel, message: str) -> int:
    print(message, file=sys.stderr, flush=True)
    ready.send("error " + message.replace("\n", " "))
    ready.close()
    return 1


def _close_quietly(monitor: Monitor | None) -> None:
    if monitor is None:
        return
    try:
        monitor.close()
    except Exception as exc:  # noqa: BLE001 - closing is best effort at exit
        print(f"closing {monitor.name} monitor failed: {exc}", file=sys.stderr, flush=True)
