"""library/monitor.py: one CLI call per task for all monitors; changed only on a real start or stop."""

from __future__ import annotations

import pytest

ARGS = {"project_dir": "/repo", "python": "/venv/bin/python", "names": ["host", "cpu"], "run_id": "run1",
        "log_dir": "/run/c/round1/localhost_noderank0"}
NODE = "/run/c/round1/localhost_noderank0"


def test_missing_args(run_module):
    kind, result, _ = run_module("monitor", {"project_dir": "/repo"})
    assert kind == "fail"
    assert "missing required arguments: log_dir, names, run_id" in result["msg"]


def test_bad_choice(run_module):
    kind, result, cli = run_module("monitor", dict(ARGS, state="paused"))
    assert kind == "fail" and "state" in result["msg"] and cli.calls == []


def test_start_runs_one_process_for_every_monitor(run_module):
    answers = {"monitor ensure-started": {"changed": ["host", "cpu"], "messages": ["host started", "cpu started"]}}
    kind, result, cli = run_module("monitor", dict(ARGS, interval=0.5), answers)
    assert kind == "exit" and result["changed"] is True and result["changed_names"] == ["host", "cpu"]
    assert result["msg"] == "host started\ncpu started"
    assert cli.calls[0]["argv"] == [
        "/venv/bin/python", "-m", "case_runners", "monitor", "--operation", "ensure-started", "--log-dir", NODE,
        "--name", "host", "--name", "cpu", "--run-id", "run1", "--interval", "0.5"]
    assert len(cli.calls) == 1


def test_already_in_the_wanted_state_is_no_change(run_module):
    answers = {"monitor ensure-stopped": {"changed": [], "messages": ["host: stopped", "cpu: stopped"]}}
    kind, result, cli = run_module("monitor", dict(ARGS, state="stopped"), answers)
    assert kind == "exit" and result["changed"] is False and result["running"] is False
    assert "--interval" not in cli.calls[0]["argv"]


@pytest.mark.parametrize("state", ["started", "stopped"])
def test_check_mode_asks_the_cli_to_predict_only(run_module, state):
    op = "ensure-started" if state == "started" else "ensure-stopped"
    answers = {f"monitor {op}": {"changed": ["cpu"], "messages": ["would act on cpu"]}}
    kind, result, cli = run_module("monitor", dict(ARGS, state=state), answers, check_mode=True)
    assert kind == "exit" and result["changed"] is True and cli.calls[0]["argv"][-1] == "--check"


def test_a_monitor_that_cannot_start_fails_with_its_reason(run_module):
    answers = {"monitor ensure-started": (1, '{"changed": ["cpu"], "messages": []}', "NVML: Driver Not Loaded\n")}
    kind, result, _ = run_module("monitor", ARGS, answers)
    assert kind == "fail" and "NVML: Driver Not Loaded" in result["msg"] and result["rc"] == 1


def test_bad_arguments_fail_with_the_cli_message(run_module):
    answers = {"monitor ensure-started": (2, "", "monitor: --run-id 'a b' must match\n")}
    kind, result, _ = run_module("monitor", ARGS, answers)
    assert kind == "fail" and "--run-id 'a b' must match" in result["msg"]
