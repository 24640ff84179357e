"""playbooks/cleanup.yml stops a run's processes and only those; a run whose controller is SIGKILLed leaves
nothing running beyond its round's bound, and cleanup then removes the job file Ansible left behind."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from case_runners.core.processes import identify, list_pids, read_argv, read_stat
from case_runners.core.run_ids import RUN_ID_ENV
from case_runners.launch.node import ROUND_GRACE_S
from case_runners.plan.run_plan import make_plan
from playbook_run import BIN, REPO, playbook_env, run_playbook
from process_helpers import REAPED_S, kill_run, run_pids, wait_for

LONG = {"synthetic": True, "max_epochs": 10000, "time_budget_s": 600}


def descendants(root: int) -> set[int]:
    """root's live descendants."""
    children: dict[int, list[int]] = {}
    for pid in list_pids():
        stat = read_stat(pid)
        if stat and stat.state not in ("Z", "X"):
            children.setdefault(stat.ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


@pytest.fixture
def launched() -> Iterator[list]:
    """Processes a test starts, and run ids whose processes it may leave: all killed at the end."""
    items: list = []
    yield items
    for item in items:
        if isinstance(item, str):
            kill_run(item)
        elif item.poll() is None:
            item.kill()
            item.wait(timeout=REAPED_S)


def test_cleanup_stops_the_run_and_spares_every_decoy(results_dir: Path, sleepers, launched: list):
    plan = make_plan({"vendor": "cpu", "results_dir": str(results_dir), "run_id": "run19990101000000-c1ea40",
                      "cases": [{"case": "digits_cnn", "nproc": 2, "overrides": LONG}]})
    run_id, config = plan["run_id"], plan["cases"][0]
    node_dir = Path(plan["run_dir"]) / config["case_id"] / "round1" / "localhost_noderank0"
    launched.append(run_id)
    launcher = subprocess.Popen([sys.executable, "-m", "case_runners", "launch", "--config", config["config_path"],
                                 "--log-dir", str(node_dir), "--run-id", run_id, "--monitor-interval-s", "0.5"],
                                cwd=REPO, stdout=subprocess.PIPE, env=playbook_env(REPO))
    launched.append(launcher)
    decoys = {
        "argv holds the run id": sleepers("--run-id", run_id),
        "a root daemon with --uid 0": sleepers("--uid", "0", f"perfplay_run_id={run_id}"),
        "another run, its id a prefix of ours": sleepers(env={RUN_ID_ENV: run_id[:-1]}),
        "another run, ours a prefix of its id": sleepers(env={RUN_ID_ENV: run_id + "0"}),
    }
    assert wait_for(lambda: len(run_pids(run_id)) == 5, 300), "launcher, 2 ranks, 2 monitors"
    ours = run_pids(run_id)

    run = run_playbook(REPO, "playbooks/cleanup.yml", "-e", f"perfplay_run_id={run_id}",
                       "-e", f"perfplay_results_dir={results_dir}")
    assert run.rc == 0, run.output[-3000:]
    assert run.task_statuses()["Stop every process of the run"] == ["changed"]
    assert launcher.wait(timeout=120) == 130, "the launcher was stopped and wrote why"
    result = json.loads((node_dir / "node_result.json").read_text())
    assert result["status"] == "interrupted" and "SIGTERM" in result["reason"]
    assert wait_for(lambda: all(identify(pid) is None for pid in ours), 60)
    assert run_pids(run_id) == [] and list(node_dir.glob("*.pid")) == []
    for what, decoy in decoys.items():
        assert decoy.poll() is None, f"cleanup killed a decoy: {what}"

    again = run_playbook(REPO, "playbooks/cleanup.yml", "-e", f"perfplay_run_id={run_id}",
                         "-e", f"perfplay_results_dir={results_dir}")
    assert again.rc == 0
    assert again.task_statuses()["Stop every process of the run"] == ["ok"]


@pytest.mark.parametrize("run_id", [None, "0", "run"])
def test_cleanup_refuses_a_missing_or_loose_run_id_before_touching_anything(results_dir: Path, sleepers, run_id):
    decoy = sleepers("--uid", "0", env={RUN_ID_ENV: str(run_id)})
    run = run_playbook(REPO, "playbooks/cleanup.yml", "-e", f"perfplay_results_dir={results_dir}",
                       *(["-e", f"perfplay_run_id={run_id}"] if run_id else []))
    assert run.rc != 0
    assert ("-e perfplay_run_id=" if run_id is None else f"'{run_id}' is not a run id") in run.output
    assert "Stop every process of the run" not in run.task_statuses()
    assert decoy.poll() is None


def test_a_sigkilled_controller_leaves_nothing_running_beyond_the_round_bound(results_dir: Path, launched: list,
                                                                             tmp_path: Path):
    """SIGKILL the controller while a round trains: every process the run started (launcher, ranks, monitors,
    Ansible's own workers) is gone by the case timeout plus ROUND_GRACE_S, without any cleanup; cleanup then finds
    nothing left."""
    run_id, timeout_s = "run-controller-killed", 40
    launched.append(run_id)
    selection = {"case": "digits_cnn", "nproc": 2, "timeout_s": timeout_s, "overrides": LONG}
    with open(tmp_path / "play.log", "w") as log:
        controller = subprocess.Popen(
            [str(BIN / "ansible-playbook"), "run_case.yml", "-e", f"perfplay_results_dir={results_dir}",
             "-e", f"perfplay_run_id={run_id}", "-e", json.dumps({"perfplay_cases": [selection]})],
            cwd=REPO, env=playbook_env(REPO), stdout=log, stderr=subprocess.STDOUT)
    launched.append(controller)
    events = results_dir / run_id / "digits_cnn_CPUx1x2" / "round1" / "localhost_noderank0" / "rank1.events.jsonl"
    assert wait_for(lambda: events.exists() and "TRAIN_START" in events.read_text(), 300), \
        (tmp_path / "play.log").read_text()[-3000:]
    launcher_started = json.loads(events.read_text().splitlines()[0])["metadata"]["time_ms"] / 1000
    everything = set(run_pids(run_id)) | descendants(controller.pid)
    assert len(run_pids(run_id)) == 5, "launcher, 2 ranks, 2 monitors"
    controller.kill()
    controller.wait(timeout=REAPED_S)

    bound = launcher_started + timeout_s + ROUND_GRACE_S
    assert wait_for(lambda: not any(identify(pid) for pid in everything), max(0.0, bound - time.time())), \
        "still running after the bound: " + "; ".join(" ".join(read_argv(pid)) for pid in everything if identify(pid))
    assert run_pids(run_id) == []

    cleanup = run_playbook(REPO, "playbooks/cleanup.yml", "-e", f"perfplay_run_id={run_id}",
                           "-e", f"perfplay_results_dir={results_dir}")
    assert cleanup.rc == 0, cleanup.output[-3000:]
