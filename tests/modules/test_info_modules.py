"""The read-only modules: accel_info, case_data_info, run_summary_info never report a change."""

from __future__ import annotations

import json

import pytest

COMMON = {"project_dir": "/repo", "python": "/venv/bin/python"}
CONFIG = {"case": "digits_cnn", "case_id": "digits_cnn_CPUx1x1", "data_dir": "/data/digits", "params": {}}


@pytest.mark.parametrize("check_mode", [False, True])
def test_accel_info(run_module, check_mode):
    devices = {"vendor": "cpu", "kind": "cpu", "count": 2, "devices": [{"index": 0}, {"index": 1}]}
    kind, result, cli = run_module("accel_info", dict(COMMON, vendor="cpu"), {"devices": devices},
                                   check_mode=check_mode)
    assert kind == "exit"
    assert result["changed"] is False
    assert result["count"] == 2
    assert cli.calls[0]["argv"] == ["/venv/bin/python", "-m", "case_runners", "devices", "--vendor", "cpu"]


def test_accel_info_missing_vendor(run_module):
    kind, result, _ = run_module("accel_info", COMMON)
    assert kind == "fail"
    assert "missing required arguments: vendor" in result["msg"]


def test_accel_info_unknown_vendor(run_module):
    answer = (2, "", "error: key 'vendor': unknown vendor 'acme' (allowed: cpu, nvidia)\n")
    kind, result, _ = run_module("accel_info", dict(COMMON, vendor="acme"), {"devices": answer})
    assert kind == "fail"
    assert "unknown vendor 'acme'" in result["stderr"]


def test_case_data_info_passes_the_config_through_a_file(run_module):
    seen = []

    def answer(argv):
        with open(argv[argv.index("--config") + 1]) as handle:
            seen.append(json.load(handle))
        return 0, json.dumps({"ok": True, "errors": []}), ""

    kind, result, _ = run_module("case_data_info", dict(COMMON, config=CONFIG), {"check-data": answer})
    assert kind == "exit"
    assert result == dict(result, changed=False, ok=True, errors=[], case_id="digits_cnn_CPUx1x1")
    assert seen == [CONFIG]


@pytest.mark.parametrize("check_mode", [False, True])
def test_case_data_info_reports_problems_without_failing(run_module, check_mode):
    problems = {"ok": False, "errors": ["data_dir /data/digits: missing train.npz"]}
    kind, result, _ = run_module("case_data_info", dict(COMMON, config=CONFIG),
                                 {"check-data": (2, json.dumps(problems), "")}, check_mode=check_mode)
    assert kind == "exit"
    assert result["changed"] is False
    assert result["ok"] is False
    assert result["errors"] == problems["errors"]


def test_case_data_info_cli_crash(run_module):
    kind, result, _ = run_module("case_data_info", dict(COMMON, config=CONFIG), {"check-data": (1, "", "KeyError")})
    assert kind == "fail"
    assert result["stderr"] == "KeyError"


def test_case_data_info_config_must_be_a_mapping(run_module):
    kind, result, _ = run_module("case_data_info", dict(COMMON, config="not a dict"))
    assert kind == "fail"
    assert "config" in result["msg"]


@pytest.mark.parametrize("check_mode", [False, True])
def test_run_summary_info(run_module, check_mode):
    summary = {"schema": "perfplay.run_summary/1", "run_id": "run1", "ok": True, "cases": []}
    kind, result, cli = run_module("run_summary_info", dict(COMMON, run_dir="/res/run1"), {"summarize": summary},
                                   check_mode=check_mode)
    assert kind == "exit"
    assert result["changed"] is False
    assert result["summary"] == summary
    assert result["failed_rounds"] == []
    assert cli.calls[0]["argv"] == ["/venv/bin/python", "-m", "case_runners", "summarize", "/res/run1"]


def test_run_summary_info_failure(run_module):
    kind, result, _ = run_module("run_summary_info", dict(COMMON, run_dir="/res/run1"), {"summarize": (1, "", "x")})
    assert kind == "fail"
    assert result["rc"] == 1


def test_run_summary_info_passes_the_failed_rounds_through(run_module):
    summary = {"run_id": "run1", "cases": [], "failed_rounds": ["c round 3: timeout: no exit within 60 s"]}
    kind, result, _ = run_module("run_summary_info", dict(COMMON, run_dir="/res/run1"), {"summarize": summary})
    assert kind == "exit"
    assert result["failed_rounds"] == ["c round 3: timeout: no exit within 60 s"]
