"""library/round_result.py: the record, and its compact digest for set_stats, as `case_runners record` gives them
(tests/unit/test_results.py tests the digest itself)."""

from __future__ import annotations

ARGS = {"project_dir": "/repo", "python": "/venv/bin/python", "round_dir": "/res/run1/c/round2",
        "config": "/res/run1/c/resolved_config.json", "round": 2, "run_id": "run1"}
RECORD = {"schema": "perfplay.round_record/1", "case_id": "c", "round": 2, "status": "success", "reason": None,
          "metrics": {"p_whole": 10.0, "p_train": 11.0, "p_core": 12.0, "e2e_time": 5.0, "final_metric": 0.97,
                      "converged": True, "samples": 100}, "mfu": {"value": None}, "per_rank": []}
COMPACT = {"case_id": "c", "round": 2, "status": "success", "reason": None, "standard": True, "non_standard": [],
           "p_whole": 10.0, "p_train": 11.0, "p_core": 12.0, "e2e_time": 5.0, "final_metric": 0.97, "converged": True,
           "mfu": None, "errors": ["node2: unreachable"]}


def test_missing_args(run_module):
    kind, result, _ = run_module("round_result", {"project_dir": "/repo"})
    assert kind == "fail"
    assert "missing required arguments: config, round, round_dir" in result["msg"]


def test_records_the_round(run_module):
    kind, result, cli = run_module("round_result", dict(ARGS, errors=["node2: unreachable"]),
                                   {"record": {"record": RECORD, "compact": COMPACT}})
    assert kind == "exit"
    assert result["changed"] is True
    assert result["record"] == RECORD
    assert result["compact"] == COMPACT
    assert cli.calls[0]["argv"] == [
        "/venv/bin/python", "-m", "case_runners", "record", "--round-dir", "/res/run1/c/round2", "--config",
        "/res/run1/c/resolved_config.json", "--round", "2", "--run-id", "run1", "--error", "node2: unreachable"]


def test_check_mode_writes_nothing(run_module):
    kind, result, cli = run_module("round_result", ARGS, check_mode=True)
    assert kind == "exit"
    assert result["changed"] is True
    assert result["record"] == {} and result["compact"] == {}
    assert cli.calls == []


def test_cli_failure(run_module):
    kind, result, _ = run_module("round_result", ARGS, {"record": (1, "", "Traceback")})
    assert kind == "fail"
    assert result["stderr"] == "Traceback"
