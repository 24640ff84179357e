"""Which processes are a run's, and stopping them: pid files with start times, the run id in the environment,
sessions, and decoys that merely mention a run id (a hostile test once had cleanup kill other runs' processes
and root daemons started with `--uid 0`)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from case_runners.core import pidfiles
from case_runners.core.paths import RESULTS_NAME, project_root
from case_runners.core.processes import ProcessId, identify, is_run_process, is_same, own_id, terminate
from case_runners.core.run_ids import RUN_ID_ENV
from case_runners.launch import cleanup
from process_helpers import REAPED_S, wait_for

RUN = "run20991231235959-abcdef"
def pid_file(node_dir: Path, role: str, proc: subprocess.Popen, run_id: str = RUN, **extra) -> Path:
    node_dir.mkdir(parents=True, exist_ok=True)
    path = pidfiles.pid_path(node_dir, role, run_id)
    pidfiles.write(path, identify(proc.pid), run_id, role=role, **extra)
    return path


def alive(proc: subprocess.Popen) -> bool:
    return proc.poll() is None


def test_a_process_is_the_run_s_only_with_pid_start_time_and_run_id_all_matching(sleepers):
    ours, foreign = sleepers(run_id=RUN), sleepers(run_id="other-run-id")
    ident = identify(ours.pid)
    assert is_run_process(ident, RUN)
    assert not is_run_process(ProcessId(ident.pid, ident.start + 1, ident.pidns), RUN), "a reused pid"
    assert not is_run_process(ProcessId(ident.pid, ident.start, (ident.pidns or 0) + 1), RUN), "another namespace"
    assert not is_run_process(identify(foreign.pid), RUN), "another run's"
    assert own_id().start > 0 and is_same(own_id())


def test_cleanup_stops_the_run_s_processes_and_spares_every_decoy(sleepers, tmp_path):
    run_dir = tmp_path / RUN
    node = run_dir / "digits_cnn_CPUx1x1" / "round1" / "localhost_noderank0"
    launcher = sleepers(run_id=RUN)
    rank = sleepers(run_id=RUN, session=True)
    pid_file(node, "launcher", launcher)
    pid_file(node, "rank0", rank)
    decoys = {
        "argv names the run id": sleepers("--run-id", RUN, "--name", "host"),
        "argv has --uid 0 (a root daemon)": sleepers("--uid", "0", "-e", f"perfplay_run_id={RUN}"),
        "the run id in its environment but no pid file": sleepers(run_id=RUN),
        "another run's process": sleepers(run_id=RUN + "x"),
    }
    reused = sleepers(run_id=RUN)  # named by a pid file whose start time is another process's
    ident = identify(reused.pid)
    pidfiles.write(pidfiles.pid_path(node, "rank1", RUN), ProcessId(ident.pid, ident.start - 5, ident.pidns), RUN)

    done = cleanup.stop_run(run_dir, RUN, grace_s=5)
    assert sorted(p["pid"] for p in done["processes"]) == sorted([launcher.pid, rank.pid])
    assert sorted(done["terminated"]) == sorted([launcher.pid, rank.pid]) and done["killed"] == []
    assert launcher.wait(timeout=30) == -signal.SIGTERM and rank.wait(timeout=30) == -signal.SIGTERM
    assert done["stale_pid_files"] == [str(pidfiles.pid_path(node, "rank1", RUN))]
    time.sleep(0.2)
    for what, decoy in decoys.items():
        assert alive(decoy), f"cleanup killed a decoy: {what}"
    assert alive(reused), "cleanup killed the process a stale pid file named (its pid was reused)"
    assert not pidfiles.pid_path(node, "rank1", RUN).exists(), "the stale pid file is removed"


def test_cleanup_takes_a_rank_s_session_and_what_it_left_behind(sleepers, tmp_path):
    """A rank leads its own session; its children with the run id (data-loader workers) go with it, also when
    the rank itself is already dead. A child without the run id is not the run's."""
    node = tmp_path / RUN / "node"
    kids_file = tmp_path / "kids"
    rank = sleepers(run_id=RUN, session=True, code=(
        "import subprocess\n"
        "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], env=env) for env in\n"
        f"        (dict(os.environ), {{k: v for k, v in os.environ.items() if k != {RUN_ID_ENV!r}}})]\n"
        f"open({str(kids_file)!r}, 'w').write(' '.join(str(k.pid) for k in kids))"))
    worker, stranger = (int(pid) for pid in kids_file.read_text().split())
    try:
        pid_file(node, "rank0", rank)
        found = {p["pid"]: p["role"] for p in cleanup.find_run(tmp_path / RUN, RUN)[0]}
        assert found == {rank.pid: "rank0", worker: "rank0 (child)"}

        rank.kill()  # the rank dies (as it does with its launcher): its worker is left behind in its session
        rank.wait(timeout=REAPED_S)
        found = {p["pid"]: p["role"] for p in cleanup.find_run(tmp_path / RUN, RUN)[0]}
        assert found == {worker: "rank0 (left behind)"}
        cleanup.stop_run(tmp_path / RUN, RUN, grace_s=5)
        assert wait_for(lambda: identify(worker) is None)
        assert identify(stranger) is not None
    finally:
        for pid in (worker, stranger):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_terminate_escalates_and_never_kills_a_pid_that_changed_hands(sleepers):
    polite = sleepers(run_id=RUN)
    stubborn = sleepers(run_id=RUN, code="signal.signal(signal.SIGTERM, signal.SIG_IGN)")
    gone = ProcessId(999999999, 1)
    terminated, killed = terminate([identify(polite.pid), identify(stubborn.pid), gone], grace_s=0.5)
    assert terminated == [polite.pid] and killed == [stubborn.pid]
    assert polite.wait(30) == -signal.SIGTERM and stubborn.wait(30) == -signal.SIGKILL


def test_check_mode_lists_and_changes_nothing(sleepers, tmp_path):
    node = tmp_path / RUN / "node"
    proc = sleepers(run_id=RUN)
    path = pid_file(node, "launcher", proc)
    done = cleanup.stop_run(tmp_path / RUN, RUN, grace_s=1, check=True)
    assert [p["pid"] for p in done["processes"]] == [proc.pid] and done["terminated"] == []
    assert alive(proc) and path.exists()


def test_a_pid_file_is_created_new_and_never_through_a_symlink(tmp_path):
    me = own_id()
    path = pidfiles.pid_path(tmp_path, "launcher", RUN)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    path.symlink_to(victim)
    with pytest.raises(FileExistsError):
        pidfiles.write(path, me, RUN)
    assert pidfiles.read(path) is None, "a symlink is not read either"
    assert victim.read_text() == "precious"
    path.unlink()
    with pidfiles.held(path, me, RUN, role="launcher"):
        assert pidfiles.read(path)["id"] == me and pidfiles.live(path, RUN) is None  # no run id in our env
    assert not path.exists()


def test_the_sweep_after_a_failed_round_touches_that_round_only(sleepers, tmp_path):
    """A failed round's sweep once killed other runs' ranks and monitors; it now reads only its node directory."""
    run_dir = tmp_path / RUN
    failed_round = run_dir / "digits_cnn_CPUx1x1" / "round1" / "localhost_noderank0"
    other_round = run_dir / "bert_CPUx1x1" / "round1" / "localhost_noderank0"
    leftover, running = sleepers(run_id=RUN), sleepers(run_id=RUN)
    pid_file(failed_round, "rank0", leftover)
    pid_file(other_round, "launcher", running)
    done = cleanup.stop_run(failed_round, RUN, grace_s=5)
    assert [p["pid"] for p in done["processes"]] == [leftover.pid]
    assert leftover.wait(timeout=30) == -signal.SIGTERM
    assert alive(running)


def test_cleanup_without_a_dir_looks_in_the_checkout_s_results(sleepers):
    """`case_runners cleanup` without --dir takes the run directory the playbook's default results root gives it."""
    run_id = f"run20991231235959-{os.getpid():06x}"[:24]
    run_dir = project_root() / RESULTS_NAME / run_id
    try:
        stray = sleepers(run_id=run_id)
        pid_file(run_dir / "c" / "round1" / "localhost_noderank0", "launcher", stray, run_id=run_id)
        done = subprocess.run([sys.executable, "-m", "case_runners", "cleanup", "--run-id", run_id, "--grace-s", "5"],
                              cwd=project_root(), capture_output=True, text=True, timeout=120, check=True)
        assert json.loads(done.stdout)["terminated"] == [stray.pid]
        assert stray.wait(timeout=30) == -signal.SIGTERM
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
