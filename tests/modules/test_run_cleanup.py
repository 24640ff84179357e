"""library/run_cleanup.py and module_utils/_perfplay_procs.py: find a run's processes, stop them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from module_utils import _perfplay_procs as procs

SLEEPER = "import signal, sys, time\n{}\nsys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(60)\n"


def fake_proc(root, pid, argv, ppid=1, env=()):
    entry = root / str(pid)
    entry.mkdir()
    (entry / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (entry / "environ").write_bytes(b"\0".join(e.encode() for e in env))
    (entry / "stat").write_bytes(f"{pid} (py thon) S {ppid} 1 1".encode())


def test_finds_by_argv_element_or_environment(tmp_path):
    fake_proc(tmp_path, 1, ["init"])
    fake_proc(tmp_path, 10, ["ansible-playbook", "run_case.yml", "-e", "perfplay_run_id=run1"])
    fake_proc(tmp_path, 11, ["python", "AnsiballZ_run_cleanup.py"], ppid=10)
    fake_proc(tmp_path, 20, ["python", "-m", "case_runners", "launch", "--run-id", "run1"])
    fake_proc(tmp_path, 21, ["python", "-m", "case_runners", "worker"], ppid=20, env=["PERFPLAY_RUN_ID=run1"])
    fake_proc(tmp_path, 22, ["python", "-m", "case_runners", "worker"], env=["PERFPLAY_RUN_ID=run10"])
    fake_proc(tmp_path, 23, ["python", "-m", "case_runners", "launch", "--run-id", "run10"])
    fake_proc(tmp_path, 30, ["python", "monitor", "--run-id", "run1"], ppid=11)  # a child of the caller: fair game
    (tmp_path / "self").mkdir()
    found = procs.find_run_processes("run1", proc_root=str(tmp_path), self_pid=11)
    assert [p["pid"] for p in found] == [20, 21, 30]


def test_ancestors_excluded(tmp_path):
    fake_proc(tmp_path, 1, ["init"])
    fake_proc(tmp_path, 5, ["sh", "--run-id", "run1"])
    fake_proc(tmp_path, 6, ["python", "--run-id", "run1"], ppid=5)
    assert procs.ancestors(6, str(tmp_path)) == {6, 5, 1}
    assert procs.find_run_processes("run1", proc_root=str(tmp_path), self_pid=6) == []


def _start(code, run_id):
    proc = subprocess.Popen([sys.executable, "-c", SLEEPER.format(code), "--run-id", run_id],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    return proc


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_terminate_then_kill_real_processes():
    run_id = f"pytest{os.getpid()}"
    polite = _start("", run_id)
    stubborn = _start("signal.signal(signal.SIGTERM, signal.SIG_IGN)", run_id)
    try:
        found = procs.find_run_processes(run_id)
        assert sorted(p["pid"] for p in found) == sorted([polite.pid, stubborn.pid])
        started = time.monotonic()
        terminated, killed = procs.terminate([p["pid"] for p in found], grace_period=0.5)
        assert terminated == [polite.pid]
        assert killed == [stubborn.pid]
        assert time.monotonic() - started < 5
        assert polite.wait(5) == -signal.SIGTERM
        assert stubborn.wait(5) == -signal.SIGKILL
        assert procs.find_run_processes(run_id) == []
    finally:
        for proc in (polite, stubborn):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_module_missing_run_id(run_module):
    kind, result, _ = run_module("run_cleanup", {})
    assert kind == "fail"
    assert "missing required arguments: run_id" in result["msg"]


@pytest.mark.parametrize("run_id", ["", "a b", "-x"])
def test_module_rejects_non_ids(run_module, run_id):
    kind, result, _ = run_module("run_cleanup", {"run_id": run_id})
    assert kind == "fail"
    assert "is not a run id" in result["msg"]


@pytest.mark.parametrize("check_mode, found, outcome, changed, signalled", [
    (False, [], ([], []), False, False),
    (False, [{"pid": 7, "argv": ["x"]}], ([7], []), True, True),
    (False, [{"pid": 7, "argv": ["x"]}], ([], [7]), True, True),
    (False, [{"pid": 7, "argv": ["x"]}], ([], []), False, True),  # gone before the signal
    (True, [{"pid": 7, "argv": ["x"]}], ([7], []), True, False),   # check mode lists only
])
def test_module_outcomes(run_module, check_mode, found, outcome, changed, signalled):
    calls = []

    def patch(module):
        module.find_run_processes = lambda run_id: found
        module.terminate = lambda pids, grace: calls.append((pids, grace)) or outcome

    kind, result, _ = run_module("run_cleanup", {"run_id": "run1", "grace_period": 2}, check_mode=check_mode,
                                 patch=patch)
    assert kind == "exit"
    assert result["changed"] is changed
    assert result["processes"] == found
    assert calls == ([([7], 2.0)] if signalled else [])
