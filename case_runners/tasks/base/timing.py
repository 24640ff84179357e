"""How the base benchmarks time device work, through the vendor's runtime (never a device module directly): device
events where the vendor's runtime offers them (vendor_runtime.py timing_event), else perf_counter around
synchronized work (the host's CPU)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def seconds_per_call(fn: Callable[[], Any], iterations: int, warmup: int, runtime: Any, device: Any) -> float:
    """Seconds per call of fn: `warmup` untimed calls, the device synchronized, then `iterations` calls timed as one
    block (the device's queue kept full, as nccl-tests and a bare matmul loop time them), divided by iterations."""
    if iterations < 1:
        raise ValueError(f"iterations must be at least 1, not {iterations}")
    for _ in range(warmup):
        fn()
    synchronize = runtime.synchronizer(device)
    synchronize()
    start = runtime.timing_event(device)
    if start is not None:
        end = runtime.timing_event(device)
        start.record()
        for _ in range(iterations):
            fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1000.0 / iterations
    began = time.perf_counter()
    for _ in range(iterations):
        fn()
    synchronize()
    return (time.perf_counter() - began) / iterations
