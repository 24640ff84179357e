"""round_record (playbooks/action_plugins/round_record.py, documented in library/round_record.py): the record, and
its compact digest for set_stats, as `case_runners record` gives them, run on the controller without a module
process (tests/unit/test_results.py tests the digest itself)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from module_harness import REPO, FakeRun, load_action

ARGS = {"project_dir": "/repo", "python": "/venv/bin/python", "round_dir": "/res/run1/c/round2",
        "config": "/res/run1/c/resolved_config.json", "round": 2, "run_id": "run1", "errors": []}
RECORD = {"schema": "perfplay.round_record/1", "case_id": "c", "round": 2, "status": "success", "reason": None,
          "metrics": {"p_whole": 10.0, "p_train": 11.0, "p_core": 12.0, "e2e_time": 5.0, "final_metric": 0.97,
                      "converged": True, "samples": 100}, "mfu": {"value": None}, "per_rank": []}
COMPACT = {"case_id": "c", "round": 2, "status": "success", "reason": None, "standard": True, "non_standard": [],
           "p_whole": 10.0, "p_train": 11.0, "p_core": 12.0, "e2e_time": 5.0, "final_metric": 0.97, "converged": True,
           "mfu": None, "errors": ["node2: unreachable"]}


def test_records_the_round():
    run = FakeRun({"record": RECORD, "compact": COMPACT})
    result = load_action("round_record").record(dict(ARGS, errors=["node2: unreachable"]), False, run)
    assert result == {"changed": True, "record": RECORD, "compact": COMPACT}
    assert run.calls[0]["argv"] == [
        "/venv/bin/python", "-m", "case_runners", "record", "--round-dir", "/res/run1/c/round2", "--config",
        "/res/run1/c/resolved_config.json", "--round", "2", "--run-id", "run1", "--error", "node2: unreachable"]
    assert run.calls[0]["cwd"] == "/repo"


def test_check_mode_writes_nothing():
    run = FakeRun("{}")
    result = load_action("round_record").record(ARGS, True, run)
    assert result["changed"] is True and result["record"] == {} and result["compact"] == {}
    assert run.calls == []


def test_cli_failure_fails_the_task_with_its_output():
    result = load_action("round_record").record(ARGS, False, FakeRun("", rc=1, stderr="Traceback"))
    assert result["failed"] is True and result["stderr"] == "Traceback"
    assert result["msg"] == \
        "case_runners record: `-m case_runners record` exited 1 without a JSON document on stdout: Traceback"


def test_runs_on_the_controller_and_checks_its_arguments(tmp_path):
    """Through Ansible for real: the action validates its arguments (naming the missing ones) without a module."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    done = subprocess.run([str(Path(sys.executable).parent / "ansible"), "localhost", "-m", "round_record",
                           "-a", json.dumps({"project_dir": str(tmp_path)})],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "missing required arguments: config, round, round_dir" in done.stdout
