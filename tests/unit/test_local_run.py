"""`python -m case_runners run`: the playbook's steps on one host without Ansible, its preflight included."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from case_runners.core.paths import project_root
from process_helpers import REAPED_S, run_pids, wait_for


def run(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "case_runners", "run", *args], cwd=project_root(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def refusal(*args: str, **kwargs) -> str:
    """The error output of a run refused before anything started (exit 2)."""
    proc = run(*args, **kwargs)
    try:
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
        proc.wait(timeout=REAPED_S)
    assert proc.returncode == 2, err
    return err


def test_a_bad_data_dir_is_refused_before_anything_is_written(tmp_path):
    err = refusal("digits_cnn", "--data-dir", str(tmp_path / "nowhere"), "--results-dir", str(tmp_path / "results"))
    assert "key 'data_dir' (run var perfplay_cases) of digits_cnn_CPUx1x1" in err and "nowhere" in err
    assert not (tmp_path / "results").exists() or list((tmp_path / "results").iterdir()) == []


def test_a_missing_checkpoint_is_refused_under_its_own_key(tmp_path):
    err = refusal("llama", "--task", "generate", "--set", f"checkpoint={tmp_path / 'ckpt'}", "--results-dir",
                  str(tmp_path / "results"))
    assert f"key 'checkpoint' (run var perfplay_cases) of llama_generate_CPUx1x1: {tmp_path / 'ckpt'}" in err
    assert "data_dir" not in err


def test_ctrl_c_stops_the_round_records_it_and_leaves_nothing_running(tmp_path):
    """Also: the round prints the playbook's progress line every --progress-interval-s while it runs."""
    results, said = tmp_path / "results", tmp_path / "stderr.txt"
    with said.open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "case_runners", "run", "digits_cnn", "--results-dir",
                                 str(results), "--set", "synthetic=true", "--set", "max_epochs=10000", "--set",
                                 "time_budget_s=600", "--repeat", "2", "--progress-interval-s", "1"],
                                cwd=project_root(), stdout=subprocess.PIPE, stderr=stderr, text=True,
                                start_new_session=True)
    try:
        def training() -> Path | None:
            found = list(results.glob("*/*/round1/*/rank0.events.jsonl"))
            return found[0] if found and "TRAIN_START" in found[0].read_text() else None

        events = wait_for(lambda: proc.poll() is not None or training())
        assert isinstance(events, Path), said.read_text()
        progress = wait_for(lambda: proc.poll() is not None or re.search(
            r"^  digits_cnn_CPUx1x1 round 1: training: epoch \d+, step \d+, loss .*\(rank 0\); \d+ s of \d+ s$",
            said.read_text(), re.M))
        assert isinstance(progress, re.Match), said.read_text()
        run_id = events.parts[-5]
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group gets it
        proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=REAPED_S)
    err = said.read_text()
    assert proc.returncode == 130, err
    record = json.loads((events.parent.parent / "round_record.json").read_text())
    assert record["status"] == "failed" and "SIGINT" in record["reason"]
    summary = json.loads((results / run_id / "summary.json").read_text())
    assert [r["status"] for r in summary["cases"][0]["rounds"]] == ["failed", "missing"]
    assert run_pids(run_id) == []


def test_a_vendor_case_requirement_this_python_lacks_is_refused_naming_the_file(tmp_path):
    """The playbook installs vendor/<v>/cases/<case>/requirements.txt; the direct run checks it (the same check)
    and says what is missing, before anything is written."""
    home = tmp_path / "project"
    for folder in ("case_runners", "vendor"):
        shutil.copytree(project_root() / folder, home / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (home / "vendor" / "cpu" / "cases" / "digits_cnn" / "requirements.txt").write_text(
        "# what the chip needs\nperfplay-no-such-dist==1.0\ntorch==0.1.0\nnumpy\n")
    results = tmp_path / "results"
    err = refusal("digits_cnn", "--results-dir", str(results), env={**os.environ, "PERFPLAY_HOME": str(home)})
    assert f"error: vendor/cpu/cases/digits_cnn/requirements.txt: this Python ({sys.executable}) lacks " \
           "perfplay-no-such-dist==1.0, torch==0.1.0 (installed " in err, err
    assert f"-m pip install -r {home}/vendor/cpu/cases/digits_cnn/requirements.txt" in err
    assert "warning: vendor/cpu/cases/digits_cnn/requirements.txt: numpy not a name==version pin" in err
    assert not results.exists() or list(results.iterdir()) == []
