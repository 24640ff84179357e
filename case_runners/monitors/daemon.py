"""Process control for a monitor daemon: start (double fork + exec), stop, restart, status.

start returns only once the daemon has opened its plugin and written its pid file, so a monitor that
cannot work on this node (no NVML, unknown vendor) fails the start with its reason instead of dying
unseen. The daemon carries its run id in its environment (PERFPLAY_RUN_ID) and its pid file records its
start time, so a stop or a cleanup never signals a process that merely reuses its pid. A daemon with an
owner (the launcher of its round) ends when the owner ends, and every daemon ends at its deadline if it has one.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
import traceback

from case_runners.core import files, pidfiles
from case_runners.core.errors import PerfplayError
from case_runners.core.paths import package_root
from case_runners.core.processes import ProcessId, identify, terminate, wait_gone
from case_runners.core.run_ids import RUN_ID_ENV
from case_runners.monitors.runner import remove_if_empty
from case_runners.monitors.spec import MonitorSpec

EXIT_OK, EXIT_FAILED, EXIT_NOT_RUNNING = 0, 1, 3  # status codes follow LSB init scripts
MONITOR_DAEMON_GRACE_S = 5.0  # stop: seconds between SIGTERM and SIGKILL to a monitor daemon


def start(spec: MonitorSpec, ready_timeout_s: float = 30.0) -> int:
    try:
        files.secure_dir(spec.log_dir)
    except PerfplayError as exc:  # not a directory this user may safely write in
        print(f"{spec.label}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    ident = running(spec)
    if ident is not None:
        print(f"{spec.label} is already running (pid {ident.pid}, pid file {spec.pid_path}); "
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


def stop(spec: MonitorSpec, grace_s: float = MONITOR_DAEMON_GRACE_S) -> int:
    """SIGTERM, up to grace_s for a clean exit, then SIGKILL. Not running is a success."""
    ident = running(spec)
    if ident is None:
        stale = os.path.lexists(spec.pid_path)
        spec.pid_path.unlink(missing_ok=True)
        print(f"{spec.label} is not running" + (" (removed a stale pid file)" if stale else ""))
        return EXIT_OK
    try:
        _, killed = terminate([ident], grace_s)
    except PermissionError:
        print(f"{spec.label} (pid {ident.pid}) belongs to another user; not permitted to stop it", file=sys.stderr)
        return EXIT_FAILED
    if wait_gone([ident], 2.0):
        print(f"{spec.label} (pid {ident.pid}) survived SIGKILL", file=sys.stderr)
        return EXIT_FAILED
    pidfiles.remove(spec.pid_path, ident)
    remove_if_empty(spec.daemon_log_path)
    how = f"killed (no exit within {grace_s:g} s of SIGTERM)" if killed else "stopped"
    print(f"{spec.label} {how} (pid {ident.pid})")
    return EXIT_OK


def restart(spec: MonitorSpec) -> int:
    code = stop(spec)
    return code if code != EXIT_OK else start(spec)


def status(spec: MonitorSpec) -> int:
    ident = running(spec)
    if ident is None:
        print(f"{spec.label}: stopped")
        return EXIT_NOT_RUNNING
    print(f"{spec.label}: running (pid {ident.pid}), samples in {spec.samples_path}")
    return EXIT_OK


def running(spec: MonitorSpec) -> ProcessId | None:
    """The process this run's pid file names, if it is a live process of the run; else None."""
    return pidfiles.live(spec.pid_path, spec.run_id)


def daemon_argv(spec: MonitorSpec, ready_fd: int) -> list[str]:
    argv = [sys.executable, "-m", "case_runners.monitors.cli", "-o", "run", "-l", str(spec.log_dir),
            "--name", spec.name, "--run-id", spec.run_id, "--interval", repr(spec.interval),
            "--ready-fd", str(ready_fd)]
    if spec.owner:
        argv += ["--owner", f"{spec.owner.pid}:{spec.owner.start}"]
    if spec.deadline:
        argv += ["--deadline", repr(spec.deadline)]
    return argv + (["--vendor", spec.vendor] if spec.vendor else [])


def _daemonize_and_exec(spec: MonitorSpec, ready_fd: int) -> None:
    os.setsid()  # leave the caller's session: no controlling terminal, no SIGHUP from it
    if os.fork() > 0:
        os._exit(EXIT_OK)
    os.chdir("/")
    os.umask(0o022)
    null = os.open(os.devnull, os.O_RDONLY)
    log = files.open_fd(spec.daemon_log_path, append=True)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.set_inheritable(ready_fd, True)
    os.write(ready_fd, f"pid {os.getpid()}\n".encode())
    env = dict(os.environ)
    env[RUN_ID_ENV] = spec.run_id
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(package_root()), env.get("PYTHONPATH")) if p)
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
                    _kill_starting(spec, pid)
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
                    if pid is not None:
                        _kill_starting(spec, pid, grace_s=5.0)  # it exits right after saying why
                    return EXIT_FAILED
            if not chunk:
                print(f"{spec.label} exited during start; see {spec.daemon_log_path}", file=sys.stderr)
                return EXIT_FAILED
    finally:
        os.close(read_fd)


def _kill_starting(spec: MonitorSpec, pid: int, grace_s: float = 0.0) -> None:
    """Stop a daemon that failed to come up: the pid it reported, if its pid file (or nothing) says so."""
    ident = identify(pid)
    if ident is None or wait_gone([ident], grace_s) == []:
        return
    doc = pidfiles.read(spec.pid_path)
    if doc is None or doc["id"] == ident:  # our own child, not yet registered, or registered as itself
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        pidfiles.remove(spec.pid_path, ident)
