"""library/case_plan.py: run vars validated with the plan's own errors, nothing created when rejected."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.common.warnings import get_warning_messages

RESOLVED = {
    "case": "digits_cnn", "case_id": "digits_cnn_CPUx1x1", "vendor": "cpu", "hardware": "CPU",
    "nnodes": 1, "nproc": 1, "repeat": 2, "timeout_s": 600,
    "vendor_info": {"device": "cpu", "monitor": "monitor.py"},
}
ARGS = {"project_dir": "/repo", "python": "/venv/bin/python", "cases": ["digits_cnn"], "hosts": ["localhost"]}


def plan_answer(requests, run_dir="/repo/results/run1", errors=(), cases=(RESOLVED,)):
    """A fake `plan` that records its request and answers like case_runners."""

    def answer(argv):
        with open(argv[argv.index("--request") + 1]) as handle:
            requests.append((json.load(handle), "--check" in argv))
        check = "--check" in argv
        doc = {"ok": not errors, "errors": list(errors), "run_id": None, "run_dir": None,
               "cases": [dict(case) for case in cases], "min_free_bytes": 1 << 30}
        if not errors and not check:
            doc.update(run_id="run1", run_dir=run_dir)
            for case in doc["cases"]:
                case["config_path"] = f"{run_dir}/{case['case_id']}/resolved_config.json"
        return (2 if errors else 0), json.dumps(doc), ""

    return answer


def test_missing_required_args(run_module):
    kind, result, cli = run_module("case_plan", {"project_dir": "/repo"})
    assert kind == "fail"
    assert "missing required arguments" in result["msg"]
    assert "hosts" in result["msg"]
    assert cli.calls == []


def test_plans_and_creates_the_run(run_module):
    requests = []
    kind, result, cli = run_module("case_plan", dict(ARGS, clear_caches="true", master_port="29600"),
                                   {"plan": plan_answer(requests)})
    assert kind == "exit"
    assert result["changed"] is True
    assert [check for _, check in requests] == [True, False], "validate first, then create"
    assert requests[0][0] == {"vendor": "cpu", "runtime": "host", "cases": ["digits_cnn"], "task": "training",
                              "bundle": True}
    assert cli.calls[0]["cwd"] == "/repo"
    assert cli.calls[0]["argv"][:4] == ["/venv/bin/python", "-m", "case_runners", "plan"]
    assert result["run_dir"] == "/repo/results/run1"
    assert result["run_vars"]["min_free_bytes"] == 1 << 30, "case_runners' checked value, for the host preflight"
    assert result["run_vars"]["clear_caches"] is True
    assert result["run_vars"]["master_port"] == 29600
    assert [(r["case_id"], r["round"], r["rel_dir"]) for r in result["rounds"]] == [
        ("digits_cnn_CPUx1x1", 1, "digits_cnn_CPUx1x1/round1"), ("digits_cnn_CPUx1x1", 2, "digits_cnn_CPUx1x1/round2")]
    first = result["rounds"][0]
    assert first["config"] == "/repo/results/run1/digits_cnn_CPUx1x1/resolved_config.json"
    assert first["hosts"] == ["localhost"]
    assert first["master_port"] == 0, "a single node picks a free port"


def test_request_carries_optional_run_vars(run_module):
    requests = []
    args = dict(ARGS, results_dir="/tmp/res", run_id="nightly", case_timeout="900", vendor="nvidia",
                task="inference")
    run_module("case_plan", args, {"plan": plan_answer(requests)})
    assert requests[0][0] == {"vendor": "nvidia", "runtime": "host", "cases": ["digits_cnn"], "task": "inference",
                              "results_dir": "/tmp/res", "run_id": "nightly", "timeout_s": "900",
                              "bundle": True}


def test_check_mode_validates_only(run_module):
    requests = []
    kind, result, _ = run_module("case_plan", ARGS, {"plan": plan_answer(requests)}, check_mode=True)
    assert kind == "exit"
    assert result["changed"] is False
    assert [check for _, check in requests] == [True]
    assert result["run_dir"] is None
    assert result["rounds"][0]["config"] is None


def test_every_error_is_listed_and_nothing_is_created(run_module):
    requests = []
    plan_errors = ["key 'perfplay_vendor': unknown vendor 'acme' (allowed: cpu, nvidia)"]
    args = dict(ARGS, clear_caches="maybe", master_port="abc", monitor_interval=0)
    kind, result, _ = run_module("case_plan", args, {"plan": plan_answer(requests, errors=plan_errors)})
    assert kind == "fail"
    assert [check for _, check in requests] == [True], "a rejected run never runs the creating plan"
    assert len(result["errors"]) == 4
    assert plan_errors[0] in result["msg"]
    assert ("run vars: key 'perfplay_clear_caches': expected a boolean, got 'maybe' (allowed: true, false)"
            in result["msg"])
    assert "key 'perfplay_master_port': expected an integer 0..65535, got 'abc'" in result["msg"]
    assert "key 'perfplay_monitor_interval': 0.0 is out of range" in result["msg"]


def test_run_var_errors_alone_also_stop_the_run(run_module):
    requests = []
    kind, result, _ = run_module("case_plan", dict(ARGS, clear_caches="yes"), {"plan": plan_answer(requests)})
    assert kind == "fail"
    assert [check for _, check in requests] == [True]
    assert result["errors"] == [
        "run vars: key 'perfplay_clear_caches': expected a boolean, got 'yes' (allowed: true, false)"]


def test_missing_cases_are_left_to_the_plan(run_module):
    requests = []
    args = {key: value for key, value in ARGS.items() if key != "cases"}
    plan_errors = ["key 'perfplay_cases': must be a list of cases, a case name, or FlagPerf's mapping"]
    kind, result, _ = run_module("case_plan", args, {"plan": plan_answer(requests, errors=plan_errors, cases=[])})
    assert kind == "fail"
    assert requests[0][0]["cases"] is None
    assert result["errors"] == plan_errors


def test_a_rejected_plan_never_expands_its_rounds(run_module):
    """case_runners bounds repeat (1..1000); rounds are built for an accepted plan only, whatever it answered."""
    calls = []

    def patch(module):
        module.expand_rounds = lambda *args: calls.append(args) or ([], [])

    plan_errors = ["run vars: key 'perfplay_cases[0].repeat': 1000000000 is out of range "
                   "(allowed: 1 <= repeat <= 1000)"]
    answer = plan_answer([], errors=plan_errors, cases=[dict(RESOLVED, repeat=10**9)])
    kind, result, _ = run_module("case_plan", ARGS, {"plan": answer}, patch=patch)
    assert kind == "fail" and plan_errors[0] in result["msg"]
    assert calls == []


@pytest.mark.parametrize("hosts, message", [
    ([], "key 'perfplay_host_pattern': matches no inventory host"),
    (["a"], "case multi_x2: key 'nnodes': needs 2 hosts, the run has 1 (a)"),
])
def test_host_errors(run_module, hosts, message):
    multi = dict(RESOLVED, case_id="multi_x2", nnodes=2)
    kind, result, _ = run_module("case_plan", dict(ARGS, hosts=hosts), {"plan": plan_answer([], cases=[multi])})
    assert kind == "fail"
    assert message in result["msg"]


@pytest.mark.parametrize("port", [29500, 0])
def test_multi_node_rounds_use_the_master_port(run_module, port):
    multi = dict(RESOLVED, case_id="multi_x2", nnodes=2, repeat=1, vendor_info={"monitor": None},
                 requirements=["vendor/acme/cases/multi/requirements.txt"])
    kind, result, _ = run_module("case_plan", dict(ARGS, hosts=["a", "b", "c"], master_port=port),
                                 {"plan": plan_answer([], cases=[multi])})
    assert kind == "exit"
    (only,) = result["rounds"]
    assert only["hosts"] == ["a", "b"]
    assert only["master_port"] == port
    needed = ["vendor/acme/cases/multi/requirements.txt"]  # installed into the venv of the hosts that run it
    assert result["host_needs"] == {
        "a": {"nproc": 1, "case_ids": ["multi_x2"], "master": True, "images": [], "requirements": needed},
        "b": {"nproc": 1, "case_ids": ["multi_x2"], "master": False, "images": [], "requirements": needed},
        "c": {"nproc": 0, "case_ids": [], "master": False, "images": [], "requirements": []}}


def test_cli_crash_without_json_fails_with_its_stderr(run_module):
    kind, result, _ = run_module("case_plan", ARGS, {"plan": (1, "", "Traceback: boom")})
    assert kind == "fail"
    assert "exited 1 without a JSON document" in result["msg"]
    assert result["stderr"] == "Traceback: boom"


def test_a_key_a_vendor_adds_to_an_inference_case_is_a_warning(run_module):
    """Inference overrides: a new key in <vendor>_configurations.yaml is a warning; a changed key only a note."""
    notes = ["warning: vendor/cpu/cases/digits_cnn/cpu_configurations.yaml: key 'probe' is not in "
             "case_runners/cases/digits_cnn/inference/configurations.yaml; added as 7",
             "info: vendor/cpu/cases/digits_cnn/cpu_configurations.yaml: key 'batch_size' changed from 64 to 32"]
    case = dict(RESOLVED, case_id="digits_cnn_inference_CPUx1x1", task="inference", notes=notes)
    kind, result, _ = run_module("case_plan", ARGS, {"plan": plan_answer([], cases=(case,))})
    assert kind == "exit"
    warnings = get_warning_messages()  # what exit_json adds to the result as "warnings"
    assert "digits_cnn_inference_CPUx1x1: " + notes[0][len("warning: "):] in warnings
    assert not any("batch_size" in w for w in warnings)
    assert result["cases"][0]["notes"] == notes


def test_the_free_space_run_var_goes_to_the_plan(run_module):
    requests = []
    kind, _, _ = run_module("case_plan", dict(ARGS, min_free_bytes="2048"), {"plan": plan_answer(requests)})
    assert kind == "exit"
    assert requests[0][0]["min_free_bytes"] == "2048", "case_runners checks and converts it"
