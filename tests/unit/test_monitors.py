"""Monitor daemons for real: start, status, stop in temporary dirs; nothing may be left running."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from case_runners.monitors import daemon, pidfile
from case_runners.monitors.cli import main
from case_runners.monitors.spec import MonitorSpec
from case_runners.paths import project_root

INTERVAL = 0.2
HOST_KEYS = {"ts", "cpu_util", "mem_used_bytes", "mem_total_bytes", "power_w"}
DEVICE_KEYS = {"index", "util", "mem_used_bytes", "mem_total_bytes", "power_w", "temp_c", "energy_j"}


def processes_with(run_id: str) -> list[int]:
    """Live processes whose argv carries this run id (what a cleanup would look for)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if run_id.encode() in argv and pidfile.is_alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def read_samples(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def new_spec(tmp_path: Path) -> Iterator[Callable[..., MonitorSpec]]:
    """Makes specs with unique run ids; stops every one of them and checks none survives."""
    made: list[MonitorSpec] = []

    def make(name: str = "host", run_id: str | None = None, log_dir: Path | None = None) -> MonitorSpec:
        spec = MonitorSpec(log_dir or tmp_path, name, run_id or f"t{uuid.uuid4().hex[:10]}", INTERVAL)
        made.append(spec)
        return spec

    yield make
    for spec in made:
        daemon.stop(spec, grace_s=2.0)
    for spec in made:
        assert processes_with(spec.run_id) == [], f"{spec.label} left running"


def test_start_status_stop_lifecycle(new_spec, capsys) -> None:
    spec = new_spec("host")
    assert daemon.start(spec) == 0
    assert spec.pid_path.name == f"host_monitor.{spec.run_id}.pid"
    pid = pidfile.read_pid(spec.pid_path)
    assert pid is not None and pidfile.is_alive(pid)
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert [b"--run-id", spec.run_id.encode()] == argv[argv.index(b"--run-id"):][:2]
    assert processes_with(spec.run_id) == [pid]
    assert daemon.status(spec) == 0
    assert json.loads(spec.sys_info_path.read_text())["run_id"] == spec.run_id

    time.sleep(6.4 * INTERVAL)
    assert daemon.stop(spec) == 0
    assert not spec.pid_path.exists()
    assert not pidfile.is_alive(pid)
    assert daemon.status(spec) == 3
    assert "stopped" in capsys.readouterr().out
    assert not spec.daemon_log_path.exists()  # empty: no traceback, so removed

    samples = read_samples(spec.samples_path)
    assert 5 <= len(samples) <= 7
    for sample in samples:
        assert set(sample) == HOST_KEYS
        assert sample["cpu_util"] is None or 0 <= sample["cpu_util"] <= 100
        assert 0 < sample["mem_used_bytes"] <= sample["mem_total_bytes"]
    gaps = [b["ts"] - a["ts"] for a, b in zip(samples, samples[1:])]
    assert statistics.median(gaps) == pytest.approx(INTERVAL, abs=0.05)
    drift = samples[-1]["ts"] - samples[0]["ts"] - (len(samples) - 1) * INTERVAL
    assert abs(drift) < 0.1  # ticks on a fixed grid: no accumulated lateness


def test_vendor_monitor_samples_devices(new_spec) -> None:
    spec = new_spec("cpu")
    assert daemon.start(spec) == 0
    assert wait_for(lambda: len(read_samples(spec.samples_path)) >= 2)
    assert daemon.stop(spec) == 0
    sample = read_samples(spec.samples_path)[0]
    assert set(sample) == {"ts", "devices"}
    assert set(sample["devices"][0]) == DEVICE_KEYS
    assert json.loads(spec.sys_info_path.read_text())["device"] == "cpu"


def test_two_run_ids_in_one_dir_do_not_collide(new_spec) -> None:
    first, second = new_spec("host"), new_spec("host")
    assert daemon.start(first) == 0
    assert daemon.start(second) == 0
    assert first.pid_path != second.pid_path
    pids = pidfile.read_pid(first.pid_path), pidfile.read_pid(second.pid_path)
    assert pids[0] != pids[1]

    assert daemon.stop(first) == 0
    assert not pidfile.is_alive(pids[0])
    assert daemon.status(second) == 0 and pidfile.is_alive(pids[1])
    assert daemon.stop(second) == 0


def test_start_twice_with_same_run_id_refuses(new_spec, capsys) -> None:
    spec = new_spec("host")
    assert daemon.start(spec) == 0
    pid = pidfile.read_pid(spec.pid_path)
    assert daemon.start(spec) == 1
    err = capsys.readouterr().err
    assert "already running" in err and str(pid) in err and spec.run_id in err
    assert pidfile.read_pid(spec.pid_path) == pid and pidfile.is_alive(pid)


def test_stop_when_not_running_is_ok(new_spec, capsys) -> None:
    spec = new_spec("host")
    assert daemon.stop(spec) == 0
    assert "not running" in capsys.readouterr().out

    spec.log_dir.mkdir(parents=True, exist_ok=True)
    spec.pid_path.write_text("999999999\n")  # stale: no such process
    assert daemon.status(spec) == 3
    assert daemon.stop(spec) == 0
    assert not spec.pid_path.exists()
    assert daemon.start(spec) == 0  # a stale pid file does not block a new start


def test_stop_escalates_to_sigkill(new_spec, capsys) -> None:
    spec = new_spec("host")
    spec.log_dir.mkdir(parents=True, exist_ok=True)
    stubborn = subprocess.Popen([sys.executable, "-c",
                                 "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                 "print('ready', flush=True); time.sleep(60)", "fake-monitor", spec.run_id],
                                stdout=subprocess.PIPE)
    try:
        assert stubborn.stdout.readline() == b"ready\n"
        spec.pid_path.write_text(f"{stubborn.pid}\n")
        assert daemon.stop(spec, grace_s=0.3) == 0  # its zombie counts as gone
        assert stubborn.wait(timeout=5) == -signal.SIGKILL
        assert "killed" in capsys.readouterr().out
        assert not spec.pid_path.exists()
    finally:
        stubborn.kill()
        stubborn.wait()


def test_sigterm_ends_the_daemon_cleanly(new_spec) -> None:
    spec = new_spec("host")
    assert daemon.start(spec) == 0
    pid = pidfile.read_pid(spec.pid_path)
    os.kill(pid, signal.SIGTERM)
    assert wait_for(lambda: not pidfile.is_alive(pid))
    assert not spec.pid_path.exists()  # removed by the daemon itself on its way out
    assert spec.daemon_log_path.read_text() == ""  # no traceback


def test_start_of_unusable_monitor_fails_with_its_reason(new_spec, capsys) -> None:
    spec = new_spec("nosuchvendor")
    assert daemon.start(spec) == 1
    assert "no monitor plugin for vendor 'nosuchvendor'" in capsys.readouterr().err
    assert not spec.pid_path.exists()
    assert processes_with(spec.run_id) == []


def test_cli_main_arguments(new_spec, capsys) -> None:
    spec = new_spec("host")
    args = ["-l", str(spec.log_dir), "--name", "host", "--run-id", spec.run_id, "--interval", str(INTERVAL)]
    assert main(["-o", "status", *args]) == 3
    assert main(["-o", "start", *args]) == 0
    assert main(["-o", "restart", *args]) == 0
    assert main(["-o", "status", *args]) == 0
    assert main(["-o", "stop", *args]) == 0
    assert main(["-o", "status", "--name", "../etc", "--run-id", "x"]) == 2
    assert main(["-o", "status", "--name", "host", "--interval", "0"]) == 2
    assert "must match" in capsys.readouterr().err


def test_standalone_vendor_script(new_spec) -> None:
    spec = new_spec("cpu")
    script = project_root() / "vendor" / "cpu" / "monitor.py"
    args = ["-l", str(spec.log_dir), "--run-id", spec.run_id, "--interval", str(INTERVAL)]

    def run(operation: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(script), "-o", operation, *args], cwd="/",
                              capture_output=True, text=True, timeout=30)

    assert run("start").returncode == 0
    assert run("status").returncode == 0
    assert wait_for(lambda: spec.samples_path.exists())
    stopped = run("stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert run("status").returncode == 3


def test_ensure_started_and_stopped_act_only_where_the_state_differs(tmp_path):
    import json
    import subprocess
    import sys

    def ensure(op, *extra):
        out = subprocess.run([sys.executable, "-m", "case_runners", "monitor", "-o", op, "-l", str(tmp_path),
                              "--name", "host", "--name", "cpu", "--run-id", "ens1", "--interval", "0.2", *extra],
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)["changed"]

    try:
        assert ensure("ensure-started", "--check") == ["host", "cpu"]
        assert not list(tmp_path.glob("*.pid"))
        assert ensure("ensure-started") == ["host", "cpu"]
        assert ensure("ensure-started") == []
        assert len(list(tmp_path.glob("*_monitor.ens1.pid"))) == 2
    finally:
        stopped = ensure("ensure-stopped")
    assert stopped == ["cpu", "host"]
    assert ensure("ensure-stopped") == [] and not list(tmp_path.glob("*.pid"))


def test_stop_all_stops_only_the_run_s_monitors_in_the_dir(new_spec, capsys) -> None:
    host = new_spec("host")
    other_run = new_spec("host")
    assert daemon.start(host) == 0 and daemon.start(other_run) == 0
    pids = pidfile.read_pid(host.pid_path), pidfile.read_pid(other_run.pid_path)
    capsys.readouterr()
    assert daemon.stop_all(host.log_dir, host.run_id) == ["host"]
    assert capsys.readouterr().out == "", "stdout belongs to the launcher's JSON document"
    assert not pidfile.is_alive(pids[0])
    assert pidfile.is_alive(pids[1])
    assert daemon.stop_all(host.log_dir, host.run_id) == []
    assert daemon.stop(other_run) == 0
