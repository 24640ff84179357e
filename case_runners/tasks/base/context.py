"""What a base benchmark's measure(params, ctx) is given: the rank's device and the vendor's runtime, the hardware's
peaks, and the timing the task uses for every benchmark."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from case_runners.plan.config.benchmarks import Peak, peak_for
from case_runners.tasks.base.timing import seconds_per_call


@dataclasses.dataclass
class BaseContext:
    benchmark: str
    runtime: Any  # the vendor's VendorRuntime, prepared
    device: Any  # this rank's torch.device
    hardware_name: str  # the config's hardware (H100)
    hardware: dict[str, Any]  # vendor.yaml hardware.<HW>: the peaks
    nnodes: int
    rank: int
    world_size: int
    say: Callable[[str], None]  # a line in the rank's log

    def peak(self, precision: str | None = None) -> Peak:
        """The peak this benchmark's figures are measured against (of `precision`, for gemm)."""
        return peak_for(self.benchmark, self.hardware_name, self.hardware, precision=precision, nnodes=self.nnodes)

    def seconds_per_call(self, fn: Callable[[], Any], iterations: int, warmup: int) -> float:
        """fn's seconds per call on this device (timing.py: device events, or perf_counter around synchronize)."""
        return seconds_per_call(fn, iterations, warmup, self.runtime, self.device)

    def synchronize(self) -> None:
        self.runtime.synchronizer(self.device)()
