"""Fidelity of an image case: mobilenetv2's p_core in the harness against a bare transformers training loop.

Alternates a harness run (`python -m case_runners run mobilenetv2`, synthetic images, no monitors) and a bare loop
written plainly here, not from the case's code: transformers' MobileNetV2ForImageClassification of the same config,
the same batch of images of the same size, SGD with the case's hyperparameters and its step schedule, cross-entropy,
each optimizer step timed with perf_counter, at the harness rank's own thread count (its round record's
environment.threads). Fresh processes each; the median of the pairs' ratios harness / bare is judged by
bench/verdict.py, with their spread, each process's wall and CPU time and the load average. Target: within 3 %.
Both sides run with the same glibc malloc settings (--malloc fixed, the default; bench/malloc_control.py): with
glibc's own (--malloc default) each step page-faults back in the heap the step before gave back to the OS, 0-38k
faults a step in a number each process's allocation history sets, ~13 % of a step's CPU. The harness passes them to
its rank through the environment (`case_runners run` -> launcher -> rank); each side's process (the rank, the bare
loop) is watched from outside (bench/process_watch.py): its environment must hold the settings, and its minor page
faults a step are printed, over its steps and over their second half (the heap grown to its peak by then).
--quick: one pair of 3 steps, the smallest real measurement (which one pair cannot judge).
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.alternation import add_pair_options, pair_sizes
from bench.fidelity import bare_process, harness_round, rank_threads
from bench.malloc_control import MODE_SHOWN, add_malloc_option, malloc_env, unmet
from bench.process_watch import ProcessWatch
from bench.verdict import LoadWatch, bounded, judge, summary
from case_runners.core.cli_io import ArgumentParser
from case_runners.rank.driver import events as ev
from case_runners.rank.driver.events import events_path, read_events

CASE = "mobilenetv2"
TARGET = 0.03
STEPS = (20, 3)  # steps per round: by default, and with --quick
# The standard MobileNetV2 (width 1.0, 1000 classes) at 96 px, batch 16: small enough to repeat on a CPU.
OVERRIDES: dict[str, Any] = {"synthetic": True, "image_size": 96, "batch_size": 16, "num_workers": 0,
                             "log_freq": 1000, "eval_every_epochs": 0, "eval_max_batches": 1,
                             "synthetic_samples": 1024}


def bare_loop(p: dict[str, Any], steps: int, threads: int) -> dict[str, Any]:
    """The bare loop, written out as a plain script would, not from the case's code: the case's config in
    transformers (torchvision's MobileNetV2 layout), SGD with momentum and weight decay, the LR times lr_gamma every
    epoch; only the numbers come from the harness's resolved params `p`. Its samples/s ("p"), thread count, the
    model's parameter count and its steps' window ([start, end] in time.time(), the batches' making included, as
    the harness's TRAIN_START to its evaluation)."""
    import torch
    from torch.nn import functional as F
    from transformers import MobileNetV2Config, MobileNetV2ForImageClassification

    torch.set_num_threads(threads)
    torch.manual_seed(p["seed"])
    size, batch, classes = p["image_size"], p["batch_size"], p["num_classes"]
    model = MobileNetV2ForImageClassification(MobileNetV2Config(  # type: ignore[call-arg]
        image_size=size, depth_multiplier=p["depth_multiplier"], tf_padding=False, classifier_dropout_prob=0.2,
        num_labels=classes))
    memory_format = torch.channels_last if p["channels_last"] else torch.contiguous_format
    model = model.to(memory_format=memory_format).train()  # type: ignore[call-arg]
    lr = p["lr"] * batch / p["lr_scaling_batch"] if p["lr_scaling_batch"] else p["lr"]
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=p["momentum"], weight_decay=p["weight_decay"])
    epoch = p["synthetic_samples"] // batch  # the harness's steps per epoch (its last partial batch dropped)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=max(1, round(p["lr_step_epochs"] * epoch)),
                                            gamma=p["lr_gamma"])
    compute, start = 0.0, time.time()
    for _ in range(steps):
        # the batch made untimed, as the harness's data path is
        images = torch.randn(batch, 3, size, size).contiguous(memory_format=memory_format)
        labels = torch.randint(classes, (batch,))
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(pixel_values=images).logits, labels, label_smoothing=p["label_smoothing"])
        loss.backward()
        opt.step()
        sched.step()
        compute += time.perf_counter() - t0
    return {"p": steps * batch / compute, "threads": torch.get_num_threads(),
            "parameters": sum(w.numel() for w in model.parameters()), "window": [start, time.time()]}


def rank_window(round_dir: Path) -> tuple[float, float]:
    """time.time() of the rank's TRAIN_START and of the end of its last step (its first EVALUATE_BEGIN, else
    TRAIN_END), from rank 0's events."""
    (node,) = round_dir.glob("*_noderank0")
    times: dict[str, float] = {}
    for event in read_events(events_path(node, 0)):
        times.setdefault(event["event"], event["metadata"]["time_ms"] / 1000)
    return times[ev.TRAIN_START], times.get(ev.EVALUATE_BEGIN, times[ev.TRAIN_END])


@dataclass(frozen=True)
class Watched:
    """What a side's process went through during its steps (bench/process_watch.py)."""
    faults: float  # minor page faults a step in the second half of the steps (the heap grown to its peak by then)
    share: float  # the share of a core it ran on: its CPU time over the steps' wall time
    cpu_s: float  # its CPU seconds a step
    shown: str


def watched(watch: ProcessWatch, what: str, mode: str, window: tuple[float, float], steps: int) -> Watched:
    """What the watched process went through during its steps; exits when it was not seen or the malloc mode did not
    reach it."""
    if watch.pid is None or not watch.samples:
        sys.exit(f"the {what} was not seen running: its page faults and environment are unknown")
    problem = unmet(mode, watch.environ)
    if problem:
        sys.exit(f"--malloc {mode} did not reach the {what} (pid {watch.pid}): its environment has {problem}")
    start, end = window
    whole, late = watch.between(start, end), watch.between((start + end) / 2, end)
    share = whole.cpu_s / (end - start)
    return Watched(late.faults / (steps / 2), share, whole.cpu_s / steps,
                   f"{what}: {whole.faults / steps:,.0f} minor faults a step ({late.faults / (steps / 2):,.0f} in the "
                   f"second half), {share:.0%} of a core, {whole.preempted / steps:.1f} preemptions a step")


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    add_pair_options(parser, "harness/bare", "optimizer steps per process", STEPS, bounded(1 - TARGET, 1 + TARGET),
                     f"LOW..HIGH harness/bare ratio (default {1 - TARGET:g}..{1 + TARGET:g})")
    add_malloc_option(parser)
    args = parser.parse_args(argv)
    steps, pairs = pair_sizes(args, STEPS)
    env = malloc_env(args.malloc)
    ratios: list[float] = []
    cpu_ratios: list[float] = []  # the same pairs by CPU time a step: what the host's other work leaves out
    seen: dict[str, list[Watched]] = {"harness": [], "bare": []}
    load = LoadWatch()
    params: dict[str, Any] = {}
    threads = 0
    with tempfile.TemporaryDirectory(prefix="perfplay-fidelity-image-") as tmp:
        for pair in range(pairs):
            values, sides = {}, {}
            # The harness goes first in the first pair: the bare loop takes its params and thread count from it.
            for kind in (("harness", "bare") if pair % 2 == 0 else ("bare", "harness")):
                if kind == "harness":
                    with ProcessWatch(lambda a: "case_runners" in a and "worker" in a) as watch:
                        record, round_dir, timing = harness_round(CASE, OVERRIDES, steps, Path(tmp), env)
                    values[kind], params, threads = record.metrics["p_core"], record.params, rank_threads(record)
                    sides[kind] = watched(watch, "rank", args.malloc, rank_window(round_dir), steps)
                else:
                    with ProcessWatch(lambda a: len(a) > 2 and a[1] == "-c" and "bare_loop" in a[2]) as watch:
                        measured, timing = bare_process("bench.fidelity_image:bare_loop", params, steps, threads, env)
                    values[kind] = measured["p"]
                    sides[kind] = watched(watch, "bare loop", args.malloc, tuple(measured["window"]), steps)
                seen[kind].append(sides[kind])
                load.sample()
                print(f"pair {pair + 1} {kind:7s}: {values[kind]:8.2f} samples/s ({timing.wall:.1f} s wall, "
                      f"{timing.cpu:.1f} s CPU; {sides[kind].shown})", flush=True)
            ratios.append(values["harness"] / values["bare"])
            cpu_ratios.append(sides["bare"].cpu_s / sides["harness"].cpu_s)
            print(f"pair {pair + 1}: harness / bare {ratios[-1]:.4f}, by CPU seconds a step {cpu_ratios[-1]:.4f}",
                  flush=True)
    print(f"\n{CASE} ({OVERRIDES['image_size']} px, batch {OVERRIDES['batch_size']}, {steps} steps, {threads} "
          f"threads, CPU), {pairs} pairs: harness p_core / bare transformers loop {summary(ratios, fmt='.4f')}")
    rank, bare = seen["harness"], seen["bare"]
    print(f"malloc {args.malloc} on both sides ({MODE_SHOWN[args.malloc]}, seen in each rank's and bare loop's "
          f"environment); minor faults a step in the second half: rank "
          f"{summary([w.faults for w in rank], fmt=',.0f')}, bare loop {summary([w.faults for w in bare], fmt=',.0f')}")
    print(f"share of a core during the steps: rank {summary([w.share for w in rank], fmt='.2f')}, bare loop "
          f"{summary([w.share for w in bare], fmt='.2f')}; harness / bare by CPU seconds a step over the steps "
          f"(the batches' making included; not judged, p_core is wall time) {summary(cpu_ratios, fmt='.4f')}")
    print(load.line())
    result = judge(ratios, args.target)
    print(result.line("fidelity: harness / bare", fmt=".4f"))
    return result.exit_code  # anything but PASS fails `make bench`

if __name__ == "__main__":
    raise SystemExit(main())
