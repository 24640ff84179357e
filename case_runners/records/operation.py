"""The operation task's row (case_runners/tasks/operation/): one operator x dtype x oplib measured on a rank's
device. The rank result's `operation`, the round record's metrics and the case summary's `operation` carry lists of
them; the report and compare-runs read them through this type."""

from __future__ import annotations

import dataclasses
from typing import Any

from case_runners.records.schema import Document, choices, field_names

NATIVE = "native"  # the oplib of plain PyTorch
COMPUTE, MEMORY = "compute", "memory"  # what bounds an operator at its intensity (the roofline's ridge)


@dataclasses.dataclass(kw_only=True)
class OperationRow(Document):
    op: str
    dtype: str  # FlagPerf's name: FP32, FP16, BF16, INT32, INT16
    oplib: str  # native (plain PyTorch) or the library the vendor's runtime hook enabled
    shape: dict[str, Any]  # the operator's params it is timed at (FlagPerf's keys: M, N, K, Melements, ...)
    check_shape: dict[str, Any]  # the params its correctness is checked at (operators.yaml's small `check`)
    correct: bool  # at check_shape, every element within the tolerance of the float64 CPU reference
    max_error: float | None  # the largest absolute difference (null: an infinity or NaN where the reference has none)
    tolerance: dict[str, float]  # atol and rtol (0 and 0: an integer or bool result, compared exactly)
    latency_cold_s: float  # the first call, synchronized
    latency_median_s: float  # warm, each call timed on the host clock around the vendor's synchronize
    latency_p99_s: float
    device_median_s: float | None  # warm, with the hook's device events; null without
    flops: float
    bytes: float
    flops_per_s: float  # over the device median, else the host median
    bytes_per_s: float
    intensity: float  # flops / bytes
    roofline_fraction: float | None  # flops_per_s over the roof at the intensity; null without the peaks
    bound: str | None = dataclasses.field(metadata=choices(COMPUTE, MEMORY, None))  # null without the peaks
    speedup: float | None  # (library rows) the native median over the library's; null on native rows


ROW_FIELDS = field_names(OperationRow)


def roofline(flops_per_s: float, intensity: float, peak_flops: float | None,
             bandwidth: float | None) -> tuple[float | None, str | None]:
    """(fraction of the roof, what bounds it): the roof at `intensity` is min(peak FLOP/s, intensity x bandwidth);
    (None, None) without either peak."""
    if not peak_flops or not bandwidth:
        return None, None
    memory_roof = intensity * bandwidth
    if memory_roof < peak_flops:
        return flops_per_s / memory_roof, MEMORY
    return flops_per_s / peak_flops, COMPUTE


def with_speedups(rows: list[OperationRow]) -> list[OperationRow]:
    """The rows with each library row's speed-up over the native row of its operator and dtype (the median
    latencies, the device's where both have one)."""
    native = {(r.op, r.dtype): r for r in rows if r.oplib == NATIVE}
    found = []
    for row in rows:
        base = native.get((row.op, row.dtype))
        speedup = None
        if row.oplib != NATIVE and base is not None:
            both = base.device_median_s is not None and row.device_median_s is not None
            mine = row.device_median_s if both and row.device_median_s is not None else row.latency_median_s
            theirs = base.device_median_s if both and base.device_median_s is not None else base.latency_median_s
            speedup = theirs / mine if mine else None
        found.append(dataclasses.replace(row, speedup=speedup))
    return found
