"""library/run_report.py: writes report.html, changed only when its content changed; check mode writes nothing; a
report that cannot be written is a warning."""

from __future__ import annotations

import json
import subprocess
import sys

from ansible.module_utils.common.warnings import get_warning_messages

from case_runners.views.report import REPORT_NAME
from module_harness import REPO
from process_helpers import RUN_S
from record_helpers import resolved, round_record, write_resolved

COMMON = {"project_dir": "/repo", "python": "/venv/bin/python"}
PATH = "/res/run1/report.html"


def test_writes_the_report(run_module):
    answer = {"path": PATH, "changed": True, "write_error": None}
    kind, result, cli = run_module("run_report", dict(COMMON, run_dir="/res/run1"), {"report": answer})
    assert kind == "exit"
    assert (result["changed"], result["written"], result["path"], result["write_error"]) == (True, True, PATH, None)
    assert cli.calls[0]["argv"] == ["/venv/bin/python", "-m", "case_runners", "report", "/res/run1", "--json"]


def test_check_mode_writes_nothing_and_says_whether_it_would_change(run_module):
    answer = {"path": PATH, "changed": True, "write_error": None}
    kind, result, cli = run_module("run_report", dict(COMMON, run_dir="/res/run1"), {"report": answer},
                                   check_mode=True)
    assert kind == "exit" and result["changed"] is True and result["written"] is False
    assert cli.calls[0]["argv"][-2:] == ["--json", "--check"]


def test_a_report_that_cannot_be_written_is_a_warning(run_module):
    answer = {"path": PATH, "changed": False, "write_error": f"{PATH}: no space left on device"}
    kind, result, _ = run_module("run_report", dict(COMMON, run_dir="/res/run1"), {"report": answer})
    assert kind == "exit" and result["changed"] is False and result["written"] is False
    assert f"report.html not written: {PATH}: no space left on device" in get_warning_messages()


def test_a_report_that_cannot_be_rendered_is_a_warning(run_module):
    crash = "Traceback (most recent call last):\n  ...\nValueError: no figure"
    kind, result, _ = run_module("run_report", dict(COMMON, run_dir="/res/run1"), {"report": (1, "", crash)})
    assert kind == "exit" and result["changed"] is False and result["path"] is None
    assert "report.html not written: not rendered: ValueError: no figure" in get_warning_messages()


def test_a_directory_that_is_not_a_run_fails(run_module):
    kind, result, _ = run_module("run_report", dict(COMMON, run_dir="/res/x"),
                                 {"report": (2, "", "error: /res/x: not a run directory")})
    assert kind == "fail" and result["rc"] == 2 and "not a run directory" in result["stderr"]


def test_changed_only_when_the_content_changed(run_module, tmp_path):
    """Against the real case_runners report: the second call finds the file up to date, check mode writes none."""
    def real(argv):
        proc = subprocess.run([sys.executable, *argv[1:]], cwd=REPO, capture_output=True, text=True, check=False,
                              timeout=RUN_S)
        return proc.returncode, proc.stdout, proc.stderr

    config = resolved()
    run_dir = tmp_path / "run20250101000000"
    (run_dir / config["case_id"] / "round1").mkdir(parents=True)
    write_resolved(run_dir / config["case_id"] / "resolved_config.json", config)
    (run_dir / config["case_id"] / "round1" / "round_record.json").write_text(json.dumps(round_record(config)))
    args = dict(COMMON, project_dir=str(REPO), run_dir=str(run_dir))
    path = run_dir / REPORT_NAME
    _, checked, _ = run_module("run_report", args, {"report": real}, check_mode=True)
    assert (checked["changed"], checked["written"], path.exists()) == (True, False, False)
    _, first, _ = run_module("run_report", args, {"report": real})
    assert (first["changed"], first["path"]) == (True, str(path)) and path.is_file()
    _, second, _ = run_module("run_report", args, {"report": real})
    assert second["changed"] is False
    _, checked, _ = run_module("run_report", args, {"report": real}, check_mode=True)
    assert checked["changed"] is False
