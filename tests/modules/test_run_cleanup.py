"""library/run_cleanup.py: a thin wrapper over `case_runners cleanup` (whose logic tests/unit/test_run_processes.py
covers): its arguments, the argv it runs, `changed` and check mode."""

from __future__ import annotations

import pytest

RUN = "run20250101120000-a1b2c3"


def test_module_missing_arguments(run_module):
    kind, result, _ = run_module("run_cleanup", {"project_dir": "/p"})
    assert kind == "fail"
    assert "missing required arguments: run_id" in result["msg"]


def test_module_rejects_a_negative_grace(run_module):
    kind, result, _ = run_module("run_cleanup", {"project_dir": "/p", "run_id": RUN, "dir": "/r", "grace_s": -1})
    assert kind == "fail" and "grace_s must be >= 0" in result["msg"]


def answer(**doc):
    base = {"containers": [], "engine": None, "processes": [], "terminated": [], "killed": [], "stale_pid_files": []}
    return {"cleanup": {**base, **doc}}


@pytest.mark.parametrize("check_mode, doc, changed", [
    (False, {}, False),
    (False, {"processes": [{"pid": 7}], "terminated": [7]}, True),
    (False, {"processes": [{"pid": 7}], "killed": [7]}, True),
    (False, {"processes": [{"pid": 7}]}, False),  # gone before the signal
    (False, {"stale_pid_files": ["/r/x.pid"]}, True),
    (True, {"processes": [{"pid": 7}]}, True),  # check mode: what it would stop
])
def test_module_outcomes(run_module, check_mode, doc, changed):
    kind, result, calls = run_module("run_cleanup", {"project_dir": "/p", "run_id": RUN, "dir": "/r/" + RUN,
                                                     "grace_s": 2, "containers": True, "round": "c/round1"},
                                     check_mode=check_mode, answers=answer(**doc))
    assert kind == "exit" and result["changed"] is changed
    (argv,) = [call["argv"] for call in calls.calls]
    assert argv[argv.index("--run-id") + 1] == RUN and argv[argv.index("--dir") + 1] == "/r/" + RUN
    assert argv[argv.index("--grace-s") + 1] == "2.0" and "--containers" in argv
    assert argv[argv.index("--round") + 1] == "c/round1"
    assert ("--check" in argv) is check_mode
