"""library/monitor.py: status first, act only on a real difference."""

from __future__ import annotations

import pytest

ARGS = {"project_dir": "/repo", "python": "/venv/bin/python", "name": "host", "run_id": "run1",
        "log_dir": "/run/c/round1/localhost_noderank0"}
RUNNING = (0, "host monitor (run run1): running (pid 42)\n", "")
STOPPED = (3, "host monitor (run run1): stopped\n", "")


def test_missing_args(run_module):
    kind, result, _ = run_module("monitor", {"project_dir": "/repo"})
    assert kind == "fail"
    assert "missing required arguments: log_dir, name, run_id" in result["msg"]


def test_bad_choice(run_module):
    kind, result, cli = run_module("monitor", dict(ARGS, state="paused"))
    assert kind == "fail"
    assert "value of state must be one of: started, stopped, got: paused" in result["msg"]
    assert cli.calls == []


def test_start_when_stopped(run_module):
    answers = {"monitor status": STOPPED, "monitor start": (0, "host monitor (run run1) started (pid 42)\n", "")}
    kind, result, cli = run_module("monitor", dict(ARGS, interval=0.5, vendor="cpu"), answers)
    assert kind == "exit"
    assert result["changed"] is True
    assert result["running"] is True
    assert result["msg"] == "host monitor (run run1) started (pid 42)"
    assert cli.keys() == ["monitor status", "monitor start"]
    assert cli.calls[1]["argv"] == [
        "/venv/bin/python", "-m", "case_runners", "monitor", "--operation", "start", "--log-dir",
        "/run/c/round1/localhost_noderank0", "--name", "host", "--run-id", "run1", "--interval", "0.5",
        "--vendor", "cpu"]
    assert "--interval" not in cli.calls[0]["argv"]


@pytest.mark.parametrize("state, status", [("started", RUNNING), ("stopped", STOPPED)])
def test_no_change_when_already_there(run_module, state, status):
    kind, result, cli = run_module("monitor", dict(ARGS, state=state), {"monitor status": status})
    assert kind == "exit"
    assert result["changed"] is False
    assert cli.keys() == ["monitor status"]


def test_stop_when_running(run_module):
    answers = {"monitor status": RUNNING, "monitor stop": (0, "host monitor (run run1) stopped (pid 42)\n", "")}
    kind, result, cli = run_module("monitor", dict(ARGS, state="stopped"), answers)
    assert kind == "exit"
    assert result["changed"] is True
    assert result["running"] is False
    assert cli.keys() == ["monitor status", "monitor stop"]


@pytest.mark.parametrize("state, status", [("started", STOPPED), ("stopped", RUNNING)])
def test_check_mode_predicts(run_module, state, status):
    kind, result, cli = run_module("monitor", dict(ARGS, state=state), {"monitor status": status}, check_mode=True)
    assert kind == "exit"
    assert result["changed"] is True
    assert cli.keys() == ["monitor status"]


def test_start_failure(run_module):
    answers = {"monitor status": STOPPED, "monitor start": (1, "", "NVML: Driver Not Loaded\n")}
    kind, result, _ = run_module("monitor", ARGS, answers)
    assert kind == "fail"
    assert "exited 1" in result["msg"]
    assert "NVML: Driver Not Loaded" in result["msg"]


def test_bad_arguments_from_the_cli(run_module):
    kind, result, _ = run_module("monitor", ARGS, {"monitor status": (2, "", "monitor: --run-id 'a b' must match\n")})
    assert kind == "fail"
    assert "must match" in result["msg"]
