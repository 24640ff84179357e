"""bench/: the one verdict rule (PASS / MISSED / CANNOT JUDGE from per-pair values and their spread), the per-pair
costs the playbook benches judge, and the cheap scripts run for real in quick mode: a missed target and a figure the
noise swamps exit non-zero, never PASS. (The scripts whose quick mode runs a playbook or trains a model:
tests/integration/test_bench_quick.py.)"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from bench.alternation import QUICK_ROUNDS, Timing, add_pair_options, added_costs, judge_added, round_counts
from bench.verdict import CANNOT_JUDGE, IQR_FROM, MISSED, PASS, bounded, judge, parse_target, spread
from case_runners.core.paths import project_root

ROOT = project_root()
TIMEOUT_S = 300  # a loaded CI host: torch's import alone can take tens of seconds


def bench(*argv: str) -> subprocess.CompletedProcess[str]:
    """python -m bench.<argv...> in the checkout, for real."""
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, check=False,
                          timeout=TIMEOUT_S)


# A command whose child detaches (its own session, its parent gone) and then burns CPU_S of CPU: the playbook's
# background launcher and its ranks, in small.
DETACHING = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while time.process_time() < float(sys.argv[1]):
            pass
    os._exit(0)
os.wait()
"""
CPU_S = 0.5


def test_the_cpu_of_a_side_counts_what_detached_from_it():
    """bench/alternation's CPU time is the whole tree's: it counted only the processes the command waited for, so
    the playbook's detached ranks were missing and its CPU per round came out negative against the direct runner.
    In a process of its own: the bench reaps every child of the process it runs in."""
    code = ("import json, sys; from bench.alternation import run_timed; "
            f"proc, timing = run_timed([sys.executable, '-c', {DETACHING!r}, '{CPU_S}']); "
            "print(json.dumps([proc.returncode, timing.cpu]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          timeout=TIMEOUT_S)
    rc, cpu = json.loads(done.stdout)
    assert rc == 0 and cpu >= CPU_S, cpu


def test_what_detached_and_does_not_end_is_ended_and_reaped():
    """An orphan that never ends on its own (an ssh ControlMaster) is ended after the grace, and reaped."""
    code = ("import json, os, sys; from bench.process_tree import run_tree; "
            "proc, wall, cpu = run_tree(['sh', '-c', 'sleep 600 >/dev/null 2>&1 & echo $!'], 0.2); "
            "print(json.dumps([proc.returncode, os.path.exists(f'/proc/{proc.stdout.strip()}')]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          timeout=TIMEOUT_S)
    assert json.loads(done.stdout) == [0, False]


def test_one_pair_is_never_a_pass_even_far_inside_the_target():
    """`python -m bench.harness_overhead --pairs 1` printed a per-round overhead of -3.29 s and PASS."""
    result = judge([-3.29], bounded(high=1.5))
    assert (result.verdict, result.exit_code) == (CANNOT_JUDGE, 1)
    assert "1 measured, at least 3 needed" in result.line("overhead", " s")


@pytest.mark.parametrize(("values", "verdict"), [
    ([0.2, 0.4, 0.3], PASS),  # the whole spread inside the target
    ([2.0, 1.6, 2.2], MISSED),  # the whole spread beyond it
    ([1.2, 1.7, 1.3], CANNOT_JUDGE),  # the spread straddles the bound
    ([-3.0, 0.1, 1.0], CANNOT_JUDGE),  # inside, but the spread (4 s) is wider than the 1.5 s target itself
])
def test_the_verdict_comes_from_the_pairs_spread_against_the_target(values, verdict):
    result = judge(values, bounded(high=1.5))
    assert result.verdict == verdict
    assert result.exit_code == (0 if verdict == PASS else 1)
    assert result.median == sorted(values)[1] and (result.low, result.high) == (min(values), max(values))


def test_a_band_target_and_a_lower_bound():
    band = bounded(0.98, 1.02)
    assert judge([0.99, 1.0, 1.01], band).verdict == PASS
    assert judge([1.03, 1.05, 1.04], band).verdict == MISSED
    assert judge([0.97, 1.0, 1.01], band).verdict == CANNOT_JUDGE
    assert judge([0.85, 0.9, 0.88], bounded(0.8)).verdict == PASS
    assert judge([0.5, 0.6, 0.7], bounded(0.8)).verdict == MISSED


def test_many_pairs_are_spread_by_their_interquartile_range():
    values = [1.0] * (IQR_FROM - 1) + [9.0]  # one pair hit by the host's worst moment
    assert spread(values) == (1.0, 1.0, "IQR")
    assert spread(values[1:]) == (1.0, 9.0, "min..max")
    assert judge(values, bounded(0.98, 1.02)).verdict == PASS


def test_parse_target_names_what_it_wants():
    assert (parse_target("..1.5").low, parse_target("..1.5").high) == (-math.inf, 1.5)
    assert (parse_target("0.98..1.02").low, parse_target("0.98..1.02").high) == (0.98, 1.02)
    for bad in ("1.5", "a..b", "..", "2..1"):
        with pytest.raises(Exception, match="LOW..HIGH|low bound is above"):
            parse_target(bad)


def pair(way: tuple[float, float], baseline: tuple[float, float]) -> dict[tuple[str, int], Timing]:
    """One pair's four runs, (1 round, 3 rounds) wall seconds each way; CPU time half the wall time."""
    return {(name, rounds): Timing(wall, wall / 2) for name, walls in (("docker", way), ("host", baseline))
            for rounds, wall in zip((1, 3), walls)}


def test_container_overhead_judges_each_pairs_own_difference(capsys):
    """Each pair's docker runs cost 4 s a round more than its host runs, while the host's speed and the fixed cost
    vary from pair to pair. The medians of each side (the old figure) take each column's middle from another pair:
    ((49 - 20) - (35 - 20)) / 2 = 7 s."""
    measured = [pair((12, 30), (10, 20)), pair((36, 49), (30, 35)), pair((20, 68), (20, 60))]
    result = judge_added(measured, "docker", "host", bounded(high=5.0), "docker runtime added per round (wall)")
    assert (result.verdict, result.median, result.low, result.high, result.exit_code) == (PASS, 4.0, 4.0, 4.0, 0)
    out = capsys.readouterr().out
    assert "per round: median 4.00 s (min..max 4.00..4.00)" in out  # wall, with its spread
    assert "per round: median 2.00 CPU s (min..max 2.00..2.00)" in out  # CPU beside it
    assert "docker runtime added per round (wall): median 4.00 s" in out and PASS in out
    assert judge_added(measured, "docker", "host", bounded(high=3.0), "docker per round").verdict == MISSED


def test_a_quick_pair_at_1_and_2_rounds_splits_into_fixed_and_per_round_costs():
    """--quick runs each way at 1 and 2 rounds: the per-round cost is over one further round, not two."""
    quick = {(name, rounds): Timing(wall, wall / 2) for name, walls in (("docker", (12, 16)), ("host", (10, 11)))
             for rounds, wall in zip(QUICK_ROUNDS, walls)}
    assert added_costs(quick, "docker", "host") == (-1.0, 3.0)  # (16 - 12) - (11 - 10) a round; 2 - 3 fixed
    assert added_costs(quick, "docker", "host", "cpu") == (-0.5, 1.5)


def test_more_rounds_divide_the_per_round_figure_by_the_further_rounds():
    """--rounds 9: each way at 1 and 9 rounds, so what a further round adds is the difference over 8 rounds."""
    import argparse

    parser = argparse.ArgumentParser()
    add_pair_options(parser, "a/b", "steps", (60, 5), bounded(high=1.0), "target")
    assert round_counts(parser.parse_args([])) == (1, 3) and round_counts(parser.parse_args(["--quick"])) == (1, 2)
    assert round_counts(parser.parse_args(["--rounds", "9"])) == (1, 9)
    many = {(name, rounds): Timing(wall, wall) for name, walls in (("playbook", (14, 30)), ("direct", (10, 18)))
            for rounds, wall in zip((1, 9), walls)}
    assert added_costs(many, "playbook", "direct") == (3.0, 1.0)  # ((30 - 14) - (18 - 10)) / 8 a round; 4 - 1 fixed
    with pytest.raises(SystemExit):
        parser.parse_args(["--rounds", "1"])


def test_container_overhead_one_pair_cannot_be_judged(capsys):
    result = judge_added([pair((20, 21), (20, 27.58))], "docker", "host", bounded(high=3.0), "docker per round")
    assert (result.verdict, round(result.median, 2)) == (CANNOT_JUDGE, -3.29)


def test_monitor_cost_fails_when_no_monitor_started():
    proc = bench("bench.monitor_cost", "--quick", "--monitors", "nosuch")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL: nosuch monitor did not start" in proc.stdout and "nothing measured" in proc.stdout
    assert "no monitor plugin for vendor 'nosuch'" in proc.stderr  # why


def test_monitor_cost_quick_measures_both_monitors_and_an_impossible_budget_never_passes():
    proc = bench("bench.monitor_cost", "--quick", "--target-pct", "0")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()
            if line.split()[:1] in (["host"], ["cpu"]) and line.split()[1].isdigit()]
    assert [row[0] for row in rows] == ["host", "cpu"], proc.stdout
    assert all(int(row[1]) > 0 for row in rows), proc.stdout  # each wrote samples
    assert all(MISSED in " ".join(row) or CANNOT_JUDGE in " ".join(row) for row in rows), proc.stdout
    assert "load average (1 min) during the run" in proc.stdout


def test_gemm_honesty_quick_one_pair_cannot_judge_and_an_impossible_target_is_missed():
    quick = bench("bench.gemm_honesty", "--quick")
    assert quick.returncode == 1, quick.stdout + quick.stderr
    assert f"{CANNOT_JUDGE}: 1 measured" in quick.stdout and "s CPU" in quick.stdout
    # far enough that no noise reaches it (a loaded host has given one pair a ratio of 31)
    missed = bench("bench.gemm_honesty", "--quick", "--pairs", "3", "--target", "1000..1001")
    assert missed.returncode == 1, missed.stdout + missed.stderr
    assert f"over 3) {MISSED}: target 1000..1001" in missed.stdout


def test_operator_timing_quick_times_mm_and_add_both_ways_and_one_pair_cannot_judge():
    quick = bench("bench.operator_timing", "--quick")
    assert quick.returncode == 1, quick.stdout + quick.stderr
    for op in ("mm", "add"):
        assert f"{op} pair  1: harness " in quick.stdout and f"operator timing {op}: harness / bare" in quick.stdout
    assert quick.stdout.count(f"{CANNOT_JUDGE}: 1 measured") == 2, quick.stdout



def test_operator_timing_bare_loop_takes_the_harness_s_statistic_the_median_of_single_calls(monkeypatch):
    """One call of three slowed down (another process, on a busy box) moves a block's mean, not the median the
    harness reports: the bare side takes the median too."""
    import time

    import torch

    from bench import operator_timing

    slow = [0.5]

    def call(x):
        time.sleep(slow.pop() if slow else 0.001)
        return x

    monkeypatch.setattr(operator_timing, "inputs", lambda op, shape, dtype: (torch.zeros(1),))
    monkeypatch.setitem(operator_timing.OPS, "slowed", (None, call))
    seconds = operator_timing.bare("slowed", {}, "FP32", torch.device("cpu"), lambda: None, 0, 3)
    assert not slow and seconds < 0.1, f"{seconds} s: a mean of the three calls would be over 0.16 s"

def test_fidelity_image_bare_loop_trains_the_case_s_model_at_the_harness_s_threads():
    """bench/fidelity_image.py's bare loop (its quick pair runs the whole case: too slow for CI): written apart from
    the case, it builds the model the case trains (the same parameters), at the thread count it is given, and times
    real steps."""
    import torch

    from bench import fidelity_image
    from case_runners.cases.mobilenetv2.case import build_case
    from case_runners.tasks.training.case_api import RunContext
    from record_helpers import resolved

    tiny = {"synthetic": True, "image_size": 32, "batch_size": 2, "synthetic_samples": 8, "depth_multiplier": 0.35,
            "num_classes": 10}
    params = resolved("mobilenetv2", overrides=tiny)["params"]
    threads = torch.get_num_threads()  # the process's: the loop sets it
    measured = fidelity_image.bare_loop(params, steps=2, threads=threads)
    assert measured["p"] > 0 and measured["threads"] == threads
    start, end = measured["window"]  # where the page-fault watch counts its steps' faults
    assert start < end
    case = build_case(params, RunContext(0, 0, 1, torch.device("cpu"), None, None))  # type: ignore[arg-type]
    with torch.device("meta"):
        assert measured["parameters"] == sum(w.numel() for w in case.build_model().parameters())


def test_fidelity_llama_pair_resolves_and_its_bare_loop_trains_the_case_s_model():
    """bench/fidelity.py --case llama (its quick pair trains the case for real: too slow for CI): the harness's
    overrides resolve, and the bare transformers loop, written apart from the case, builds the model the case trains
    (the same parameters) at the harness's shape and the threads it is given, and times real steps (tokens/s)."""
    import torch

    from bench import fidelity
    from case_runners.cases.llama.case import build_case
    from case_runners.tasks.training.case_api import RunContext
    from record_helpers import resolved

    assert resolved("llama", overrides={**fidelity.LLAMA_OVERRIDES, "max_steps": 2})["params"]["seq_len"] == 256
    params = resolved("llama", overrides={**fidelity.LLAMA_OVERRIDES, "seq_len": 8, "batch_size": 2, "max_steps": 2,
                                          "warmup_steps": 1})["params"]
    threads = torch.get_num_threads()  # the process's: the loop sets it
    measured = fidelity.llama_bare_loop(params, steps=2, threads=threads)
    assert measured["p"] > 0 and measured["threads"] == threads
    case = build_case(params, RunContext(0, 0, 1, torch.device("cpu"), None, None))  # type: ignore[arg-type]
    with torch.device("meta"):
        assert measured["parameters"] == sum(w.numel() for w in case.build_model().parameters())


def test_fidelity_pairs_are_the_cases_it_names(capsys):
    """--case picks the pair; another name is refused with the allowed ones before anything runs."""
    from bench import fidelity

    assert set(fidelity.PAIRS) == {"resnet50", "llama"}
    with pytest.raises(SystemExit) as exit_info:
        fidelity.main(["--case", "vit", "--quick"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "--case: invalid choice: 'vit'" in err and "'llama', 'resnet50'" in err


def test_fidelity_resnet50_bare_loop_runs_at_the_harness_s_threads():
    """The resnet50 pair's bare loop set torch's threads to every core whatever the harness's rank ran at: with
    OMP_NUM_THREADS=1 exported the pair compared a 1-thread rank with a 2-thread loop. It runs at the threads it is
    given (one real step)."""
    from bench import fidelity

    measured, timing = fidelity.resnet50_bare(steps=1, threads=1)
    assert measured["threads"] == 1 and measured["p"] > 0 and timing.cpu > 0


def test_stack_launch_times_the_first_step_from_the_command_s_start(monkeypatch, tmp_path):
    """bench/stack_launch.py's figures of one run, from rank 0's events as the rank's EventLogger writes them (its
    clock set): time to first step is STEP_END of step 1 minus the command's start, not step 2's, nor from
    INIT_START; init is INIT_END's init_time."""
    from bench import stack_launch
    from case_runners.rank.driver import events as ev
    from case_runners.rank.driver.events import EventLogger, read_events

    started = 1000.0
    clock = iter([started + s for s in (4.0, 5.0, 11.0, 11.2, 11.5, 11.6, 11.9)])
    monkeypatch.setattr(ev.time, "time", lambda: next(clock))
    with EventLogger(tmp_path, 0, log_freq=1, stream=None) as log:
        log.event(ev.SUBMIT_INFO)
        log.event(ev.INIT_START)
        log.event(ev.INIT_END, {"init_time": 5.98})
        for step in (1, 2):
            log.event(ev.STEP_BEGIN, step=step)
            log.event(ev.STEP_END, {"loss": 5.0}, step=step)
    monkeypatch.undo()
    events = read_events(tmp_path / "rank0.events.jsonl")
    run = stack_launch.launch_figures(events, started, wall=17.0, cpu=13.0)
    assert (run.first_step, run.before_init, run.init, run.wall, run.cpu) == (11.5, 5.0, 5.98, 17.0, 13.0)
    assert round(run.step1, 3) == 0.3
    with pytest.raises(ValueError, match="no STEP_END event of step 1 in rank 0's events"):
        stack_launch.launch_figures([e for e in events if e["event"] != ev.STEP_END], started, 17.0, 13.0)


def launches(first_steps: dict[str, tuple[float, ...]]) -> list[dict]:
    """Pairs of stack_launch runs whose times to first step are given, stack by stack; the other figures fixed."""
    from bench.stack_launch import Launch

    pairs = len(next(iter(first_steps.values())))
    return [{stack: Launch(first_step=times[i], before_init=5.0, init=6.0, step1=0.3, wall=times[i] + 5,
                           cpu=times[i]) for stack, times in first_steps.items()} for i in range(pairs)]


def test_stack_launch_judges_each_stack_against_its_own_pair_s_pytorch_run(capsys):
    """Each stack's time to first step minus its pair's pytorch run: pytorch's own varies from pair to pair (a host
    that slows down), deepspeed is 12 s over it in every pair (past the 10 s target: MISSED), torchtitan 2 s (PASS);
    one stack short of PASS fails the script. A difference the noise swamps is never a PASS."""
    from bench import stack_launch

    target = bounded(high=stack_launch.TARGET_OVER_PYTORCH_S)
    measured = launches({"pytorch": (12.0, 20.0, 14.0), "deepspeed": (24.0, 32.0, 26.0),
                         "torchtitan": (14.0, 22.0, 16.0)})
    deepspeed, torchtitan = stack_launch.judge_stacks(measured, ["deepspeed", "torchtitan"], target)
    assert (deepspeed.verdict, deepspeed.median, deepspeed.exit_code) == (MISSED, 12.0, 1)
    assert (torchtitan.verdict, torchtitan.median, torchtitan.exit_code) == (PASS, 2.0, 0)
    out = capsys.readouterr().out
    assert "time to first step minus pytorch's: median 12.00 s (min..max 12.00..12.00)" in out
    assert "over pytorch's: median 1.86x (min..max 1.60..2.00)" in out  # deepspeed's ratios: 24/12, 32/20, 26/14
    assert "the round (CPU) minus pytorch's: median 2.00 CPU s" in out  # torchtitan's, CPU beside wall
    assert "deepspeed time to first step over pytorch's (wall): median 12.00 s" in out and f"{MISSED}: target <= 10" \
        in out
    noisy = launches({"pytorch": (12.0, 12.0, 12.0), "deepspeed": (13.0, 30.0, 14.0)})
    (result,) = stack_launch.judge_stacks(noisy, ["deepspeed"], target)
    assert result.verdict == CANNOT_JUDGE


def test_stack_launch_refuses_a_stack_llama_does_not_run_on(capsys):
    from bench import stack_launch

    with pytest.raises(SystemExit) as exit_info:
        stack_launch.main(["--stacks", "megatron", "--quick"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "--stacks: invalid choice: 'megatron'" in err
    assert "'deepspeed', 'torchtitan'" in err


# "Training steps" in small: each mallocs 12 blocks of 8 MiB, writes them, frees them all; the last STEPS_WATCHED
# steps and BUSY_S of CPU in a window it prints, with a pause on either side so that the watch samples the process
# before and after it.
ALLOCATING = """
import ctypes, json, sys, time
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
def step():
    blocks = [libc.malloc(8 << 20) for _ in range(12)]
    for block in blocks:
        ctypes.memset(block, 1, 8 << 20)
    for block in blocks:
        libc.free(ctypes.c_void_p(block))
for _ in range(3):
    step()
time.sleep(0.5)
start = time.time()
for _ in range(int(sys.argv[1])):
    step()
busy = time.process_time() + float(sys.argv[2])
while time.process_time() < busy:
    pass
end = time.time()
time.sleep(0.5)
print(json.dumps([start, end]))
"""
STEPS_WATCHED = 4
BUSY_S = 0.3
PAGES_A_STEP = 12 * (8 << 20) // 4096


@pytest.mark.parametrize("mode", ["fixed", "default"])
def test_the_malloc_control_keeps_freed_heap_mapped_and_the_watch_sees_its_faults(mode):
    """bench/fidelity_image.py's --malloc: glibc's own malloc gives a step's freed heap back to the OS and the next
    step page-faults all of it back in (the noise the fidelity pairs showed), the fixed settings keep it mapped; the
    watch counts those faults and the CPU time in the watched process from outside and reads the settings in its
    environment."""
    from bench.malloc_control import SETTINGS, malloc_env, unmet
    from bench.process_watch import ProcessWatch

    env = malloc_env(mode, {**os.environ, "MALLOC_TOP_PAD_": "0"})  # an inherited setting does not leak into default
    assert (env.get("MALLOC_TOP_PAD_"), unmet(mode, env)) == (SETTINGS["MALLOC_TOP_PAD_"] if mode == "fixed" else None,
                                                              None)
    with ProcessWatch(lambda argv: ALLOCATING in argv) as watch:
        done = subprocess.run([sys.executable, "-c", ALLOCATING, str(STEPS_WATCHED), str(BUSY_S)],
                              capture_output=True, text=True, check=True, timeout=TIMEOUT_S, env=env)
    assert unmet(mode, watch.environ) is None, watch.environ
    used = watch.between(*json.loads(done.stdout))
    assert BUSY_S - 0.02 <= used.cpu_s < 3 * BUSY_S, used  # CPU time (10 ms ticks), not wall: the same when loaded
    faults = used.faults / STEPS_WATCHED
    if mode == "fixed":
        assert faults < PAGES_A_STEP / 20, faults
    else:
        assert faults > PAGES_A_STEP / 2, faults


def test_fidelity_image_malloc_modes_are_named_and_another_is_refused(capsys):
    from bench import fidelity_image

    with pytest.raises(SystemExit) as exit_info:
        fidelity_image.main(["--malloc", "jemalloc", "--quick"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "--malloc: invalid choice: 'jemalloc'" in err and "'fixed', 'default'" in err


def test_the_rank_s_steps_window_is_its_train_start_to_its_first_evaluation(tmp_path):
    """fidelity_image counts the rank's faults from its TRAIN_START to the end of its last step, when its evaluation
    begins (then TRAIN_END), from rank 0's events."""
    from bench import fidelity_image
    from case_runners.rank.driver import events as ev

    node = tmp_path / "localhost_noderank0"
    node.mkdir()
    lines = [(ev.INIT_START, 1000), (ev.TRAIN_START, 2000), (ev.EPOCH_END, 9000), (ev.EVALUATE_BEGIN, 9500),
             (ev.EVALUATE, 9900), (ev.EVALUATE_BEGIN, 11000), (ev.TRAIN_END, 12000)]
    ev.events_path(node, 0).write_text("".join(json.dumps({"event": name, "value": {}, "metadata": {"time_ms": ms}})
                                               + "\n" for name, ms in lines))
    assert fidelity_image.rank_window(tmp_path) == (2.0, 9.5)



# A process that starts short-lived children (`true`) one after another for argv[1] seconds.
SPAWNING = """
import subprocess, sys, time
end = time.time() + float(sys.argv[1])
while time.time() < end:
    subprocess.run(["true"])
"""


def test_the_watch_s_process_tree_skips_processes_that_end_while_it_is_read():
    """A process that ended between the read of its parent's children and the read of its own tasks made the watch's
    thread raise (FileNotFoundError on /proc/<pid>/task) and the bench stop ('the rank was not seen running'), as
    it did mid-run. Walked over and over while children come and go: never an error."""
    from bench.process_watch import descendants

    spawner = subprocess.Popen([sys.executable, "-c", SPAWNING, "1.5"])
    try:
        walks = 0
        while spawner.poll() is None:
            descendants(os.getpid())
            walks += 1
    finally:
        spawner.kill()
        spawner.wait(timeout=TIMEOUT_S)
    assert walks > 0


@pytest.mark.parametrize("mode", ["fixed", "default"])
def test_fidelity_runs_both_sides_of_every_pair_under_the_malloc_mode(mode, monkeypatch, capsys):
    """bench/fidelity.py's sides are processes that inherit its environment: the mode's settings are in it, or none
    of them (even one exported before) with --malloc default."""
    from bench import fidelity
    from bench.alternation import Timing
    from bench.malloc_control import SETTINGS

    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "4096")  # exported by the user: default removes it, fixed replaces it
    seen: list[dict[str, str | None]] = []

    def bare(params, steps, threads):
        seen.append({name: os.environ.get(name) for name in SETTINGS})
        return 1.0, Timing(0.0, 0.0)

    def harness(steps, results):
        return bare({}, steps, 1)[0], {}, 1, Timing(0.0, 0.0)

    fake = fidelity.Pair((1, 1), "samples/s", harness, bare, "fake ({steps} steps, {threads} threads)", "ratio")
    monkeypatch.setitem(fidelity.PAIRS, "resnet50", fake)
    try:
        fidelity.main(["--malloc", mode, "--pairs", "1", "--quick"])
    finally:
        os.environ.pop("MALLOC_MMAP_THRESHOLD_", None)  # main set them in this process's environment for its sides
        os.environ.pop("MALLOC_TOP_PAD_", None)
    expected = {name: (str(value) if mode == "fixed" else None) for name, value in SETTINGS.items()}
    assert seen == [expected, expected], seen
    assert f"malloc {mode} on both sides" in capsys.readouterr().out


def test_stack_throughput_reads_the_steady_rate_and_mfu_past_the_warmup(tmp_path):
    """bench/stack_throughput.py's figures of a round: the record's p_core and MFU, and the steady tokens/s of the
    steps after the warm-up (rank 0's running samples and core time, times the data-parallel ranks: tensor
    parallelism's pairs train one batch), its MFU at the record's peak."""
    from bench import stack_throughput

    node = tmp_path / "results" / "run1" / "llama_torchtitan_H100x1x4" / "round1" / "host_noderank0"
    node.mkdir(parents=True)
    # a first step of 10 s (compiling), then 1 s a step of 1000 tokens
    steps = [(1, 1000, 10.0), (2, 2000, 11.0), (3, 3000, 12.0), (4, 4000, 13.0)]
    (node / "rank0.events.jsonl").write_text("".join(json.dumps(
        {"event": "STEP_END", "value": {"step": s, "rank_samples": n, "rank_core_time": t}, "metadata": {}}) + "\n"
        for s, n, t in steps))
    record = {"status": "not_converged", "nnodes": 1, "nproc": 4, "params": {"tensor_parallel": 2},
              "metrics": {"p_core": 615.0, "init_time": 3.0, "peak_memory_bytes": 5e9, "device_memory": {}},
              "mfu": {"value": 0.1, "flops_per_sample": 1e9, "peak_flops_per_device": 1e12},
              "versions": {"torch": "2.11.0", "python": "3.12.3"}}
    (node.parent / "round_record.json").write_text(json.dumps(record))
    run = stack_throughput.figures("torchtitan", node.parent.parent, warmup=2, wall=20.0)
    assert run.steady_tokens_per_s == 2 * 1000.0  # (4000 - 2000) / (13 - 11) s, times 4 ranks / TP 2
    assert run.steady_mfu == 2000.0 * 1e9 / (1e12 * 4) and run.mfu == 0.1 and run.tokens_per_s == 615.0
    assert run.peak_memory_gb == 5.0 and run.versions == {"torch": "2.11.0", "python": "3.12.3"}
    assert stack_throughput.steady_rate([], warmup=2, data_ranks=1) is None
