"""GEMM honesty: the base task's gemm figure against a bare torch.matmul loop timed the same way, in one process.

    python -m bench.gemm_honesty [--shape M N K] [--precision P] [--warmup W] [--iterations I] [--pairs N]
                                 [--quick] [--target LOW..HIGH]

The harness side is gemm's measure() (case_runners/tasks/base/benchmarks/gemm/measure.py) through a BaseContext on the
vendor's runtime: the cpu vendor, or nvidia where torch sees a CUDA device. The bare side multiplies the same shape
and precision with torch.matmul: `warmup` untimed calls, a synchronize, then `iterations` calls timed as one block
(CUDA events on a GPU; perf_counter around the block and a synchronize on the CPU). The two alternate pair by pair
(which goes first alternates too); the figure is the median over the pairs of harness / bare, each pair's two sides
run back to back, so a host that slows down for a while slows both sides of the pairs it touches. Target: within
2 %, judged by bench/verdict.py on the pairs' ratios and their spread; each side's wall and CPU time and the load
average are printed beside it. On a CPU both use one torch thread unless --threads says otherwise.
--quick: one pair of a 128^3 matmul (1 warm-up + 3 timed calls), the smallest real measurement (which one pair
cannot judge); --pairs still sets the pairs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from bench.verdict import LoadWatch, bounded, judge, parse_target, summary
from case_runners.core.cli_io import ArgumentParser
from case_runners.tasks.base.benchmarks.gemm.measure import measure
from case_runners.tasks.base.context import BaseContext
from case_runners.tasks.base.dtypes import torch_dtype
from case_runners.vendors.description import load_vendor
from case_runners.vendors.runtime import VendorRuntime

TARGET = 0.02
PRECISIONS = ("fp64", "fp32", "fp16", "bf16")  # those gemm runs with torch.matmul (fp8 and int8 have their own ops)
# (vendor, device type, backend, shape, precision, warmup, iterations, pairs). On a CPU, many short blocks: other
# processes on the host slow some of them down, and the median over many alternations is what stays put.
SETUPS = {"cuda": ("nvidia", "cuda", "nccl", (8192, 8192, 8192), "bf16", 10, 100, 7),
          "cpu": ("cpu", "cpu", "gloo", (1024, 1024, 1024), "fp32", 2, 5, 41)}
QUICK = ((128, 128, 128), 1, 3, 1)  # (shape, warmup, iterations, pairs)
QUICK_TEXT = "one pair of a 128^3 matmul, 1 warm-up + 3 timed calls"


def timed_call(function: Callable[[], float]) -> tuple[float, float, float]:
    """(function's value, wall seconds, this process's CPU seconds) of one call."""
    start, cpu0 = time.perf_counter(), time.process_time()
    value = function()
    return value, time.perf_counter() - start, time.process_time() - cpu0


def bare(precision: str, shape: tuple[int, int, int], device: Any, warmup: int, iterations: int) -> float:
    """FLOP/s of a plain torch.matmul loop: no harness code between the matrices and the clock."""
    m, n, k = shape
    dtype = torch_dtype(precision)
    a = torch.randn(m, k, device=device).to(dtype)
    b = torch.randn(k, n, device=device).to(dtype)
    for _ in range(warmup):
        torch.matmul(a, b)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            torch.matmul(a, b)
        end.record()
        end.synchronize()
        seconds = start.elapsed_time(end) / 1000.0 / iterations
    else:
        began = time.perf_counter()
        for _ in range(iterations):
            torch.matmul(a, b)
        seconds = (time.perf_counter() - began) / iterations
    return 2.0 * m * n * k / seconds


def main(argv: list[str] | None = None) -> int:
    kind = "cuda" if torch.cuda.is_available() else "cpu"
    vendor, device_type, backend, shape, precision, warmup, iterations, pairs = SETUPS[kind]
    parser = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", type=int, nargs=3, metavar=("M", "N", "K"), help=f"default {shape}")
    parser.add_argument("--precision", choices=PRECISIONS, default=precision)
    parser.add_argument("--warmup", type=int, help=f"default {warmup}")
    parser.add_argument("--iterations", type=int, help=f"default {iterations}")
    parser.add_argument("--pairs", type=int, help=f"alternated harness/bare pairs (default {pairs})")
    parser.add_argument("--quick", action="store_true", help="the smallest real measurement: " + QUICK_TEXT)
    parser.add_argument("--target", type=parse_target, default=bounded(1 - TARGET, 1 + TARGET),
                        help=f"LOW..HIGH harness/bare ratio (default {1 - TARGET:g}..{1 + TARGET:g})")
    parser.add_argument("--threads", type=int, default=1 if kind == "cpu" else None,
                        help="torch's CPU threads, the same for both sides (CPU default 1: one busy core of a shared "
                             "host slows a one-thread matmul less than it stalls a two-thread one)")
    args = parser.parse_args(argv)
    if args.quick:
        shape, warmup, iterations, pairs = QUICK
    args.shape = args.shape or list(shape)
    args.warmup = warmup if args.warmup is None else args.warmup
    args.iterations = args.iterations or iterations
    args.pairs = args.pairs or pairs
    if args.threads:
        torch.set_num_threads(args.threads)
    m, n, k = args.shape
    runtime = VendorRuntime(vendor, device_type, backend)
    runtime.prepare()
    device = runtime.pick_device(0)
    info = load_vendor(vendor)
    hardware_name = info.default_hardware
    ctx = BaseContext(benchmark="gemm", runtime=runtime, device=device, hardware_name=hardware_name,
                      hardware=info.hardware[hardware_name], nnodes=1, rank=0, world_size=1, say=lambda _: None)
    params = {"precisions": [args.precision], "shapes": [[m, n, k]], "warmup": args.warmup,
              "iterations": args.iterations}
    runtime.allow_tf32(False)  # the bare loop's matmuls: as gemm's measure() leaves them (no TF32 for fp32)
    figures: dict[str, list[float]] = {"harness": [], "bare": []}
    ways: dict[str, Callable[[], float]] = {
        "harness": lambda: measure(params, ctx)[0].achieved,
        "bare": lambda: bare(args.precision, (m, n, k), device, args.warmup, args.iterations)}
    load = LoadWatch()
    for pair in range(args.pairs):
        took = {}
        for way in ("harness", "bare") if pair % 2 == 0 else ("bare", "harness"):
            value, wall, cpu = timed_call(ways[way])
            figures[way].append(value)
            took[way] = f"{wall:.2f} s wall, {cpu:.2f} s CPU"
        load.sample()
        print(f"pair {pair + 1:2d}: harness {figures['harness'][-1] / 1e12:8.4f} ({took['harness']}), "
              f"bare {figures['bare'][-1] / 1e12:8.4f} TFLOP/s ({took['bare']})", flush=True)
    h, b = statistics.median(figures["harness"]), statistics.median(figures["bare"])
    ratios = [x / y for x, y in zip(figures["harness"], figures["bare"])]
    best = max(figures["harness"]) / max(figures["bare"])
    print(f"\ngemm {args.precision} {m}x{n}x{k} on {device} ({vendor} vendor, {torch.get_num_threads()} CPU threads, "
          f"{args.warmup} warm-up + {args.iterations} timed calls, {args.pairs} pairs): harness {h / 1e12:.4f}, "
          f"bare torch.matmul {b / 1e12:.4f} TFLOP/s (medians); the best of each: ratio {best:.4f}")
    print(f"each side's own figure: harness {summary([v / 1e12 for v in figures['harness']], ' TFLOP/s', '.4f')}, "
          f"bare {summary([v / 1e12 for v in figures['bare']], ' TFLOP/s', '.4f')}")
    print(load.line())
    result = judge(ratios, args.target)
    print(result.line("gemm honesty: harness / bare", fmt=".4f"))
    return result.exit_code  # anything but PASS fails `make bench`


if __name__ == "__main__":
    raise SystemExit(main())
