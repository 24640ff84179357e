"""A round's node in three commands, as the playbook runs it: `launch --detach` (the launcher in the background),
`wait` (long polls with progress), `finish` (stop what is left, pack the directory). Real ranks of digits_cnn; every
process a test starts is killed at its end."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import pytest

from case_runners.core.paths import project_root
from case_runners.core.processes import ProcessId, is_same
from case_runners.launch import progress
from case_runners.plan.run_plan import make_plan
from case_runners.rank.driver import events as ev
from process_helpers import RUN_S, kill_run, run_pids


def run(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "case_runners", *argv], cwd=project_root(), input=stdin,
                          capture_output=True, text=True, check=False, timeout=RUN_S)


def cli(*argv: str, stdin: str | None = None) -> dict:
    done = run(*argv, stdin=stdin)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def config(tmp_path: Path, **overrides) -> Path:
    plan = make_plan({"vendor": "cpu", "results_dir": str(tmp_path / "results"),
                      "cases": [{"case": "digits_cnn", "overrides": overrides}]})
    assert plan["ok"], plan["errors"]
    return Path(plan["cases"][0]["config_path"])


@pytest.fixture
def run_id():
    rid = f"background-{uuid.uuid4().hex[:8]}"
    try:
        yield rid
    finally:
        kill_run(rid)


def node_args(node: Path, run_id: str, launcher: dict) -> list[str]:
    return ["--log-dir", str(node), "--run-id", run_id, "--launcher", json.dumps(launcher)]


def test_a_background_round_reports_progress_then_its_result_and_is_packed(tmp_path, run_id):
    node = tmp_path / "round1" / "localhost_noderank0"
    # Trains for 6 s whatever the machine's speed: polls every second see it train.
    long = config(tmp_path, synthetic=True, max_epochs=10000, time_budget_s=6, log_freq=5)
    started = cli("launch", "--detach", "--config", str(long),
                  "--log-dir", str(node), "--run-id", run_id, "--no-monitors", "--timeout-s", "600")
    assert started["started"] and started["log"] == str(node / "launcher.log")
    launcher = started["launcher"]
    assert is_same(ProcessId.from_json(launcher)), "the launcher outlives the command that started it"

    polls = []
    while True:
        answer = cli("wait", *node_args(node, run_id, launcher), "--for-s", "1", "--timeout-s", "600")
        if answer["finished"]:
            break
        polls.append(answer)
        assert answer["status"] == "running" and answer["line"].endswith(" of 600 s")
        assert len(polls) < 300, "the round never ended"
    assert answer["status"] == "success" and answer["node_result"]["run_id"] == run_id
    training = [p["progress"] for p in polls if p["progress"]["phase"] == "training"]
    assert training, [p["line"] for p in polls]
    assert {"epoch", "step", "loss", "samples_per_s"} <= set(training[-1])
    assert run_pids(run_id) == []

    done = cli("finish", *node_args(node, run_id, launcher), "--archive", str(tmp_path / "node.tar.gz"))
    assert done["status"] == "success" and done["cleanup"] is None, "nothing to stop after a clean end"
    with tarfile.open(tmp_path / "node.tar.gz") as tar:
        names = set(tar.getnames())
    assert {"localhost_noderank0/node_result.json", "localhost_noderank0/rank0.events.jsonl"} <= names
    assert "localhost_noderank0/launcher.log" not in names, "a launcher that said nothing leaves no empty log"

    # The wait's last answer can bring the directory itself (a remote node then needs no finish), when small.
    inline = cli("wait", *node_args(node, run_id, launcher), "--for-s", "1", "--inline-archive", str(8 << 20))
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(inline["archive_b64"]))) as tar:
        assert set(tar.getnames()) == names
    too_big = cli("wait", *node_args(node, run_id, launcher), "--for-s", "1", "--inline-archive", "100")
    assert too_big["status"] == "success" and too_big["archive_b64"] is None, "then finish packs it into a file"


def test_finish_stops_a_launcher_the_wait_gave_up_on(tmp_path, run_id):
    node = tmp_path / "node"
    started = cli("launch", "--detach", "--config", str(config(tmp_path, max_steps=100000)),
                  "--log-dir", str(node), "--run-id", run_id, "--no-monitors")
    launcher = started["launcher"]
    answer = cli("wait", *node_args(node, run_id, launcher), "--for-s", "1")
    assert answer["finished"] is False
    done = cli("finish", *node_args(node, run_id, launcher), "--grace-s", "5")
    assert done["status"] == "failed" and done["reason"] == "the launcher was still running"
    assert launcher["pid"] in done["cleanup"]["terminated"] + done["cleanup"]["killed"]
    assert not is_same(ProcessId.from_json(launcher)) and run_pids(run_id) == []


def test_a_launcher_that_ends_without_a_result_is_a_failure_naming_its_log(tmp_path, run_id):
    node = tmp_path / "node"
    started = cli("launch", "--detach", "--config", str(tmp_path / "missing.json"), "--log-dir", str(node),
                  "--run-id", run_id)
    answer = cli("wait", *node_args(node, run_id, started["launcher"]), "--for-s", "120", "--inline-archive", "1000000")
    assert answer["finished"] and answer["status"] == "failed"
    assert "archive_b64" not in answer, "a node that failed comes back through finish, after its cleanup"
    assert answer["reason"].startswith("the launcher ended without writing node_result.json: ")
    assert "missing.json" in answer["reason"], "the tail of launcher.log says why"


def test_the_launch_makes_the_first_poll_itself_with_wait_s(tmp_path, run_id):
    """`launch --detach --wait-s`: the start and the wait's first poll in one command, so that the playbook's round
    shorter than a poll takes one module run on the controller; --wait-s stays with the start."""
    node = tmp_path / "node"
    ended = cli("launch", "--detach", "--wait-s", "120", "--config", str(tmp_path / "missing.json"),
                "--log-dir", str(node), "--run-id", run_id)
    assert ended["started"] and ended["wait"]["finished"] and ended["wait"]["status"] == "failed"
    assert "missing.json" in ended["wait"]["reason"], "the launcher was given its own arguments, not --wait-s"
    assert cli("wait", *node_args(node, run_id, ended["launcher"]), "--for-s", "1") == ended["wait"]

    running = cli("launch", "--detach", "--wait-s=1", "--config", str(config(tmp_path, max_steps=100000)),
                  "--log-dir", str(tmp_path / "long"), "--run-id", run_id, "--no-monitors", "--timeout-s", "600")
    assert running["wait"]["finished"] is False and running["wait"]["line"].endswith(" of 600 s")
    assert is_same(ProcessId.from_json(running["launcher"])), "the launcher runs on after the first poll"
    assert run("launch", "--wait-s", "1", "--config", "c.json", "--log-dir", str(node)).stderr.strip() == \
        "error: --wait-s goes with --detach (the launch a module starts on a host)"


def test_a_config_on_stdin_is_checked_and_written_before_the_launcher_starts(tmp_path, run_id):
    """A host that is not the controller gets the resolved config on launch's stdin (case_launch's
    config_content)."""
    sent = config(tmp_path, max_steps=2).read_text(encoding="utf-8")
    case_dir = tmp_path / "host" / "run" / "digits_cnn_CPUx1x1"
    received, node = case_dir / "resolved_config.json", case_dir / "round1" / "h_noderank0"
    args = ["launch", "--detach", "--config-stdin", "--config", str(received), "--log-dir", str(node), "--run-id",
            run_id, "--no-monitors"]
    bad = run(*args, stdin=json.dumps({**json.loads(sent), "nproc": "two"}))
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("error: --config-stdin: key 'nproc': expected ")
    assert not case_dir.exists(), "nothing written, nothing started"

    started = cli(*args, stdin=sent)
    assert received.read_text(encoding="utf-8") == sent
    assert received.parent.stat().st_mode & 0o777 == 0o700
    answer = cli("wait", *node_args(node, run_id, started["launcher"]), "--for-s", "120")
    while not answer["finished"]:
        answer = cli("wait", *node_args(node, run_id, started["launcher"]), "--for-s", "120")
    assert answer["status"] in ("success", "not_converged"), answer["reason"]
    assert run("launch", *args[2:], stdin=sent).stderr.strip() == \
        "error: --config-stdin goes with --detach (the launch a module starts on a host)"


def test_progress_reads_the_first_rank_s_last_events(tmp_path):
    with ev.EventLogger(tmp_path, 1, log_freq=1, stream=None) as log:
        log.event(ev.INIT_START)
    assert progress.progress(tmp_path) == {"phase": "initialising", "rank": 1}
    with ev.EventLogger(tmp_path, 0, log_freq=1, stream=None) as log:
        log.event(ev.TRAIN_START)
        log.event(ev.STEP_END, {"epoch": 1, "loss": 0.5, "rank_core_samples_per_s": 100.0}, step=10)
        log.event(ev.EVALUATE_BEGIN, {"epoch": 1, "step": 10})
        log.event(ev.EVALUATE, {"epoch": 1, "step": 10, "accuracy": 0.5, "eval_time": 1.0})
    state = progress.progress(tmp_path)
    assert state == {"phase": "training", "rank": 0, "epoch": 1, "step": 10, "loss": 0.5, "samples_per_s": 100.0,
                     "metric": {"accuracy": 0.5}}
    assert progress.describe(state) == "training: epoch 1, step 10, loss 0.5, 100.0 samples/s, accuracy 0.5 (rank 0)"


def test_the_inference_progress_names_the_step_running(tmp_path):
    """While step c (framework validation) runs, the line names it, not the last step done."""
    with ev.EventLogger(tmp_path, 0, log_freq=1, stream=None) as log:
        for step, name in (("a", "init"), ("b", "data and model")):
            log.event(ev.INFERENCE_STEP_BEGIN, {"step": step, "name": name})
            log.event(ev.INFERENCE_STEP, {"step": step, "name": name})
        log.event(ev.INFERENCE_STEP_BEGIN, {"step": "c", "name": "framework validation"})
    assert progress.describe(progress.progress(tmp_path)) == "inference: step c (framework validation) running (rank 0)"
    with ev.EventLogger(tmp_path, 0, log_freq=1, stream=None) as log:
        log.event(ev.INFERENCE_STEP, {"step": "c", "name": "framework validation"})
    assert progress.describe(progress.progress(tmp_path)) == "inference: step c (framework validation) done (rank 0)"


def test_progress_survives_a_long_file_and_a_line_being_written(tmp_path):
    with ev.EventLogger(tmp_path, 0, log_freq=1, stream=None) as log:
        for step in range(1, 2001):
            log.event(ev.STEP_END, {"epoch": 1, "loss": 1.0 / step}, step=step)
    with open(tmp_path / "rank0.events.jsonl", "a") as handle:
        handle.write('{"event": "STEP_END", "value": {"ep')  # half a line
    assert progress.progress(tmp_path)["step"] == 2000


def test_the_wait_reads_only_this_run_s_node_result_and_never_through_a_symlink(tmp_path):
    from case_runners.launch import waiting
    from case_runners.records.schema import RecordError

    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"run_id": "run-symlinked"}))
    (tmp_path / "node_result.json").symlink_to(elsewhere)
    assert waiting.read_node_result(tmp_path, "run-symlinked") is None
    (tmp_path / "node_result.json").unlink()
    (tmp_path / "node_result.json").write_text(json.dumps({"run_id": "run-another-one"}))
    assert waiting.read_node_result(tmp_path, "run-this-one") is None, "another run's is left alone"
    (tmp_path / "node_result.json").write_text("{")
    with pytest.raises(RecordError, match="is not JSON"):
        waiting.read_node_result(tmp_path, "run-this-one")
    assert waiting.ended(tmp_path, "run-this-one")["reason"].startswith("the launcher's node result is not valid: ")
