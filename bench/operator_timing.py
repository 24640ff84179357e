"""Operator timing honesty: the operation task's latency of an operator against a bare loop of the same torch call,
for mm (compute-bound) and add (memory-bound), alternated in one process.

    python -m bench.operator_timing [--ops mm add] [--dtype D] [--warmup W] [--iterations I] [--pairs N] [--quick]
                                    [--target LOW..HIGH]

The harness side is the task's measure() (case_runners/tasks/operation/measure.py) on the vendor's runtime, natively:
the cpu vendor, or nvidia where torch sees a CUDA device; its figure is the row's median latency (the device events'
where the runtime has them). The bare side makes the same inputs and calls the same torch function: `warmup` untimed
calls, a synchronize, then `iterations` calls, each timed alone without a synchronize between them (CUDA events around
each call on a GPU, perf_counter on the CPU), and takes their median: the same statistic as the harness's, so a call
that another process slowed down counts the same on both sides (a block's mean would keep it). Harness and bare
alternate pair by pair (which goes first alternates too); per operator, the figure is the median over the pairs of
harness / bare. Target: within 3 %, judged by bench/verdict.py on the pairs' ratios and their spread. On a CPU both use
one torch thread unless --threads says otherwise. --quick: one pair at the smallest shapes (which one pair cannot
judge).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch

from bench.verdict import LoadWatch, bounded, judge, parse_target
from case_runners.core.cli_io import ArgumentParser
from case_runners.tasks.operation.measure import inputs, measure
from case_runners.tasks.operation.table import OPS
from case_runners.vendors.description import load_vendor
from case_runners.vendors.runtime import VendorRuntime

TARGET = 0.03
# (vendor, device type, backend, dtype, {op: shape}, warmup, iterations, pairs)
Setup = tuple[str, str, str, str, dict[str, dict[str, Any]], int, int, int]
SETUPS: dict[str, Setup] = {"cuda": ("nvidia", "cuda", "nccl", "BF16", {"mm": {"M": 8192, "N": 8192, "K": 8192},
                                                      "add": {"Melements": 256}}, 10, 100, 7),
          "cpu": ("cpu", "cpu", "gloo", "FP32", {"mm": {"M": 512, "N": 512, "K": 512},
                                                 "add": {"Melements": 4}}, 2, 20, 21)}
QUICK: tuple[dict[str, dict[str, Any]], int, int, int] = (
    {"mm": {"M": 64, "N": 64, "K": 64}, "add": {"Melements": 0.0625}}, 1, 3, 1)


def bare(op: str, shape: dict[str, Any], dtype: str, device: Any, synchronize: Any, warmup: int,
         iterations: int) -> float:
    """Seconds of the median call of the operator's torch call in a plain loop: the harness's statistic (the median
    of single calls) without its instrumentation. Each call between two timestamps and no synchronize between calls:
    CUDA events recorded around each call, read once the loop is done, on a GPU; perf_counter on the CPU, whose
    calls return when their work is done."""
    args = tuple(a.to(device) for a in inputs(op, shape, dtype))
    call = OPS[op][1]
    for _ in range(warmup):
        call(*args)
    synchronize()
    if device.type == "cuda":
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(iterations)]
        for start, end in events:
            start.record()
            call(*args)
            end.record()
        events[-1][1].synchronize()
        return statistics.median(start.elapsed_time(end) for start, end in events) / 1000.0
    seconds = []
    for _ in range(iterations):
        began = time.perf_counter()
        call(*args)
        seconds.append(time.perf_counter() - began)
    synchronize()
    return statistics.median(seconds)


def main(argv: list[str] | None = None) -> int:
    kind = "cuda" if torch.cuda.is_available() else "cpu"
    vendor, device_type, backend, dtype, shapes, warmup, iterations, pairs = SETUPS[kind]
    parser = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", nargs="+", choices=sorted(shapes), default=list(shapes))
    parser.add_argument("--dtype", default=dtype, choices=("FP32", "FP16", "BF16"))
    parser.add_argument("--warmup", type=int, help=f"default {warmup}")
    parser.add_argument("--iterations", type=int, help=f"default {iterations}")
    parser.add_argument("--pairs", type=int, help=f"alternated harness/bare pairs (default {pairs})")
    parser.add_argument("--quick", action="store_true", help="one pair at the smallest shapes")
    parser.add_argument("--target", type=parse_target, default=bounded(1 - TARGET, 1 + TARGET),
                        help=f"LOW..HIGH harness/bare ratio (default {1 - TARGET:g}..{1 + TARGET:g})")
    parser.add_argument("--threads", type=int, default=1 if kind == "cpu" else None,
                        help="torch's CPU threads, the same for both sides (CPU default 1)")
    args = parser.parse_args(argv)
    if args.quick:
        shapes, warmup, iterations, pairs = QUICK
    warmup = warmup if args.warmup is None else args.warmup
    iterations, pairs = args.iterations or iterations, args.pairs or pairs
    if args.threads:
        torch.set_num_threads(args.threads)
    runtime = VendorRuntime(vendor, device_type, backend)
    runtime.prepare()
    runtime.allow_tf32(False)
    device = runtime.pick_device(0)
    info = load_vendor(vendor)
    hardware = info.hardware[info.default_hardware]
    synchronize = runtime.synchronizer(device)
    load, code = LoadWatch(), 0
    with torch.no_grad():
        for op in args.ops:
            shape, ratios = shapes[op], []
            for pair in range(pairs):
                got: dict[str, float] = {}
                for way in ("harness", "bare") if pair % 2 == 0 else ("bare", "harness"):
                    if way == "bare":
                        got[way] = bare(op, shape, args.dtype, device, synchronize, warmup, iterations)
                        continue
                    row = measure(op, args.dtype, shape, "native", runtime=runtime, device=device,
                                  hardware=hardware, warmup=warmup, iterations=iterations)
                    got[way] = row.device_median_s if row.device_median_s is not None else row.latency_median_s
                load.sample()
                ratios.append(got["harness"] / got["bare"])
                print(f"{op} pair {pair + 1:2d}: harness {got['harness'] * 1e6:10.1f} us, bare "
                      f"{got['bare'] * 1e6:10.1f} us, ratio {ratios[-1]:.4f}", flush=True)
            print(f"{op} {args.dtype} {shape} on {device} ({vendor} vendor, {torch.get_num_threads()} CPU threads, "
                  f"{warmup} warm-up + {iterations} timed calls, {pairs} pairs): median ratio "
                  f"{statistics.median(ratios):.4f}")
            result = judge(ratios, args.target)
            print(result.line(f"operator timing {op}: harness / bare", fmt=".4f"))
            code = max(code, result.exit_code)
    print(load.line())
    return code


if __name__ == "__main__":
    raise SystemExit(main())
