"""Each bench script whose quick mode runs a playbook or trains a model, run for real in quick mode (one pair, the
smallest work): it measures, prints its figure with its spread, the load and CPU time, and, one pair having no
spread, says CANNOT JUDGE and exits non-zero, never PASS. The rule itself and the cheap scripts:
tests/unit/test_bench.py."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys

import pytest

from bench.verdict import CANNOT_JUDGE
from case_runners.core.paths import project_root
from process_helpers import REAPED_S

ROOT = project_root()
# A bound on a hang, never on speed: on a 2-core host at load 15-20, harness_overhead's quick pair took 10 min.
TIMEOUT_S = 1800
# (script, what its verdict line says); bench/control_plane.py joins this list with its own quick mode.
QUICK_SCRIPTS = [
    ("harness_overhead", "playbook overhead per round (wall)"),
    ("fidelity", "fidelity: harness / bare"),
    ("inference", "p_inference_whole / p_inference_core"),
]


def run_quick(script: str, *options: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `python -m bench.<script> --quick <options>`, run for real."""
    proc = subprocess.Popen([sys.executable, "-m", f"bench.{script}", "--quick", *options], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
    finally:  # whatever of its session is left: the script's own children too (ansible-playbook, the runner, ranks)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=REAPED_S)
    return proc.returncode, stdout, stderr


@pytest.mark.parametrize(("script", "figure"), QUICK_SCRIPTS, ids=[script for script, _ in QUICK_SCRIPTS])
def test_quick_mode_measures_and_one_pair_cannot_be_judged(script, figure):
    returncode, stdout, stderr = run_quick(script)
    assert returncode == 1, stdout[-3000:] + stderr[-3000:]
    verdict = [line for line in stdout.splitlines() if line.startswith(f"{figure}: median")]
    assert len(verdict) == 1 and verdict[0].endswith(f"{CANNOT_JUDGE}: 1 measured, at least 3 needed to tell the "
                                                     "figure from the noise"), stdout[-3000:]
    assert "load average (1 min) during the run" in stdout
    assert " s CPU" in stdout or "CPU s" in stdout  # CPU time beside wall time
    if script == "harness_overhead":  # the smallest pair: each way at 1 and 2 rounds, not 3
        assert {line.split("rounds=")[1].split(":")[0] for line in stdout.splitlines() if " rounds=" in line} == \
            {"1", "2"}, stdout[-3000:]


# pair 1 <stack>: first step at F s (before init B s, init I s, step 1 S s); round ...
RUN_LINE = re.compile(r"pair 1 (\w+)\s*: first step at\s+([\d.]+) s \(before init\s+([\d.]+) s, init\s+([\d.]+) s, "
                      r"step 1\s+([\d.]+) s\)")


def test_stack_launch_quick_times_a_real_first_step_on_pytorch_and_deepspeed():
    """bench/stack_launch.py --quick on one stack beside pytorch (two real runs of llama tiny, the smallest pair):
    each run's time to first step holds its time before init, its init and its step 1; the pair's difference
    against pytorch is printed with the CPU time and the load, and one pair is CANNOT JUDGE, exit 1, never PASS."""
    returncode, stdout, stderr = run_quick("stack_launch", "--stacks", "deepspeed")
    assert returncode == 1, stdout[-3000:] + stderr[-3000:]
    runs = {m[1]: [float(x) for x in m.groups()[1:]] for m in map(RUN_LINE.match, stdout.splitlines()) if m}
    assert set(runs) == {"pytorch", "deepspeed"}, stdout[-3000:]
    for first_step, before_init, init, step1 in runs.values():
        assert 0 < before_init and 0 < init and 0 < step1, stdout[-3000:]
        # the three phases come one after the other within the first step's time (each printed to 0.01 s)
        assert before_init + init + step1 <= first_step + 0.03, stdout[-3000:]
    assert "time to first step minus pytorch's: median" in stdout and "the round (CPU) minus pytorch's" in stdout
    assert "load average (1 min) during the run" in stdout
    verdict = [line for line in stdout.splitlines() if line.startswith("deepspeed time to first step over")]
    assert len(verdict) == 1 and verdict[0].endswith(f"{CANNOT_JUDGE}: 1 measured, at least 3 needed to tell the "
                                                     "figure from the noise"), stdout[-3000:]
