"""Fidelity: p_core reported by the harness against a bare timing loop over the same model, batch and steps.

Alternates a harness run (`python -m case_runners run`, no monitors) and a bare loop — the case's model,
optimizer, loss and train loader, N optimizer steps, each step's compute timed with perf_counter — in
fresh processes, and judges the median of the pairs' ratios harness / bare by bench/verdict.py, with their spread,
each process's wall and CPU time and the load average. Target: within 2 %.
--quick: one pair of 3 steps, the smallest real measurement (which one pair cannot judge).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.alternation import Timing, add_pair_options, pair_sizes, run_timed
from bench.verdict import LoadWatch, bounded, judge, summary
from case_runners.core.cli_io import ArgumentParser
from case_runners.records.round import RECORD_NAME, RoundRecord

TARGET = 0.02
STEPS = (30, 3)  # steps per round: by default, and with --quick
# resnet50 at 64 px: a step of a few hundred ms on a CPU, long enough to time, short enough to repeat.
OVERRIDES = {"synthetic": True, "image_size": 64, "batch_size": 16, "num_workers": 0, "log_freq": 1000,
             "eval_every_epochs": 0, "synthetic_samples": 512, "warmup_steps": 0}


def harness_round(case: str, overrides: dict[str, Any], steps: int, results: Path) -> tuple[RoundRecord, Timing]:
    """`python -m case_runners run CASE` (no monitors) with the overrides and max_steps: its round record."""
    sets = [f"--set={k}={json.dumps(v)}" for k, v in {**overrides, "max_steps": steps}.items()]
    proc, timing = run_timed([sys.executable, "-m", "case_runners", "run", case, "--no-monitors",
                             "--results-dir", str(results), *sets])
    if proc.returncode not in (0, 1):  # 1: not converged, expected for a short synthetic run
        sys.exit(f"harness run failed:\n{proc.stdout}\n{proc.stderr}")
    (record,) = sorted(results.glob(f"run*/{case}_*/round1/{RECORD_NAME}"), key=os.path.getmtime)[-1:]
    return RoundRecord.load(record), timing


def harness(steps: int, results: Path) -> tuple[float, Timing]:
    record, timing = harness_round("resnet50", OVERRIDES, steps, results)
    return record.metrics["p_core"], timing


def bare(steps: int) -> tuple[float, Timing]:
    """The bare loop, in a fresh process with the same thread count as the harness's single rank."""
    code = f"""
import json, time, torch
from case_runners.cases.resnet50.case import build_case
from case_runners.rank.driver.events import EventLogger
from case_runners.plan.run_plan import make_plan
from case_runners.tasks.training.case_api import RunContext
import tempfile, pathlib
torch.set_num_threads(os.cpu_count() or 1)
config = make_plan({{"vendor": "cpu", "cases": [{{"case": "resnet50", "overrides": {OVERRIDES!r}}}]}},
                   check=True)["cases"][0]
params = config["params"]
torch.manual_seed(params["seed"])
log = EventLogger(pathlib.Path(tempfile.mkdtemp()), 0, 10**9)
case = build_case(params, RunContext(0, 0, 1, torch.device("cpu"), None, log))
model = case.build_model()
train_loader, _ = case.build_data()
opt, sched = case.build_optimizer(model)
model.train()
bs, compute, batches = params["batch_size"], 0.0, iter(train_loader)
for step in range({steps}):
    batch = case.to_device(next(batches), torch.device("cpu"))  # the same data path, untimed
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss, n = case.train_step(model, batch)
    loss.backward()
    opt.step()
    if sched is not None:
        sched.step()
    compute += time.perf_counter() - t0
print(json.dumps({{"p": {steps} * bs / compute}}))
"""
    proc, timing = run_timed([sys.executable, "-c", "import os\n" + code])
    if proc.returncode != 0:
        sys.exit(f"bare loop failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["p"], timing


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    add_pair_options(parser, "harness/bare", "optimizer steps per process", STEPS, bounded(1 - TARGET, 1 + TARGET),
                     f"LOW..HIGH harness/bare ratio (default {1 - TARGET:g}..{1 + TARGET:g})")
    args = parser.parse_args(argv)
    steps, pairs = pair_sizes(args, STEPS)
    ratios: list[float] = []
    load = LoadWatch()
    with tempfile.TemporaryDirectory(prefix="perfplay-fidelity-") as tmp:
        for pair in range(pairs):
            values = {}
            for kind in (("harness", "bare") if pair % 2 == 0 else ("bare", "harness")):
                values[kind], timing = harness(steps, Path(tmp)) if kind == "harness" else bare(steps)
                load.sample()
                print(f"pair {pair + 1} {kind:7s}: {values[kind]:8.2f} samples/s ({timing.wall:.1f} s wall, "
                      f"{timing.cpu:.1f} s CPU)", flush=True)
            ratios.append(values["harness"] / values["bare"])
    print(f"\nresnet50 (64 px, batch 16, {steps} steps, CPU), {pairs} pairs: harness p_core / bare loop "
          f"{summary(ratios, fmt='.4f')}")
    print(load.line())
    result = judge(ratios, args.target)
    print(result.line("fidelity: harness / bare", fmt=".4f"))
    return result.exit_code  # anything but PASS fails `make bench`


if __name__ == "__main__":
    raise SystemExit(main())
