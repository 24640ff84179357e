"""LLM training throughput on each stack: llama's tokens/s and MFU on pytorch and each stack it lists, one run.

Runs `python -m case_runners run llama:<stack>:<HW>:1:<N>:1` once per stack (pytorch first, then each stack
llama's config.yaml lists, or --stacks), each at the vendor's config for that hardware and scale (nvidia's
H100x1x1: the 1b shape, 4 sequences of 2048 tokens, bf16; torchtitan's compiles each block) on synthetic data,
--steps steps, no evaluation but the last, and prints per stack, from the round record and rank 0's events:
- tokens/s: the record's p_core (every step's compute, the first's compilation and warm-up included) and the
  steady rate, over the steps after --warmup (rank 0's STEP_END rank_samples and rank_core_time, times the
  data-parallel ranks: the ranks step in lockstep);
- MFU of each (the record's flops_per_sample, the chip's peak at the round's precision, vendor.yaml);
- the peak device memory (the record's device_memory from the monitor, else the runtime's peak);
- init (model, stack conversion, sharding, optimizer) and the round's wall time;
and each stack's ratio to pytorch's steady tokens/s. A stack that fails is reported with its last lines and the
others still run. --out keeps each run's results directory (the device tool's $OUT); JSON with --json.

This is issue 30's H100 check (llama 1B on each stack, tokens/s and MFU: docs, case_runners/cases/llama/README.md),
sized for the device tool's 10-minute command: on the lent H100 (torch 2.11, no network), carry the torchtitan
stack's pure-Python wheels and torchao in .whl (device README), install them with --no-deps into /tmp/site, and
relax the stack's triton pin to the image's (torch 2.11 runs with its own triton 3.6; triton 3.9 is torch
2.13's and too large to carry) in that throwaway copy:
    pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
    sed -i "s/^triton==.*/triton==$(python3 -c 'import triton; print(triton.__version__)')/" \\
        case_runners/tasks/training/stacks/torchtitan-requirements.txt
    python3 -m bench.stack_throughput --hardware H100 --stacks torchtitan --steps 60 --out $OUT --json $OUT/t.json
On a CPU (this bench's own check): --hardware CPU --set model=tiny --set seq_len=64 --steps 6 --warmup 2.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.alternation import ROOT, run_timed
from case_runners.core.cli_io import ArgumentParser
from case_runners.plan.config.shared_params import model_parallel
from case_runners.plan.config.stacks import PYTORCH, STACKS_KEY
from case_runners.plan.layering import load_case_base
from case_runners.rank.driver import events as ev

CASE = "llama"
STEPS, WARMUP = 60, 10
# Synthetic data, one evaluation of a few sequences at the end: the round is training steps.
WORKLOAD = {"synthetic": True, "eval_every_steps": 0, "eval_samples": 8, "log_freq": 1}


@dataclass(frozen=True)
class Throughput:
    """One stack's round (the module docstring); None where the record has no figure (no peak, no monitor)."""

    stack: str
    status: str
    tokens_per_s: float  # p_core
    steady_tokens_per_s: float | None
    mfu: float | None
    steady_mfu: float | None
    peak_memory_gb: float | None
    init_s: float
    wall_s: float
    versions: dict[str, str]


def command(key: str, steps: int, results: Path, sets: Sequence[str], vendor: str | None) -> list[str]:
    settings = [f"{name}={value}" for name, value in {**WORKLOAD, "max_steps": steps}.items()]
    return [sys.executable, "-m", "case_runners", "run", key, "--results-dir", str(results),
            *(["--vendor", vendor] if vendor else []),
            *[arg for item in [*settings, *sets] for arg in ("--set", item)]]


def steady_rate(events: Sequence[dict[str, Any]], warmup: int, data_ranks: int) -> float | None:
    """Tokens/s over the steps after `warmup` from rank 0's STEP_END events (their running rank_samples and
    rank_core_time), times the data-parallel ranks; None with fewer than two steps past it."""
    after = sorted((e["value"] for e in events if e["event"] == ev.STEP_END and e["value"]["step"] >= warmup),
                   key=lambda value: value["step"])
    if len(after) < 2:
        return None
    first, last = after[0], after[-1]
    seconds = last["rank_core_time"] - first["rank_core_time"]
    return data_ranks * (last["rank_samples"] - first["rank_samples"]) / seconds if seconds > 0 else None


def figures(stack: str, case_dir: Path, warmup: int, wall: float) -> Throughput:
    """A finished round's figures from its record and rank 0's events."""
    record = json.loads((case_dir / "round1" / "round_record.json").read_text())
    (events_file,) = (case_dir / "round1").glob("*_noderank0/rank0.events.jsonl")
    metrics, mfu = record["metrics"], record["mfu"]
    ranks = record["nnodes"] * record["nproc"]
    steady = steady_rate(ev.read_events(events_file), warmup, ranks // model_parallel(record["params"]))
    peak = mfu.get("peak_flops_per_device")

    def utilisation(rate: float | None) -> float | None:
        return rate * mfu["flops_per_sample"] / (peak * ranks) if rate and peak else None

    memory = (metrics.get("device_memory") or {}).get("peak_used_bytes") or metrics.get("peak_memory_bytes")
    return Throughput(stack=stack, status=record["status"], tokens_per_s=metrics["p_core"],
                      steady_tokens_per_s=steady, mfu=mfu.get("value"), steady_mfu=utilisation(steady),
                      peak_memory_gb=memory / 1e9 if memory else None, init_s=metrics["init_time"], wall_s=wall,
                      versions={k: v for k, v in (record.get("versions") or {}).items() if isinstance(v, str)})


def measure(stack: str, key: str, args: Any, results: Path) -> Throughput | str:
    """One stack's round: its figures, or why it failed (its last lines)."""
    proc, timing = run_timed(command(key, args.steps, results, args.set, args.vendor),
                             {**os.environ, "PYTHONUNBUFFERED": "1"})
    found = list(results.glob("run*/*/round1/round_record.json"))
    if proc.returncode not in (0, 1) or len(found) != 1:  # 1: not converged, as a short synthetic round is
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-25:])
        return f"exit {proc.returncode} after {timing.wall:.0f} s:\n{tail}"
    return figures(stack, found[0].parent.parent, args.warmup, timing.wall)


def _text(value: float | None, scale: float = 1.0, digits: int = 0, unit: str = "") -> str:
    return "-" if value is None else f"{value * scale:,.{digits}f}{unit}"


def report(runs: dict[str, Throughput | str], key_shape: str) -> None:
    print(f"\n{CASE} {key_shape}")
    print(f"{'stack':12s} {'status':14s} {'tokens/s':>10s} {'steady':>10s} {'MFU':>7s} {'steady':>7s} "
          f"{'x pytorch':>9s} {'memory':>8s} {'init':>7s} {'round':>7s}")
    base = runs.get(PYTORCH)
    base_rate = base.steady_tokens_per_s if isinstance(base, Throughput) else None
    for stack, run in runs.items():
        if isinstance(run, str):
            print(f"{stack:12s} failed: {run}")
            continue
        ratio = run.steady_tokens_per_s / base_rate if run.steady_tokens_per_s and base_rate else None
        print(f"{stack:12s} {run.status:14s} {run.tokens_per_s:>10,.0f} {_text(run.steady_tokens_per_s):>10s} "
              f"{_text(run.mfu, 100, 1, '%'):>7s} {_text(run.steady_mfu, 100, 1, '%'):>7s} "
              f"{_text(ratio, 1, 2, 'x'):>9s} {_text(run.peak_memory_gb, 1, 1, ' GB'):>8s} "
              f"{run.init_s:>6.1f}s {run.wall_s:>6.1f}s")
    for stack, run in runs.items():
        if isinstance(run, Throughput) and run.versions:
            print(f"  {stack}: {', '.join(f'{k} {v}' for k, v in sorted(run.versions.items()))}")


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    stacks = load_case_base(CASE, ROOT)[0][STACKS_KEY]
    parser.add_argument("--hardware", default="H100", help="the vendor's hardware name of the case key (default H100)")
    parser.add_argument("--nproc", type=int, default=1, choices=range(1, 65), metavar="N",
                        help="ranks of the round, one node (default 1): the vendor needs a config at that scale")
    parser.add_argument("--vendor", help="the vendor folder (default: the host's, as case_runners run finds it)")
    parser.add_argument("--stacks", nargs="+", choices=[PYTORCH, *stacks], default=[PYTORCH, *stacks],
                        help=f"the stacks, in order (default: {PYTORCH} {' '.join(stacks)})")
    parser.add_argument("--steps", type=int, default=STEPS, choices=range(2, 100_001), metavar="N",
                        help=f"training steps of each round (default {STEPS})")
    parser.add_argument("--warmup", type=int, default=WARMUP, choices=range(1, 100_000), metavar="N",
                        help=f"the steps the steady rate starts after (default {WARMUP})")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a run override for every stack's round (as case_runners run --set)")
    parser.add_argument("--out", type=Path, help="keep the runs' results directories here (default: discarded)")
    parser.add_argument("--json", type=Path, help="write the figures as JSON to this file")
    args = parser.parse_args(argv)
    shape = f"{args.hardware}x1x{args.nproc}, {args.steps} steps, synthetic data" + \
        (f", {' '.join(args.set)}" if args.set else "")
    tmp = Path(tempfile.mkdtemp(prefix="perfplay-bench-")) if args.out is None else args.out
    runs: dict[str, Throughput | str] = {}
    try:
        for stack in dict.fromkeys(args.stacks):
            key = f"{CASE}:{stack}:{args.hardware}:1:{args.nproc}:1"
            runs[stack] = run = measure(stack, key, args, tmp / stack)
            print(f"{key}: {run if isinstance(run, str) else f'{run.tokens_per_s:,.0f} tokens/s'}", flush=True)
    finally:
        if args.out is None:
            shutil.rmtree(tmp, ignore_errors=True)
    report(runs, shape)
    if args.json:
        args.json.write_text(json.dumps({stack: asdict(run) if isinstance(run, Throughput) else {"error": run}
                                         for stack, run in runs.items()}, indent=2))
    return 0 if all(isinstance(run, Throughput) for run in runs.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
