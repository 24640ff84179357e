"""library/run_history.py: indexes the run, changed only when the run's rows changed; a failed index or an unreadable
round is a warning, never a failed run."""

from __future__ import annotations

import json
import subprocess
import sys

from ansible.module_utils.common.warnings import get_warning_messages

from module_harness import REPO
from process_helpers import RUN_S
from record_helpers import resolved, round_record

COMMON = {"project_dir": "/repo", "python": "/venv/bin/python"}
ARGS = dict(COMMON, run_dir="/res/run1", db="/res/perfplay.sqlite")


def answer(changed: bool, problems: list[str] | None = None) -> dict:
    return {"db": "/res/perfplay.sqlite", "changed": changed, "problems": problems or [],
            "runs": [{"run_dir": "/res/run1", "run_id": "run1", "rounds": 2, "changed": changed}]}


def test_indexes_the_run_and_says_whether_it_changed(run_module):
    kind, result, cli = run_module("run_history", ARGS, {"history": answer(True)})
    assert kind == "exit" and result["changed"] is True
    assert (result["db"], result["rounds"], result["problems"]) == ("/res/perfplay.sqlite", 2, [])
    assert cli.calls[0]["argv"] == ["/venv/bin/python", "-m", "case_runners", "history", "add", "/res/run1", "--db",
                                    "/res/perfplay.sqlite", "--json"]
    assert cli.calls[0]["cwd"] == "/repo"
    _, result, _ = run_module("run_history", ARGS, {"history": answer(False)})
    assert result["changed"] is False


def test_check_mode_asks_without_writing(run_module):
    kind, result, cli = run_module("run_history", ARGS, {"history": answer(True)}, check_mode=True)
    assert kind == "exit" and result["changed"] is True
    assert cli.calls[0]["argv"][-1] == "--check"


def test_an_unreadable_round_is_a_warning(run_module):
    problem = "/res/run1/c/round2/round_record.json: is not JSON (Expecting value)"
    kind, result, _ = run_module("run_history", ARGS, {"history": (1, json.dumps(answer(True, [problem])), "")})
    assert kind == "exit" and result["problems"] == [problem]
    assert f"history: {problem} (indexed as unreadable)" in get_warning_messages()


def test_a_failed_index_is_a_warning_not_a_failure(run_module):
    error = "/res/perfplay.sqlite: written by a newer perfplay (history schema version 3; ...)"
    kind, result, _ = run_module("run_history", ARGS, {"history": (2, "", f"error: {error}\n")})
    assert kind == "exit" and result["changed"] is False and result["index_error"] == error
    assert f"the run was not indexed into the history database: {error}" in get_warning_messages()


def test_changed_only_when_the_rows_change(run_module, tmp_path):
    """Against the real case_runners history add: the second call finds the rows as they are."""
    def real(argv):
        proc = subprocess.run([sys.executable, *argv[1:]], cwd=REPO, capture_output=True, text=True, check=False,
                              timeout=RUN_S)
        return proc.returncode, proc.stdout, proc.stderr

    config = resolved()
    run_dir = tmp_path / "results" / "run20250101000000-abcdef"
    round_dir = run_dir / config["case_id"] / "round1"
    round_dir.mkdir(parents=True)
    (run_dir / config["case_id"] / "resolved_config.json").write_text(json.dumps(config))
    (round_dir / "round_record.json").write_text(json.dumps(round_record(config)))
    db = tmp_path / "results" / "perfplay.sqlite"
    args = dict(COMMON, project_dir=str(REPO), run_dir=str(run_dir), db=str(db))
    _, check, _ = run_module("run_history", args, {"history": real}, check_mode=True)
    assert check["changed"] is True and not db.exists(), "check mode writes nothing"
    _, first, _ = run_module("run_history", args, {"history": real})
    assert (first["changed"], first["rounds"]) == (True, 1) and db.is_file()
    _, second, _ = run_module("run_history", args, {"history": real})
    assert second["changed"] is False
    record = json.loads((round_dir / "round_record.json").read_text())
    record["status"], record["reason"] = "failed", "rank 0 wrote no result"
    (round_dir / "round_record.json").write_text(json.dumps(record))
    _, third, _ = run_module("run_history", args, {"history": real}, check_mode=True)
    assert third["changed"] is True
    _, fourth, _ = run_module("run_history", args, {"history": real})
    assert fourth["changed"] is True
