"""run_summary (playbooks/action_plugins/run_summary.py, documented in library/run_summary.py): writes summary.json
and summary.md, changed only when it wrote them; with history_db and report the same command ends the run. Run on
the controller without a module process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from module_harness import REPO, FakeRun, load_action
from process_helpers import RUN_S
from record_helpers import resolved, write_resolved

COMMON = {"project_dir": "/repo", "python": "/venv/bin/python", "history_db": None, "report": False}
SUMMARY = {"schema": "perfplay.run_summary/1", "run_id": "run1", "ok": True, "cases": [], "failed_rounds": []}


def summarise(answer, check_mode=False, **args):
    run = answer if callable(answer) and not isinstance(answer, FakeRun) else None
    fake = answer if isinstance(answer, FakeRun) else FakeRun(answer)
    plugin = load_action("run_summary")
    return plugin.summarise(dict(COMMON, run_dir="/res/run1", **args), check_mode, run or fake), fake


def test_writes_and_returns_the_summary():
    result, run = summarise(dict(SUMMARY, written=["/res/run1/summary.json", "/res/run1/summary.md"]))
    assert result["changed"] is True
    assert result["summary"] == SUMMARY, "the summary as written: without the write's outcome"
    assert result["written"] == ["/res/run1/summary.json", "/res/run1/summary.md"]
    assert run.calls[0]["argv"] == ["/venv/bin/python", "-m", "case_runners", "summary", "/res/run1", "--write"]
    assert run.calls[0]["cwd"] == "/repo"


def test_check_mode_reads_only():
    result, run = summarise(SUMMARY, check_mode=True)
    assert result["changed"] is False and result["written"] == []
    assert run.calls[0]["argv"] == ["/venv/bin/python", "-m", "case_runners", "summary", "/res/run1"]


def test_a_summary_that_cannot_be_written_is_a_warning():
    result, _ = summarise(dict(SUMMARY, written=[], write_error="/res/run1/summary.json: no space left on device"))
    assert result["changed"] is False
    assert result["warnings"] == [
        "summary.json and summary.md not written: /res/run1/summary.json: no space left on device"]
    assert "write_error" not in result["summary"]


def test_failure():
    result, _ = summarise(FakeRun("", rc=1, stderr="x"))
    assert result["failed"] is True and result["rc"] == 1
    assert result["msg"] == "case_runners summary: `-m case_runners summary` exited 1 without a JSON document on " \
                            "stdout: x"


def test_passes_the_failed_rounds_through():
    result, _ = summarise(dict(SUMMARY, failed_rounds=["c round 3: timeout: no exit within 60 s"]))
    assert result["failed_rounds"] == ["c round 3: timeout: no exit within 60 s"]
    assert "warnings" not in result


def test_changed_only_when_it_writes(tmp_path):
    """Against the real case_runners summary: the second call finds both files up to date."""
    run_dir = tmp_path / "run20250101000000"
    (run_dir / "digits_cnn_CPUx1x1").mkdir(parents=True)  # as the plan leaves it: a case and its resolved config
    write_resolved(run_dir / "digits_cnn_CPUx1x1" / "resolved_config.json", resolved())
    args = dict(COMMON, project_dir=str(REPO), python=sys.executable, run_dir=str(run_dir))

    def real(argv, **kwargs):
        return subprocess.run(argv, **kwargs, timeout=RUN_S)

    first = load_action("run_summary").summarise(args, False, real)
    assert first["changed"] is True
    assert first["written"] == [str(run_dir / "summary.json"), str(run_dir / "summary.md")]
    assert json.loads((run_dir / "summary.json").read_text()) == first["summary"]
    second = load_action("run_summary").summarise(args, False, real)
    assert (second["changed"], second["written"]) == (False, [])
    (run_dir / "summary.md").write_text("edited\n")
    third = load_action("run_summary").summarise(args, False, real)
    assert third["written"] == [str(run_dir / "summary.md")]


def test_the_runs_end_in_one_command():
    """With history_db and report, the one summary command also indexes the run and writes its report, each answered
    as run_history and run_report answer (a failed index or report a warning): the playbook's end is one task."""
    history = {"db": "/res/perfplay.sqlite", "changed": True, "problems": [],
               "runs": [{"run_dir": "/res/run1", "run_id": "run1", "rounds": 2, "changed": True}]}
    report = {"path": "/res/run1/report.html", "changed": True, "write_error": None}
    ends = dict(history_db="/res/perfplay.sqlite", report=True)
    result, run = summarise(dict(SUMMARY, written=[], history=history, report=report), **ends)
    assert result["changed"] is True, "the summary was up to date; the index and report changed"
    assert [call["argv"][3:] for call in run.calls] == [
        ["summary", "/res/run1", "--write", "--history-db", "/res/perfplay.sqlite", "--report"]]
    assert result["summary"] == SUMMARY, "the summary as written: without the ends' answers"
    assert result["history"] == {"changed": True, "db": "/res/perfplay.sqlite", "rounds": 2, "problems": []}
    assert result["report"] == {"changed": True, "path": "/res/run1/report.html", "written": True,
                                "write_error": None}

    error = "/res/perfplay.sqlite: written by a newer perfplay (history schema version 3; ...)"
    unwritten = {"path": None, "changed": False, "write_error": "not rendered: ValueError: no figure"}
    result, _ = summarise(dict(SUMMARY, written=[], report=unwritten, history={"index_error": error}), **ends)
    assert result["changed"] is False
    assert result["history"]["index_error"] == error and result["report"]["path"] is None
    assert result["warnings"] == [f"the run was not indexed into the history database: {error}",
                                  "report.html not written: not rendered: ValueError: no figure"]


def test_without_history_db_and_report_only_the_summary():
    result, run = summarise(SUMMARY)
    assert len(run.calls) == 1
    assert "history" not in result and "report" not in result


def test_runs_on_the_controller_and_checks_its_arguments(tmp_path):
    """Through Ansible for real: the action validates its arguments (naming the missing ones) without a module."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    done = subprocess.run([str(Path(sys.executable).parent / "ansible"), "localhost", "-m", "run_summary",
                           "-a", json.dumps({"project_dir": str(tmp_path)})],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "missing required arguments: run_dir" in done.stdout
