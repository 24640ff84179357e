"""Monitor daemons for real: start, status, stop, owner and deadline in temporary dirs; pid files that name
someone else, symlinks planted in the log dir and log dirs of other users; nothing may be left running."""

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

from case_runners.core import pidfiles
from case_runners.core.paths import project_root
from case_runners.core.processes import ProcessId, identify, is_same, read_environ
from case_runners.core.run_ids import RUN_ID_ENV
from case_runners.monitors import daemon
from case_runners.monitors.cli import main
from case_runners.monitors.spec import MonitorSpec
from process_helpers import REAPED_S, require_root, run_pids, wait_for

INTERVAL = 0.2
HOST_KEYS = {"ts", "cpu_util", "run_cpu_util", "mem_used_bytes", "mem_total_bytes", "power_w"}
DEVICE_KEYS = {"index", "util", "mem_used_bytes", "mem_total_bytes", "power_w", "temp_c", "energy_j"}
def read_samples(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def pid_of(spec: MonitorSpec) -> ProcessId:
    doc = pidfiles.read(spec.pid_path)
    assert doc is not None, f"no pid file {spec.pid_path}"
    return doc["id"]


@pytest.fixture
def new_spec(tmp_path: Path) -> Iterator[Callable[..., MonitorSpec]]:
    """Makes specs with unique run ids; stops every one of them and checks none survives."""
    made: list[MonitorSpec] = []

    def make(name: str = "host", run_id: str | None = None, log_dir: Path | None = None, **extra) -> MonitorSpec:
        spec = MonitorSpec(log_dir or tmp_path / "logs", name, run_id or f"test-{uuid.uuid4().hex[:10]}", INTERVAL,
                           **extra)
        made.append(spec)
        return spec

    yield make
    for spec in made:
        daemon.stop(spec, grace_s=2.0)
    for spec in made:
        assert run_pids(spec.run_id) == [], f"{spec.label} left running"


def test_start_status_stop_lifecycle(new_spec, capsys) -> None:
    spec = new_spec("host")
    assert daemon.start(spec) == 0
    assert spec.pid_path.name == f"host_monitor.{spec.run_id}.pid"
    doc = pidfiles.read(spec.pid_path)
    ident = doc["id"]
    assert doc["run_id"] == spec.run_id and ident.start > 0 and is_same(ident)
    assert read_environ(ident.pid)[RUN_ID_ENV] == spec.run_id, "the run id is in the daemon's environment"
    assert run_pids(spec.run_id) == [ident.pid]
    assert daemon.status(spec) == 0
    assert json.loads(spec.sys_info_path.read_text())["run_id"] == spec.run_id

    assert wait_for(lambda: len(read_samples(spec.samples_path)) >= 5)
    assert daemon.stop(spec) == 0
    assert not spec.pid_path.exists()
    assert not is_same(ident)
    assert daemon.status(spec) == 3
    assert "stopped" in capsys.readouterr().out
    assert not spec.daemon_log_path.exists()  # empty: no traceback, so removed

    samples = read_samples(spec.samples_path)
    for sample in samples:
        assert set(sample) == HOST_KEYS
        assert sample["cpu_util"] is None or 0 <= sample["cpu_util"] <= 100
        assert sample["run_cpu_util"] is None or 0 <= sample["run_cpu_util"] <= 100  # the daemon has its run id
        assert 0 < sample["mem_used_bytes"] <= sample["mem_total_bytes"]
    gaps = [b["ts"] - a["ts"] for a, b in zip(samples, samples[1:])]
    assert all(gap > 0 for gap in gaps)
    # On the grid: a busy machine may skip a tick (a gap of 2 intervals), never bunch ticks up.
    assert statistics.median(gaps) >= INTERVAL * 0.75


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
    idents = pid_of(first), pid_of(second)
    assert idents[0].pid != idents[1].pid

    assert daemon.stop(first) == 0
    assert not is_same(idents[0])
    assert daemon.status(second) == 0 and is_same(idents[1])
    assert daemon.stop(second) == 0


def test_start_twice_with_same_run_id_refuses(new_spec, capsys) -> None:
    spec = new_spec("host")
    assert daemon.start(spec) == 0
    ident = pid_of(spec)
    assert daemon.start(spec) == 1
    err = capsys.readouterr().err
    assert "already running" in err and str(ident.pid) in err and spec.run_id in err
    assert pid_of(spec) == ident and is_same(ident)


def test_a_stale_pid_file_neither_blocks_nor_is_signalled(new_spec, capsys) -> None:
    spec = new_spec("host")
    assert daemon.stop(spec) == 0
    assert "not running" in capsys.readouterr().out

    spec.log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    pidfiles.write(spec.pid_path, ProcessId(999999999, 1), spec.run_id)  # no such process
    assert daemon.status(spec) == 3
    assert daemon.stop(spec) == 0
    assert not spec.pid_path.exists()
    assert daemon.start(spec) == 0  # a stale pid file does not block a new start


@pytest.mark.parametrize("decoy", ["reused pid", "another run", "no run id"])
def test_a_pid_file_naming_another_process_never_gets_it_killed(new_spec, sleepers, capsys, decoy) -> None:
    """The stale-pid check once looked for "monitor" in argv and killed another run's monitor whose pid had been
    reused. Now pid, start time and the run id in the environment must all match."""
    spec = new_spec("host")
    spec.log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = {} if decoy == "no run id" else {RUN_ID_ENV: spec.run_id if decoy == "reused pid" else "other-run-id"}
    victim = sleepers("-m", "case_runners.monitors.cli", "--name", "host", "--run-id", spec.run_id, env=env)
    ident = identify(victim.pid)
    # "reused pid": the pid file's process started at another time; the others: the right start time.
    recorded = ProcessId(ident.pid, ident.start - 1, ident.pidns) if decoy == "reused pid" else ident
    pidfiles.write(spec.pid_path, recorded, spec.run_id)
    assert daemon.status(spec) == 3
    assert daemon.stop(spec) == 0
    assert "removed a stale pid file" in capsys.readouterr().out
    time.sleep(0.2)
    assert victim.poll() is None, "a process that is not the run's monitor was signalled"


def test_stop_escalates_to_sigkill(new_spec, sleepers, capsys) -> None:
    spec = new_spec("host")
    spec.log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    stubborn = sleepers(code="signal.signal(signal.SIGTERM, signal.SIG_IGN)", env={RUN_ID_ENV: spec.run_id})
    pidfiles.write(spec.pid_path, identify(stubborn.pid), spec.run_id)
    assert daemon.stop(spec, grace_s=0.3) == 0  # its zombie counts as gone
    assert stubborn.wait(timeout=30) == -signal.SIGKILL
    assert "killed" in capsys.readouterr().out
    assert not spec.pid_path.exists()


def test_sigterm_ends_the_daemon_cleanly(new_spec) -> None:
    spec = new_spec("host")
    assert daemon.start(spec) == 0
    ident = pid_of(spec)
    os.kill(ident.pid, signal.SIGTERM)
    assert wait_for(lambda: not is_same(ident))
    assert not spec.pid_path.exists()  # removed by the daemon itself on its way out
    assert not spec.daemon_log_path.exists()  # no traceback: the empty log is removed too


def test_a_monitor_stops_when_its_owner_has_ended(new_spec, sleepers) -> None:
    owner = sleepers()
    spec = new_spec("host", owner=identify(owner.pid))
    assert daemon.start(spec) == 0
    ident = pid_of(spec)
    owner.kill()
    owner.wait(timeout=REAPED_S)
    assert wait_for(lambda: not is_same(ident)), "the monitor outlived its owner"
    assert not spec.pid_path.exists()
    assert "its owner" in spec.daemon_log_path.read_text()


def test_a_monitor_stops_at_its_deadline(new_spec) -> None:
    spec = new_spec("host", deadline=time.time() + 1.0)
    assert daemon.start(spec) == 0
    ident = pid_of(spec)
    assert wait_for(lambda: not is_same(ident)), "the monitor outlived its deadline"
    assert "deadline" in spec.daemon_log_path.read_text()


@pytest.mark.parametrize("planted", ["samples", "daemon log", "sys_info", "pid file"])
def test_a_symlink_planted_in_the_log_dir_is_never_followed(new_spec, tmp_path, capsys, planted) -> None:
    """A root monitor once appended to one root-only file and overwrote another through symlinks in its log dir."""
    spec = new_spec("host")
    spec.log_dir.mkdir(mode=0o700, parents=True)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = {"samples": spec.samples_path, "daemon log": spec.daemon_log_path, "sys_info": spec.sys_info_path,
              "pid file": spec.pid_path}[planted]
    target.symlink_to(victim)
    code = daemon.start(spec)
    daemon.stop(spec)
    assert victim.read_text() == "precious\n"
    if planted in ("sys_info", "pid file"):  # a stale pid file is removed; sys_info is written by rename
        assert code == 0 and not target.is_symlink()
    else:
        assert code == 1
        assert planted == "daemon log" or "symlink" in capsys.readouterr().err


def test_a_log_dir_writable_by_others_is_refused(new_spec, tmp_path, capsys) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    spec = new_spec("host", log_dir=shared)
    assert main(["-o", "start", "-l", str(shared), "--name", "host", "--run-id", spec.run_id]) == 1
    err = capsys.readouterr().err
    assert "writable by group or others" in err and str(shared) in err
    assert list(shared.iterdir()) == []


def test_a_log_dir_of_another_user_is_refused(new_spec, tmp_path, capsys) -> None:
    require_root("making a directory another user owns")
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 65534, 65534)
    spec = new_spec("host", log_dir=theirs)
    assert daemon.start(spec) == 1
    assert "belongs to uid 65534, not to the user running perfplay" in capsys.readouterr().err
    assert list(theirs.iterdir()) == []


def test_start_of_unusable_monitor_fails_with_its_reason(new_spec, capsys) -> None:
    spec = new_spec("nosuchvendor")
    assert daemon.start(spec) == 1
    assert "no monitor plugin for vendor 'nosuchvendor'" in capsys.readouterr().err
    assert not spec.pid_path.exists()
    assert run_pids(spec.run_id) == []


def test_cli_main_arguments(new_spec, capsys) -> None:
    spec = new_spec("host")
    args = ["-l", str(spec.log_dir), "--name", "host", "--run-id", spec.run_id, "--interval", str(INTERVAL)]
    assert main(["-o", "status", *args]) == 3
    assert main(["-o", "start", *args]) == 0
    assert main(["-o", "restart", *args]) == 0
    assert main(["-o", "status", *args]) == 0
    assert main(["-o", "stop", *args]) == 0
    assert main(["-o", "status", "--name", "../etc"]) == 2
    assert "must match" in capsys.readouterr().err
    for bad in ("0", "run", "x" * 65, "-leading-dash"):
        assert main(["-o", "status", "--name", "host", f"--run-id={bad}"]) == 2
        assert "is not a run id" in capsys.readouterr().err
    assert main(["-o", "status", "--name", "host", "--interval", "0"]) == 2


def test_standalone_vendor_script(new_spec) -> None:
    spec = new_spec("cpu")
    script = project_root() / "vendor" / "cpu" / "monitor.py"
    args = ["-l", str(spec.log_dir), "--run-id", spec.run_id, "--interval", str(INTERVAL)]

    env = dict(os.environ, PYTHONPATH=str(project_root()))  # case_runners importable, as make's editable install does

    def run(operation: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(script), "-o", operation, *args], cwd="/", env=env,
                              capture_output=True, text=True, timeout=60)

    assert run("start").returncode == 0
    assert run("status").returncode == 0
    assert wait_for(lambda: spec.samples_path.exists())
    stopped = run("stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert run("status").returncode == 3
