"""library/run_summary.py: writes summary.json and summary.md, changed only when it wrote them."""

from __future__ import annotations

import json
import subprocess
import sys

from ansible.module_utils.common.warnings import get_warning_messages

from module_harness import REPO
from process_helpers import RUN_S
from record_helpers import resolved, write_resolved

COMMON = {"project_dir": "/repo", "python": "/venv/bin/python"}
SUMMARY = {"schema": "perfplay.run_summary/1", "run_id": "run1", "ok": True, "cases": [], "failed_rounds": []}


def test_writes_and_returns_the_summary(run_module):
    answer = dict(SUMMARY, written=["/res/run1/summary.json", "/res/run1/summary.md"])
    kind, result, cli = run_module("run_summary", dict(COMMON, run_dir="/res/run1"), {"summary": answer})
    assert kind == "exit"
    assert result["changed"] is True
    assert result["summary"] == SUMMARY, "the summary as written: without the write's outcome"
    assert result["written"] == ["/res/run1/summary.json", "/res/run1/summary.md"]
    assert cli.calls[0]["argv"] == ["/venv/bin/python", "-m", "case_runners", "summary", "/res/run1", "--write"]


def test_check_mode_reads_only(run_module):
    kind, result, cli = run_module("run_summary", dict(COMMON, run_dir="/res/run1"), {"summary": SUMMARY},
                                   check_mode=True)
    assert kind == "exit" and result["changed"] is False and result["written"] == []
    assert cli.calls[0]["argv"] == ["/venv/bin/python", "-m", "case_runners", "summary", "/res/run1"]


def test_a_summary_that_cannot_be_written_is_a_warning(run_module):
    answer = dict(SUMMARY, written=[], write_error="/res/run1/summary.json: no space left on device")
    kind, result, _ = run_module("run_summary", dict(COMMON, run_dir="/res/run1"), {"summary": answer})
    assert kind == "exit" and result["changed"] is False
    assert ("summary.json and summary.md not written: /res/run1/summary.json: no space left on device"
            in get_warning_messages())  # what exit_json adds to the result as "warnings"
    assert "write_error" not in result["summary"]


def test_failure(run_module):
    kind, result, _ = run_module("run_summary", dict(COMMON, run_dir="/res/run1"), {"summary": (1, "", "x")})
    assert kind == "fail"
    assert result["rc"] == 1


def test_passes_the_failed_rounds_through(run_module):
    summary = dict(SUMMARY, failed_rounds=["c round 3: timeout: no exit within 60 s"])
    kind, result, _ = run_module("run_summary", dict(COMMON, run_dir="/res/run1"), {"summary": summary})
    assert kind == "exit"
    assert result["failed_rounds"] == ["c round 3: timeout: no exit within 60 s"]


def test_changed_only_when_it_writes(run_module, tmp_path):
    """Against the real case_runners summary: the second call finds both files up to date."""
    def real(argv):
        proc = subprocess.run([sys.executable, *argv[1:]], cwd=REPO, capture_output=True, text=True, check=False,
                              timeout=RUN_S)
        return proc.returncode, proc.stdout, proc.stderr

    run_dir = tmp_path / "run20250101000000"
    (run_dir / "digits_cnn_CPUx1x1").mkdir(parents=True)  # as the plan leaves it: a case and its resolved config
    write_resolved(run_dir / "digits_cnn_CPUx1x1" / "resolved_config.json", resolved())
    args = dict(COMMON, project_dir=str(REPO), run_dir=str(run_dir))
    _, first, _ = run_module("run_summary", args, {"summary": real})
    assert first["changed"] is True
    assert first["written"] == [str(run_dir / "summary.json"), str(run_dir / "summary.md")]
    assert json.loads((run_dir / "summary.json").read_text()) == first["summary"]
    _, second, _ = run_module("run_summary", args, {"summary": real})
    assert (second["changed"], second["written"]) == (False, [])
    (run_dir / "summary.md").write_text("edited\n")
    _, third, _ = run_module("run_summary", args, {"summary": real})
    assert third["written"] == [str(run_dir / "summary.md")]


def test_the_runs_end_in_one_module_run(run_module):
    """With history_db and report, the one summary command also indexes the run and writes its report, each answered
    as run_history and run_report answer (a failed index or report a warning): the playbook's end is one task."""
    history = {"db": "/res/perfplay.sqlite", "changed": True, "problems": [],
               "runs": [{"run_dir": "/res/run1", "run_id": "run1", "rounds": 2, "changed": True}]}
    report = {"path": "/res/run1/report.html", "changed": True, "write_error": None}
    args = dict(COMMON, run_dir="/res/run1", history_db="/res/perfplay.sqlite", report=True)
    kind, result, cli = run_module("run_summary", args,
                                   {"summary": dict(SUMMARY, written=[], history=history, report=report)})
    assert kind == "exit" and result["changed"] is True, "the summary was up to date; the index and report changed"
    assert [call["argv"][3:] for call in cli.calls] == [
        ["summary", "/res/run1", "--write", "--history-db", "/res/perfplay.sqlite", "--report"]]
    assert result["summary"] == SUMMARY, "the summary as written: without the ends' answers"
    assert result["history"] == {"changed": True, "db": "/res/perfplay.sqlite", "rounds": 2, "problems": []}
    assert result["report"] == {"changed": True, "path": "/res/run1/report.html", "written": True,
                                "write_error": None}

    error = "/res/perfplay.sqlite: written by a newer perfplay (history schema version 3; ...)"
    unwritten = {"path": None, "changed": False, "write_error": "not rendered: ValueError: no figure"}
    kind, result, _ = run_module("run_summary", args, {"summary": dict(SUMMARY, written=[], report=unwritten,
                                                                       history={"index_error": error})})
    assert kind == "exit" and result["changed"] is False
    assert result["history"]["index_error"] == error and result["report"]["path"] is None
    assert {f"the run was not indexed into the history database: {error}",
            "report.html not written: not rendered: ValueError: no figure"} <= set(get_warning_messages())


def test_without_history_db_and_report_only_the_summary(run_module):
    kind, result, cli = run_module("run_summary", dict(COMMON, run_dir="/res/run1"), {"summary": SUMMARY})
    assert kind == "exit" and cli.keys() == ["summary"]
    assert "history" not in result and "report" not in result

