"""ansible-playbook run_case.yml on localhost: the default case, idempotent setup, failures kept per round."""

from __future__ import annotations

import json
import re
from pathlib import Path

from case_runners.records.history_db import DB_NAME, opened, select
from playbook_run import REPO, launched_anything, run_playbook

RECAP = re.compile(r"^localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+"
                   r"skipped=(\d+)\s+rescued=(\d+)", re.M)


def recap(output: str) -> dict[str, int]:
    match = RECAP.search(output)
    assert match, output[-3000:]
    return dict(zip(("ok", "changed", "unreachable", "failed", "skipped", "rescued"), map(int, match.groups())))


def only_run_dir(results_dir: Path) -> Path:
    (run_dir,) = results_dir.glob("run*")
    return run_dir


def indexed(results_dir: Path) -> list[tuple[str, str, int, str]]:
    """(run id, case id, round, status) of every round in the history database of results_dir."""
    with opened(results_dir / DB_NAME, read_only=True) as conn:
        return [(r["run_id"], r["case_id"], r["round"], r["status"]) for r in select(conn)]


PROGRESS = re.compile(r"^  node 0 on localhost, digits_cnn_CPUx1x1 round 1: (starting|initialising|training|evaluating|"
                      r"finishing)\b.*; \d+ s of 3600 s$", re.M)


END_TASK = "Summarise the run, index it into the history database and write its HTML report"
HOST_CHECK = "host_preflight : Check the venv's pins, the Python, devices, data dirs, network interface and master port"
HOST_CHECK_ARGS = ("host_preflight : Validating arguments against arg spec 'main' - Check a host can run its part of a "
                   "perfplay run")


def test_default_case_converges_and_setup_is_idempotent(results_dir: Path):
    first = run_playbook(REPO, "run_case.yml", "-e", f"perfplay_results_dir={results_dir}",
                         "-e", "perfplay_progress_interval_s=1")
    assert first.rc == 0, first.output[-5000:]
    assert recap(first.output)["failed"] == 0
    # The wait is long polls: one calm progress line per poll, never a retry shown as a failure.
    assert "FAILED" not in first.output and "RETRYING" not in first.output
    assert PROGRESS.search(first.output), first.output[-5000:]  # the round takes longer than a second
    # A round on a local host that succeeds is two module runs, start and wait: nothing is left to finish and the
    # record is written on the controller without one.
    # Each task is a worker process on the controller: no other task runs on a host in a round that succeeds.
    statuses = first.task_statuses()
    names = list(statuses)
    round_tasks = [name for name in names[names.index("Run the rounds one after the other") + 1:
                                          names.index("Record the round")] if set(statuses[name]) - {"skipping"}]
    assert round_tasks == ["Start this node of the round", "Wait for this node of the round"], round_tasks
    # The hosts' preflight on a host whose venv has every pin: one module run, the host check answering the pins too
    # (no copy on the controller, no pip, no second check); the role's set_fact and assert besides.
    hosts_play = names[names.index("Copy the checkout to the host"):names.index("No node has failed yet")]
    preflight = [name for name in hosts_play if set(statuses[name]) - {"skipping"}]
    assert preflight == [HOST_CHECK_ARGS, HOST_CHECK,
                         "host_preflight : Publish the unmet requirements and the rendezvous port this host serves",
                         "host_preflight : Assert the host passed every check"], preflight

    run_dir = only_run_dir(results_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    (case,) = summary["cases"]
    assert case["case_id"] == "digits_cnn_CPUx1x1"
    assert [r["status"] for r in case["rounds"]] == ["success"]
    assert "PERFPLAY SUMMARY" in first.output
    assert f"perfplay summary: {run_dir.name}" in first.output
    assert (run_dir / "summary.md").is_file()
    # The report beside it, its path the last line the summary callback prints.
    assert (run_dir / "report.html").is_file()
    assert first.output.split("PERFPLAY SUMMARY")[1].split("PLAY RECAP")[0].strip().splitlines()[-1] == \
        f"report: {run_dir / 'report.html'}", first.output[-3000:]
    node_dir = run_dir / "digits_cnn_CPUx1x1" / "round1" / "localhost_noderank0"
    assert json.loads((node_dir / "node_result.json").read_text())["status"] == "success"
    assert not (node_dir / "launcher.log").exists(), "a launcher that said nothing leaves no log"
    assert (node_dir / "host_monitor.jsonl").stat().st_size > 0
    assert (run_dir / "digits_cnn_CPUx1x1" / "round1" / "round_record.json").is_file()
    assert list(results_dir.rglob("*.pid")) == [], "every monitor was stopped"
    # The run indexed itself into the history database beside the results, in the summary's task: the run's end
    # is one module run on the controller (summary, history, report), not three.
    end = [name for name in names[names.index("Record the round") + 1:] if set(statuses[name]) - {"skipping"}]
    assert end == ["Publish the round record (set_stats, an AWX artifact)", END_TASK,
                   "Publish the summary (set_stats, an AWX artifact)", "Fail the run if a round failed"], end
    assert statuses[END_TASK] == ["changed"]
    assert indexed(results_dir) == [(run_dir.name, "digits_cnn_CPUx1x1", 1, "success")]

    second = run_playbook(REPO, "run_case.yml", "-e", f"perfplay_results_dir={results_dir}")
    assert second.rc == 0, second.output[-5000:]
    assert len(indexed(results_dir)) == 2 and indexed(results_dir)[0][0] == run_dir.name
    setup = {name: statuses for name, statuses in second.task_statuses().items()
             if name.startswith(("runtime_host :", "host_preflight :"))}
    assert setup[HOST_CHECK] == ["ok"], "one check of the host and its pins"
    assert all("changed" not in statuses for statuses in setup.values()), setup
    assert second.task_statuses()["Install what the venv lacks"] == ["skipping"]


def test_check_mode_creates_nothing(results_dir: Path):
    run = run_playbook(REPO, "run_case.yml", "--check", "-e", f"perfplay_results_dir={results_dir}")
    assert run.rc == 0, run.output[-5000:]
    assert list(results_dir.iterdir()) == []
    assert "PERFPLAY SUMMARY" not in run.output


def test_a_failed_round_does_not_stop_the_next(results_dir: Path):
    cases = [{"case": "digits_cnn", "timeout_s": 1},
             {"case": "digits_cnn", "nproc": 2, "overrides": {"max_steps": 5, "synthetic": True}}]
    run = run_playbook(REPO, "run_case.yml", "-e", f"perfplay_results_dir={results_dir}",
                       "-e", json.dumps({"perfplay_cases": cases}))
    assert run.rc != 0, "a round without a valid result fails the run at the end"
    assert recap(run.output)["rescued"] == 1
    summary = json.loads((only_run_dir(results_dir) / "summary.json").read_text())
    statuses = {case["case_id"]: [r["status"] for r in case["rounds"]] for case in summary["cases"]}
    assert statuses["digits_cnn_CPUx1x1"] == ["timeout"]
    assert statuses["digits_cnn_CPUx1x2"][0] in ("success", "not_converged")
    assert "digits_cnn_CPUx1x1 round 1: timeout" in run.output
    # finish ran for the round that timed out (in its rescue), not for the one that succeeded
    assert run.task_statuses()["Finish this node of the round"] == ["ok"]
    assert list(results_dir.rglob("*.pid")) == []
    assert launched_anything(results_dir)  # sanity: the helper sees launched rounds
