"""run_case.yml through ansible-runner, as AWX runs it: its own stdout callback and ANSIBLE_CALLBACK_PLUGINS, the
checkout as the project directory, the cases as a survey's YAML text. The summary files are written, the table
is printed once, and the summary reaches the artifacts (set_stats)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import ansible_runner
import pytest

from playbook_run import BIN, checkout_copy

CASES_TEXT = """\
- case: digits_cnn
  overrides: {max_steps: 5, synthetic: true}
"""


@pytest.fixture
def runner_env(monkeypatch) -> dict[str, str]:
    """ansible-runner starts from this process's environment: none of the caller's ANSIBLE_* settings, and the
    venv's ansible-playbook first on PATH."""
    for key in [key for key in os.environ if key.startswith("ANSIBLE_")]:
        monkeypatch.delenv(key)
    return {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_run_case_under_ansible_runner(tmp_path: Path, runner_env: dict[str, str]):
    project = checkout_copy(tmp_path / "project")
    results, private = tmp_path / "results", tmp_path / "private"
    results.mkdir()
    private.mkdir()
    run = ansible_runner.run(private_data_dir=str(private), project_dir=str(project),
                             playbook="run_case.yml", envvars=runner_env, quiet=True, timeout=600,
                             extravars={"perfplay_results_dir": str(results), "perfplay_cases": CASES_TEXT})
    stdout = run.stdout.read()
    assert (run.status, run.rc) == ("successful", 0), stdout[-5000:]

    (run_dir,) = results.glob("run*")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [case["case_id"] for case in summary["cases"]] == ["digits_cnn_CPUx1x1"]
    assert (run_dir / "summary.md").is_file()

    assert stdout.count("PERFPLAY SUMMARY") == 1, stdout[-5000:]
    assert f"perfplay summary: {run_dir.name}" in stdout
    assert "digits_cnn_CPUx1x1" in stdout.split("PERFPLAY SUMMARY")[1]
    assert "Skipping callback plugin" not in stdout

    (stats,) = [event for event in run.events if event["event"] == "playbook_on_stats"]
    artifacts = stats["event_data"]["artifact_data"]
    assert artifacts["perfplay_summary"] == summary
    assert [r["case_id"] for r in artifacts["perfplay_rounds"]] == ["digits_cnn_CPUx1x1"]
    assert list(results.rglob("*.pid")) == [], "every monitor was stopped"
