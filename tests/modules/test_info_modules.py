"""The read-only modules: host_check_info and python_requirements_info never report a change."""

from __future__ import annotations

import json
import sys

import pytest

COMMON = {"project_dir": "/repo", "python": "/venv/bin/python"}
CONFIG = {"case": "digits_cnn", "case_id": "digits_cnn_CPUx1x1", "data_dir": "/data/digits", "params": {}}


HOST_CHECK = {"ok": True, "problems": [], "python": "3.11.2", "hostname": "node1", "data": [],
              "devices": {"count": 2, "source": "discovered"}, "master_port": 41234}


@pytest.mark.parametrize("check_mode", [False, True])
def test_host_check_info_passes_its_request_through_a_file(run_module, check_mode):
    seen = []

    def answer(argv):
        with open(argv[argv.index("--request") + 1]) as handle:
            seen.append(json.load(handle))
        return 0, json.dumps(HOST_CHECK), ""

    args = dict(COMMON, vendor="cpu", nproc=2, cases=[CONFIG], master_port=0, master_addr="10.0.0.1",
                results_dir="/opt/perfplay/results", min_free_bytes=1 << 30, nic="ib0")
    kind, result, cli = run_module("host_check_info", args, {"host-check": answer}, check_mode=check_mode)
    assert kind == "exit"
    assert result["changed"] is False
    assert result["ok"] is True
    assert result["master_port"] == 41234
    assert seen == [{"vendor": "cpu", "nproc": 2, "device_count": None, "cases": [CONFIG], "master_port": 0,
                     "master_addr": "10.0.0.1", "results_dir": "/opt/perfplay/results", "min_free_bytes": 1 << 30,
                     "nic": "ib0"}]
    assert cli.calls[0]["argv"][:4] == ["/venv/bin/python", "-m", "case_runners", "host-check"]


def test_host_check_info_reports_problems_without_failing(run_module):
    doc = dict(HOST_CHECK, ok=False, problems=["a round needs nproc=8 cpu devices, the host has 2 (discovered)"])
    kind, result, _ = run_module("host_check_info", dict(COMMON, vendor="cpu", nproc=8),
                                 {"host-check": (0, json.dumps(doc), "")})
    assert kind == "exit"
    assert result["ok"] is False
    assert result["problems"] == doc["problems"]


def test_host_check_info_unknown_vendor_fails_with_the_cli_message(run_module):
    answer = (2, "", "error: key 'vendor': unknown vendor 'acme' (allowed: cpu, nvidia)\n")
    kind, result, _ = run_module("host_check_info", dict(COMMON, vendor="acme"), {"host-check": answer})
    assert kind == "fail"
    assert "unknown vendor 'acme'" in result["stderr"]


def test_python_requirements_info_without_a_venv(run_module, tmp_path):
    args = dict(COMMON, python=str(tmp_path / "venv/bin/python"))
    kind, result, cli = run_module("python_requirements_info", args)
    assert kind == "exit"
    assert result["satisfied"] is False
    assert "does not exist" in result["missing"][0]
    assert cli.calls == []


@pytest.mark.parametrize("check_mode", [False, True])
def test_python_requirements_info_reports_what_is_missing(run_module, check_mode):
    doc = {"satisfied": False, "missing": ["torch==2.13.0"], "mismatched": [], "unpinned": []}
    args = dict(COMMON, python=sys.executable)
    kind, result, cli = run_module("python_requirements_info", args, {"requirements": doc}, check_mode=check_mode)
    assert kind == "exit"
    assert result == dict(result, changed=False, satisfied=False, missing=["torch==2.13.0"])
    assert cli.calls[0]["argv"] == [sys.executable, "-m", "case_runners", "requirements", "--requirements",
                                    "/repo/requirements.txt"]
