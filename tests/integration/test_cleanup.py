"""ansible-playbook playbooks/cleanup.yml stops a run's monitors and processes, and only those."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from playbook_run import REPO, playbook_env, run_playbook

SLEEPER = "import sys, time; sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(120)"


def start_sleeper(run_id: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", SLEEPER, "--run-id", run_id], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    return proc


def test_cleanup_stops_the_run(results_dir: Path):
    run_id = "run19990101000000"
    node_dir = results_dir / run_id / "digits_cnn_CPUx1x1" / "round1" / "localhost_noderank0"
    monitor = [sys.executable, "-m", "case_runners", "monitor", "-l", str(node_dir), "--name", "host",
               "--run-id", run_id]
    subprocess.run([*monitor, "-o", "start"], cwd=REPO, env=playbook_env(REPO), check=True, capture_output=True)
    ours, other = start_sleeper(run_id), start_sleeper(run_id + "0")
    try:
        run = run_playbook(REPO, "playbooks/cleanup.yml", "-e", f"perfplay_run_id={run_id}",
                           "-e", f"perfplay_results_dir={results_dir}")
        assert run.rc == 0, run.output[-3000:]
        statuses = run.task_statuses()
        assert statuses["Stop the monitors of the run"] == ["changed"]
        assert statuses["Stop every other process of the run"] == ["changed"]
        assert ours.wait(15) != 0
        status = subprocess.run([*monitor, "-o", "status"], cwd=REPO, env=playbook_env(REPO), capture_output=True)
        assert status.returncode == 3, "the monitor is stopped"
        time.sleep(0.2)
        assert other.poll() is None, "another run's process is left alone"

        again = run_playbook(REPO, "playbooks/cleanup.yml", "-e", f"perfplay_run_id={run_id}",
                             "-e", f"perfplay_results_dir={results_dir}")
        assert again.rc == 0
        assert "changed" not in again.task_statuses()["Stop every other process of the run"]
    finally:
        for proc in (ours, other):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_cleanup_needs_a_run_id():
    run = run_playbook(REPO, "playbooks/cleanup.yml")
    assert run.rc != 0
    assert "-e perfplay_run_id=" in run.output
