"""The read-only module host_check_info never reports a change; it answers the venv's pins first."""

from __future__ import annotations

import json

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
                     "nic": "ib0", "requirements": []}]
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


def test_host_check_info_passes_the_requirements_and_returns_the_unmet(run_module, tmp_path):
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.touch()
    problem = "requirements.txt: this Python lacks torch==2.13.0: install them with ..."
    answer = {"ok": False, "problems": [problem], "warnings": [], "unmet": ["requirements.txt"], "checked": False}
    seen = []

    def cli(argv):
        with open(argv[argv.index("--request") + 1]) as handle:
            seen.append(json.load(handle)["requirements"])
        return 0, json.dumps(answer), ""

    args = dict(COMMON, python=str(python), vendor="cpu", requirements=["requirements.txt", "vendor/x.txt"])
    kind, result, _ = run_module("host_check_info", args, {"host-check": cli})
    assert kind == "exit" and result["changed"] is False
    assert seen == [["requirements.txt", "vendor/x.txt"]]
    assert (result["ok"], result["unmet"], result["checked"], result["problems"]) == \
        (False, ["requirements.txt"], False, [problem])


def test_host_check_info_without_a_venv_has_every_requirement_unmet(run_module, tmp_path):
    args = dict(COMMON, python=str(tmp_path / "venv/bin/python"), vendor="cpu",
                requirements=["requirements.txt", "vendor/cpu/cases/digits_cnn/requirements.txt", "requirements.txt"])
    kind, result, cli = run_module("host_check_info", args)
    assert kind == "exit"
    assert result["ok"] is False and result["checked"] is False
    assert result["unmet"] == ["requirements.txt", "vendor/cpu/cases/digits_cnn/requirements.txt"]
    assert "does not exist" in result["problems"][0]
    assert cli.calls == []
