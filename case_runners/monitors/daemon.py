"""Process control for a monitor daemon: start (double fork + exec), stop, restart, status.

start returns only once the daemon has opened its plugin and written its pid file, so a monitor that
cannot work on this node (no NVML, unknown vendor) fails the start with its reason instead of dying
unseen. The daemon execs a fresh interpreter whose argv carries --name and --run-id, so a cleanup can
find it with `pgrep -f -- "--run-id <ID>"`.
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import signal
import sys
import time
import traceback
from pathlib import Path

from case_runners.monitors import pidfile
from case_runners.monitors.spec import MonitorSpec
from case_runners.paths import project_root

EXIT_OK, EXIT_FAILED, EXIT_NOT_RUNNING = 0, 1, 3  # status codes follow LSB init scripts


def start(spec: MonitorSpec, ready_timeout_s: float = 30.0) -> int:
    spec.log_dir.mkdir(parents=True, exist_ok=True)
    pid = running_pid(spec)
    if pid is not None:
        print(f"{spec.label} is already running (pid {pid}, pid file {spec.pid_path}); "
              "stop it first or use another --run-id", file=sys.stderr)
        return EXIT_FAILED
    spec.pid_path.unlink(missing_ok=True)  # stale: its process is gone
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:  # first child: never returns
        try:
            os.close(read_fd)
            _daemonize_and_exec(spec, write_fd)
        except BaseException:  # noqa: BLE001 - report, then leave without running the caller's cleanup
            traceback.print_exc()
        finally:
            os._exit(EXIT_FAILED)
    os.close(write_fd)
    os.waitpid(child, 0)  # the first child exits at once; the daemon is re-parented to init
    return _await_ready(spec, read_fd, ready_timeout_s)


def stop(spec: MonitorSpec, grace_s: float = 5.0) -> int:
    """SIGTERM, up to grace_s for a clean exit, then SIGKILL. Not running is a success."""
    pid = running_pid(spec)
    if pid is None:
        stale = spec.pid_path.exists()
        spec.pid_path.unlink(missing_ok=True)
        print(f"{spec.label} is not running" + (" (removed a stale pid file)" if stale else ""))
        return EXIT_OK
    how = "stopped"
    try:
        os.kill(pid, signal.SIGTERM)
    except PermissionError:
        print(f"{spec.label} (pid {pid}) belongs to another user; not permitted to stop it", file=sys.stderr)
        return EXIT_FAILED
    except ProcessLookupError:
        pass
    if not _wait_gone(pid, grace_s):
        _signal(pid, signal.SIGKILL)
        how = f"killed (no exit within {grace_s:g} s of SIGTERM)"
        if not _wait_gone(pid, 2.0):
            print(f"{spec.label} (pid {pid}) survived SIGKILL", file=sys.stderr)
            return EXIT_FAILED
    spec.pid_path.unlink(missing_ok=True)
    _remove_if_empty(spec.daemon_log_path)
    print(f"{spec.label} {how} (pid {pid})")
    return EXIT_OK


def restart(spec: MonitorSpec) -> int:
    code = stop(spec)
    return code if code != EXIT_OK else start(spec)


def status(spec: MonitorSpec) -> int:
    pid = running_pid(spec)
    if pid is None:
        print(f"{spec.label}: stopped")
        return EXIT_NOT_RUNNING
    print(f"{spec.label}: running (pid {pid}), samples in {spec.samples_path}")
    return EXIT_OK


def running_pid(spec: MonitorSpec) -> int | None:
    """The pid named by this run's pid file if that process is a live monitor, else None."""
    pid = pidfile.read_pid(spec.pid_path)
    return pid if pid is not None and pidfile.is_monitor_process(pid) else None


def daemon_argv(spec: MonitorSpec, ready_fd: int) -> list[str]:
    argv = [sys.executable, "-m", "case_runners.monitors.cli", "-o", "run", "-l", str(spec.log_dir),
            "--name", spec.name, "--run-id", spec.run_id, "--interval", repr(spec.interval),
            "--ready-fd", str(ready_fd)]
    return argv + (["--vendor", spec.vendor] if spec.vendor else [])


def _daemonize_and_exec(spec: MonitorSpec, ready_fd: int) -> None:
    os.setsid()  # leave the caller's session: no controlling terminal, no SIGHUP from it
    if os.fork() > 0:
        os._exit(EXIT_OK)
    os.chdir("/")
    os.umask(0o022)
    null = os.open(os.devnull, os.O_RDONLY)
    log = os.open(spec.daemon_log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.set_inheritable(ready_fd, True)
    os.write(ready_fd, f"pid {os.getpid()}\n".encode())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(project_root()), env.get("PYTHONPATH")) if p)
    os.execve(sys.executable, daemon_argv(spec, ready_fd), env)


def _await_ready(spec: MonitorSpec, read_fd: int, timeout_s: float) -> int:
    """Read the daemon's "pid N" then "ok" / "error <why>" lines; EOF without "ok" means it died."""
    deadline = time.monotonic() + timeout_s
    buffer, pid = b"", None
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([read_fd], [], [], remaining)[0]:
                if pid is not None:
                    _signal(pid, signal.SIGKILL)
                    pidfile.remove_if_owned(spec.pid_path, pid)
                print(f"{spec.label} did not come up within {timeout_s:g} s; see {spec.daemon_log_path}",
                      file=sys.stderr)
                return EXIT_FAILED
            chunk = os.read(read_fd, 4096)
            *lines, buffer = (buffer + chunk).split(b"\n")
            for line in (raw.decode(errors="replace") for raw in lines):
                if line.startswith("pid "):
                    pid = int(line[4:])
                elif line == "ok":
                    print(f"{spec.label} started (pid {pid}), samples in {spec.samples_path}")
                    return EXIT_OK
                elif line.startswith("error "):
                    print(line[6:], file=sys.stderr)
                    if pid is not None and not _wait_gone(pid, 5.0):  # it exits right after saying why
                        _signal(pid, signal.SIGKILL)
                    return EXIT_FAILED
            if not chunk:
                print(f"{spec.label} exited during start; see {spec.daemon_log_path}", file=sys.stderr)
                return EXIT_FAILED
    finally:
        os.close(read_fd)


def _wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while pidfile.is_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _remove_if_empty(path: Path) -> None:
    try:
        if path.stat().st_size == 0:
            path.unlink()
    except FileNotFoundError:
        pass


def stop_all(log_dir: Path, run_id: str) -> list[str]:
    """Stop every monitor of run_id whose pid file is in log_dir; the names stopped.

    For a node that lost the others: nobody may be able to reach it to stop its monitors.
    """
    stopped = []
    for path in sorted(Path(log_dir).glob(f"*_monitor.{run_id}.pid")):
        spec = MonitorSpec(Path(log_dir), path.name.split("_monitor.", 1)[0], run_id)
        if running_pid(spec) is not None:
            with contextlib.redirect_stdout(io.StringIO()):  # stdout is the caller's JSON document
                stop(spec)
            stopped.append(spec.name)
    return stopped
