"""case_plan (playbooks/action_plugins/case_plan.py, documented in library/case_plan.py): one `case_runners plan`
call carrying every run var, run on the controller without a module process; its answer returned, or its errors."""

from __future__ import annotations

import json
import subprocess

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from module_harness import FakeCli, load_action

RESOLVED = {
    "case": "digits_cnn", "case_id": "digits_cnn_CPUx1x1", "vendor": "cpu", "hardware": "CPU",
    "nnodes": 1, "nproc": 1, "repeat": 1, "timeout_s": 600,
    "vendor_info": {"device": "cpu", "monitor": "monitor.py"},
}
ARGS = {"project_dir": "/repo", "python": "/venv/bin/python", "cases": ["digits_cnn"], "hosts": ["localhost"]}
RUN_VARS = {"vendor": "cpu", "runtime": "host", "hosts": ["localhost"], "nic": {}}


def plan_answer(requests, errors=(), cases=(RESOLVED,)):
    """A fake `plan` that records its request and answers like case_runners."""

    def answer(argv):
        with open(argv[argv.index("--request") + 1]) as handle:
            requests.append((json.load(handle), "--check" in argv))
        check = "--check" in argv
        doc = {"ok": not errors, "errors": list(errors), "run_id": None, "run_dir": None, "bundle": None,
               "cases": [dict(case) for case in cases], "images": [], "rounds": [], "host_needs": {},
               "run_vars": RUN_VARS}
        if not errors:
            doc.update(rounds=[{"case_id": RESOLVED["case_id"], "round": 1}], host_needs={"localhost": {"nproc": 1}})
        if not errors and not check:
            doc.update(run_id="run1", run_dir="/repo/results/run1")
        return (2 if errors else 0), json.dumps(doc), ""

    return answer


def run_plan(args, answer=None, check_mode=False):
    """("exit"|"fail", result, fake_cli): the action's arguments validated as Ansible validates them, then its plan
    with `answer` standing in for case_runners."""
    plugin = load_action("case_plan")
    cli = FakeCli({"plan": answer} if answer else {})
    validated = ArgumentSpecValidator(plugin.ARGUMENT_SPEC).validate(args)
    if validated.error_messages:
        return "fail", {"failed": True, "msg": "; ".join(validated.error_messages)}, cli

    def run(argv, cwd=None, **kwargs):
        return subprocess.CompletedProcess(argv, *cli(argv, cwd=cwd))

    result = plugin.plan(validated.validated_parameters, check_mode, run)
    return ("fail" if result.get("failed") else "exit"), result, cli


def test_missing_required_args():
    kind, result, cli = run_plan({"project_dir": "/repo"})
    assert kind == "fail"
    assert "missing required arguments" in result["msg"]
    assert "hosts" in result["msg"]
    assert cli.calls == []


def test_plans_once_and_returns_the_plan():
    requests = []
    kind, result, cli = run_plan(dict(ARGS, clear_caches="true", master_port="29600"),
                                   plan_answer(requests))
    assert kind == "exit"
    assert result["changed"] is True
    assert [check for _, check in requests] == [False], "case_runners checks and creates in one call"
    assert requests[0][0] == {"cases": ["digits_cnn"], "hosts": ["localhost"], "clear_caches": "true",
                              "master_port": "29600", "bundle": True}, "as given: case_runners converts them"
    assert cli.calls[0]["cwd"] == "/repo"
    assert cli.calls[0]["argv"][:4] == ["/venv/bin/python", "-m", "case_runners", "plan"]
    assert result["run_dir"] == "/repo/results/run1"
    assert result["run_vars"] == RUN_VARS
    assert result["rounds"] == [{"case_id": "digits_cnn_CPUx1x1", "round": 1}]
    assert result["host_needs"] == {"localhost": {"nproc": 1}}


def test_the_request_carries_every_run_var_set():
    requests = []
    args = dict(ARGS, vendor="nvidia", runtime="docker", image={"base_image": "x"}, task="inference",
                results_dir="/tmp/res", run_id="nightly", case_timeout_s="900", nic={"localhost": "eth0"},
                run_var_names=["perfplay_vendor"], clear_caches=False, monitor_interval_s="0.5", progress_interval_s=5,
                rdzv_timeout_s="60", heartbeat_timeout_s=20, master_port=0, min_free_bytes="2048", bundle=False)
    kind, _, _ = run_plan(args, plan_answer(requests))
    assert kind == "exit"
    assert requests[0][0] == {key: value for key, value in args.items() if key not in ("project_dir", "python")}


def test_an_empty_string_is_unset():
    requests = []
    run_plan(dict(ARGS, image="", run_id="", vendor=""), plan_answer(requests))
    assert not {"image", "run_id", "vendor"} & set(requests[0][0])


def test_check_mode_validates_only():
    requests = []
    kind, result, _ = run_plan(ARGS, plan_answer(requests), check_mode=True)
    assert kind == "exit"
    assert result["changed"] is False
    assert [check for _, check in requests] == [True]
    assert result["run_dir"] is None


def test_every_error_is_listed():
    errors = ["run vars: key 'perfplay_vendor': unknown vendor 'acme' (allowed: cpu, nvidia)",
              "run vars: key 'perfplay_clear_caches': expected a boolean, got 'maybe' "
              "(allowed: true/false, yes/no, on/off, 1/0)"]
    kind, result, cli = run_plan(dict(ARGS, clear_caches="maybe"),
                                   plan_answer([], errors=errors))
    assert kind == "fail"
    assert len(cli.calls) == 1
    assert result["errors"] == errors
    assert result["msg"] == "perfplay: the run was rejected, 2 problem(s):\n- " + "\n- ".join(errors)
    assert result["rc"] == 2


def test_cli_crash_without_json_fails_with_its_stderr():
    kind, result, _ = run_plan(ARGS, (1, "", "Traceback: boom"))
    assert kind == "fail"
    assert "exited 1 without a JSON document" in result["msg"]
    assert result["stderr"] == "Traceback: boom"


def test_a_key_a_vendor_adds_to_an_inference_case_is_a_warning():
    """Inference overrides: a new key in <vendor>_configurations.yaml is a warning; a changed key only a note."""
    notes = ["warning: vendor/cpu/cases/digits_cnn/cpu_configurations.yaml: key 'probe' is not in "
             "case_runners/cases/digits_cnn/inference/configurations.yaml; added as 7",
             "info: vendor/cpu/cases/digits_cnn/cpu_configurations.yaml: key 'batch_size' changed from 64 to 32"]
    case = dict(RESOLVED, case_id="digits_cnn_inference_CPUx1x1", task="inference", notes=notes)
    kind, result, _ = run_plan(ARGS, plan_answer([], cases=(case,)))
    assert kind == "exit"
    warnings = result["warnings"]
    assert "digits_cnn_inference_CPUx1x1: " + notes[0][len("warning: "):] in warnings
    assert not any("batch_size" in w for w in warnings)
    assert result["cases"][0]["notes"] == notes
