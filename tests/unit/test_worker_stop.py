"""A rank stops on one SIGTERM (or SIGINT) wherever it is: within the launcher's grace, with exit code 128 + the
signal and a failed result that names the signal and the phase. Every process a test starts is killed in a
finally. The only bound asserted on a real rank is the design's (RANK_EXIT_GRACE_S); the waits for a phase to begin
are not bounds. Where the worker's watchdog ends the process, what is asserted is that it did, and not before its
share of the grace: a busy box can only make it later, and its deadline is a fixed share of RANK_EXIT_GRACE_S."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from case_runners.core.paths import project_root
from case_runners.launch.node import RANK_EXIT_GRACE_S
from case_runners.plan.run_plan import make_plan
from case_runners.rank.driver.events import read_events
from case_runners.rank.stop_request import GRACE_SHARE
from process_helpers import REAPED_S

DIST_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT")
POLL_S = 0.01
REACH_S = 600  # time for a worker to reach the phase under test on a loaded machine; not a bound under test
TRAIN_FOREVER = {"synthetic": True, "max_epochs": 0, "eval_every_epochs": 0}


def resolved(tmp_path: Path, selection: dict) -> Path:
    plan = make_plan({"vendor": "cpu", "results_dir": str(tmp_path / "results"), "cases": [selection]})
    assert plan["ok"], plan["errors"]
    return Path(plan["cases"][0]["config_path"])


def start(argv: list[str], output: Path, piped: bool = False) -> subprocess.Popen:
    """argv started in the project root as a single rank; stderr (and stdout unless piped) to output."""
    env = {k: v for k, v in os.environ.items() if k not in DIST_ENV}
    with output.open("w") as out:
        return subprocess.Popen(argv, env=env, cwd=project_root(), stdout=subprocess.PIPE if piped else out,
                                stderr=out, text=True)


def start_worker(config: Path, log_dir: Path) -> subprocess.Popen:
    return start([sys.executable, "-m", "case_runners", "worker", "--config", str(config), "--log-dir",
                  str(log_dir)], log_dir.parent / "worker.out.log")


def handles_sigterm(proc: subprocess.Popen, _log_dir: Path) -> bool:
    """The worker has installed its handler (the SigCgt mask of /proc/<pid>/status): it is importing."""
    status = Path(f"/proc/{proc.pid}/status").read_text()
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(mask, 16) >> (signal.SIGTERM - 1) & 1)


def logged(text: str) -> Callable[[subprocess.Popen, Path], bool]:
    """A rank-0 event line containing text has been written."""
    def seen(_proc: subprocess.Popen, log_dir: Path) -> bool:
        path = log_dir / "rank0.events.jsonl"
        return path.exists() and text in path.read_text()
    return seen


def wait_until(proc: subprocess.Popen, log_dir: Path, ready: Callable[[subprocess.Popen, Path], bool]) -> None:
    deadline = time.monotonic() + REACH_S
    while not ready(proc, log_dir):
        assert proc.poll() is None, f"the worker exited with {proc.returncode} early:\n" + \
            (log_dir.parent / "worker.out.log").read_text()[-3000:]
        assert time.monotonic() < deadline, f"the worker did not reach the phase in {REACH_S} s"
        time.sleep(POLL_S)


def stop(proc: subprocess.Popen, signum: int, within: float = RANK_EXIT_GRACE_S) -> float:
    """Send signum once; the seconds until the process exits (TimeoutExpired after `within`)."""
    sent = time.monotonic()
    proc.send_signal(signum)
    proc.wait(timeout=within)
    return time.monotonic() - sent


def kill(proc: subprocess.Popen) -> None:
    proc.kill()  # nothing when it has exited
    proc.wait(timeout=REAPED_S)


def big_digits(tmp_path: Path) -> str:
    """Digits-shaped data with 50,000 held-out images: an evaluation at batch size 1 takes many seconds."""
    n = 250_000
    path = tmp_path / "digits.npz"
    np.savez(path, images=np.random.default_rng(0).integers(0, 17, (n, 8, 8), dtype=np.uint8),
             labels=np.arange(n) % 10)
    return str(path)


PHASES = {  # phase: (overrides, data, when to signal, the reason's phase)
    "import": (TRAIN_FOREVER, None, handles_sigterm, "import"),
    "init": (TRAIN_FOREVER, None, logged('"event": "INIT_START"'), "init"),
    "training": (TRAIN_FOREVER, None, logged('"event": "STEP_END"'), "training at step "),
    "evaluation": ({"eval_every_steps": 1, "eval_batch_size": 1}, big_digits, logged('"event": "EVALUATE_BEGIN"'),
                   "evaluation after step 1"),
}


@pytest.mark.parametrize(("phase", "signum"), [*(pytest.param(phase, signal.SIGTERM, id=phase) for phase in PHASES),
                                               pytest.param("training", signal.SIGINT, id="training-sigint")])
def test_sigterm_leaves_a_failed_result(tmp_path, phase, signum):
    overrides, data, ready, named = PHASES[phase]
    config = resolved(tmp_path, {"case": "digits_cnn", "overrides": overrides,
                                 "data_dir": data(tmp_path) if data else None})
    log_dir = tmp_path / "logs"
    proc = start_worker(config, log_dir)
    try:
        wait_until(proc, log_dir, ready)
        seconds = stop(proc, signum)
    finally:
        kill(proc)
    result = json.loads((log_dir / "rank0.result.json").read_text())
    print(f"{phase}, {signal.Signals(signum).name}: exit {proc.returncode} {seconds:.2f} s after the signal, "
          f"reason: {result['reason']}")
    assert proc.returncode == 128 + signum and seconds < RANK_EXIT_GRACE_S
    said = "terminated by signal SIGTERM" if signum == signal.SIGTERM else "interrupted by SIGINT"
    assert result["status"] == "failed" and result["reason"].startswith(f"{said} during {named}")
    events = [e["event"] for e in read_events(log_dir / "rank0.events.jsonl")]
    if "watchdog" not in result["reason"]:  # the normal path, not the forced one
        assert events[-1] == "FINISHED"
    if phase == "import":
        assert set(events) <= {"FINISHED"}


def test_an_inference_rank_stops_mid_pipeline(tmp_path):
    # the functional shape: step b trains the model for 2 epochs, not 15 (its accuracy is not under test)
    config = resolved(tmp_path, {"case": "digits_cnn", "task": "inference", "functional": True,
                                 "overrides": {"batch_size": 1, "repeat": 1000}})  # step c: 360,000 batches
    log_dir = tmp_path / "logs"
    proc = start_worker(config, log_dir)
    try:
        wait_until(proc, log_dir, logged('"event": "INFERENCE_STEP", "value": {"step": "b"'))
        seconds = stop(proc, signal.SIGTERM)
    finally:
        kill(proc)
    result = json.loads((log_dir / "rank0.result.json").read_text())
    print(f"inference: exit {proc.returncode} {seconds:.2f} s after SIGTERM, reason: {result['reason']}")
    assert proc.returncode == 128 + signal.SIGTERM and seconds < RANK_EXIT_GRACE_S
    assert result["status"] == "failed"
    assert result["reason"].startswith("terminated by signal SIGTERM during inference step c (framework validation)")


SCRIPT = """\
import os, signal, sys, time
from pathlib import Path
from case_runners.launch.node import RANK_EXIT_GRACE_S
from case_runners.rank import stop_request

result = Path(sys.argv[1])
stop_request.install(RANK_EXIT_GRACE_S, result.write_text)
print("installed", flush=True)
try:
{body}
except stop_request.Stopped as stopped:
    stop_request.write_result(lambda: result.write_text(str(stopped)), stopped.request.exit_code)
    stop_request.end_if_requested(stopped.request.exit_code)
"""
MAIN_THREADS = {  # what the main thread does: (code, the phase it names, stopped by the watchdog)
    "swallows Exception": ("""
        while True:
            try:
                stop_request.check("a loop that swallows Exception")
                time.sleep(0.01)
            except Exception:
                pass
        """, "a loop that swallows Exception", False),
    "swallows everything": ("""
        while True:
            try:
                stop_request.check("a loop that swallows everything")
                time.sleep(0.01)
            except BaseException:
                pass
        """, "a loop that swallows everything", True),
    "checks only in a finalizer": ("""
        class Resource:
            def __del__(self):
                stop_request.check("a finalizer")  # what it raises is printed and lost
        while True:
            Resource()
            time.sleep(0.01)
        """, "a finalizer", True),
    # No check of its own after the phase's: one there would raise when the signal comes before it (a loaded box
    # delays the script more than the test), and the rank would stop without the watchdog.
    "waits in one long call": ("""
        time.sleep(3600)
        """, "one long call", True),
}
# when the worker's watchdog ends a rank that has not stopped, after the signal
WATCHDOG_S = RANK_EXIT_GRACE_S * GRACE_SHARE


def run_script(tmp_path: Path, body: str, phase: str | None = None) -> tuple[subprocess.Popen, Path]:
    """The script with body as its main thread's work, started; returns once the stop is installed (and, with
    phase, once the main thread is in that phase: a signal before it would find the rank still in "import")."""
    result = tmp_path / "result.txt"
    body = textwrap.dedent(body).strip()
    if phase:
        body = f"stop_request.check({phase!r})\nprint('in phase', flush=True)\n{body}"
    code = SCRIPT.format(body=textwrap.indent(body, "    "))
    proc = start([sys.executable, "-c", code, str(result)], tmp_path / "out.log", piped=True)
    assert proc.stdout.readline() == "installed\n", (tmp_path / "out.log").read_text()
    if phase:
        assert proc.stdout.readline() == "in phase\n", (tmp_path / "out.log").read_text()
    return proc, result


def test_the_watchdog_ends_a_rank_within_the_launcher_s_grace():
    assert 0 < WATCHDOG_S < RANK_EXIT_GRACE_S


@pytest.mark.parametrize("main_thread", MAIN_THREADS)
def test_the_stop_happens_whatever_the_main_thread_does(tmp_path, main_thread):
    body, named, forced = MAIN_THREADS[main_thread]
    proc, result = run_script(tmp_path, body, phase=named)
    try:
        seconds = stop(proc, signal.SIGTERM, within=REACH_S)  # it ends itself: no SIGKILL here to beat
    finally:
        kill(proc)
    reason = result.read_text()
    print(f"{main_thread}: exit {proc.returncode} {seconds:.2f} s after SIGTERM, reason: {reason}")
    assert proc.returncode == 128 + signal.SIGTERM
    assert reason.startswith(f"terminated by signal SIGTERM during {named}")
    if forced:
        assert reason.endswith(f"(ended by the worker's watchdog: no stop check within {WATCHDOG_S:g} s)")
        assert seconds >= WATCHDOG_S
    else:
        assert "watchdog" not in reason


def test_a_forked_child_has_the_default_handlers_back(tmp_path):
    """A DataLoader worker forked from the rank dies of SIGTERM as before, and its signal does not stop the rank."""
    proc, result = run_script(tmp_path, f"""
        child = os.fork()
        if child == 0:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(60)
            os._exit(0)
        _, status = os.waitpid(child, 0)
        print(os.WTERMSIG(status) if os.WIFSIGNALED(status) else "exit", flush=True)
        time.sleep({WATCHDOG_S} + 1)  # the watchdog would have ended the rank by now
        stop_request.check("after the child")
        """)
    try:
        child = proc.stdout.readline()
        proc.wait(timeout=REACH_S)
    finally:
        kill(proc)
    assert child == f"{int(signal.SIGTERM)}\n"
    assert proc.returncode == 0 and not result.exists()


def test_the_watchdog_keeps_the_result_the_rank_wrote(tmp_path):
    """A rank that wrote its result and then hangs (a teardown that never ends) exits with that result's code;
    the watchdog writes nothing over it."""
    proc, result = run_script(tmp_path, """
        stop_request.write_result(lambda: result.write_text("the rank's own result"), 0)
        print("written", flush=True)
        time.sleep(3600)
        """)
    try:
        assert proc.stdout.readline() == "written\n"
        seconds = stop(proc, signal.SIGTERM, within=REACH_S)
    finally:
        kill(proc)
    assert proc.returncode == 0 and seconds >= WATCHDOG_S, "the watchdog ended it, with the rank's exit code"
    assert result.read_text() == "the rank's own result"
