"""Operator rows (task operation) as an operation case's summary carries them, for the views' tests: `row` one row
(the keys of the task's record type, records/operation.py), `summary_case` a summary case with rows, `run` a run
directory with its roofs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from case_runners.core.paths import RESOLVED_NAME
from case_runners.plan.config.resolved import OPERATION
from case_runners.records.operation import OperationRow
from case_runners.records.summary import RunSummary, Stat, SummaryCase, stat_keys
from case_runners.views.report.data import RunData

# A chip's roofs, as vendor.yaml hardware.<chip> states them: 100 TFLOP/s fp32, 400 bf16, 2 TB/s.
HARDWARE = {"peak_flops": {"fp32": 1.0e14, "bf16": 4.0e14}, "memory_bandwidth_bytes_s": 2.0e12}


def row(op: str, dtype: str, oplib: str, median_s: float, flops: float, nbytes: float, *, correct: bool = True,
        max_error: float | None = 1e-7, tolerance: float = 1e-5, native_s: float | None = None,
        shape: dict[str, int] | None = None, hardware: dict[str, Any] = HARDWARE) -> dict[str, Any]:
    """A row whose figures follow from its latency, FLOPs and bytes against `hardware`'s roofs (the task's
    arithmetic); native_s: the native row's median, for a library row's speed-up."""
    peak = hardware["peak_flops"][dtype.lower()]
    intensity = flops / nbytes
    roof = min(peak, intensity * hardware["memory_bandwidth_bytes_s"])
    doc = {"op": op, "dtype": dtype, "oplib": oplib, "shape": shape or {"Melements": 1},
           "check_shape": {"Melements": 0.0625}, "correct": correct, "max_error": max_error,
           "tolerance": {"atol": tolerance, "rtol": tolerance}, "latency_cold_s": median_s * 20,
           "latency_median_s": median_s, "latency_p99_s": median_s * 1.2, "device_median_s": None, "flops": flops,
           "bytes": nbytes, "flops_per_s": flops / median_s, "bytes_per_s": nbytes / median_s,
           "intensity": intensity, "roofline_fraction": flops / median_s / roof,
           "bound": "compute" if roof == peak else "memory",
           "speedup": None if native_s is None else native_s / median_s}
    assert OperationRow.from_json(doc).to_json() == doc, "a row of the task's record type"
    return doc


def summary_case(rows: list[dict[str, Any]], *, case: str = "operators", hardware: str = "H100",
                 vendor: str = "nvidia") -> SummaryCase:
    """A one-round operation case of `rows` at 1x1."""
    return SummaryCase(
        case_id=f"{case}_{hardware}x1x1", case=case, task=OPERATION, vendor=vendor, hardware=hardware, nnodes=1,
        nproc=1, framework="pytorch", metric=None, target=None,
        rounds=[{"round": 1, "status": "success", "reason": None}],
        stats={key: Stat.of([1.0]) for key in stat_keys(OPERATION)}, per_node=[], succeeded=1, converged=1,
        status="success", operation=[OperationRow.from_json(r) for r in rows])


def run(run_dir: Path, cases: list[SummaryCase], hardware: dict[str, Any] = HARDWARE) -> RunData:
    """A run of `cases`, each case directory with the vendor_info.hardware its roofs are read from."""
    for case in cases:
        (run_dir / case.case_id).mkdir(parents=True, exist_ok=True)
        (run_dir / case.case_id / RESOLVED_NAME).write_text(json.dumps({"vendor_info": {"hardware": hardware}}))
    summary = RunSummary(run_id=run_dir.name, cases=cases, ok=True, failed_rounds=[], non_standard_cases=[],
                         scaling=[])
    return RunData(run_dir=run_dir, summary=summary, rounds=[])


def standard_rows() -> list[dict[str, Any]]:
    """mm (compute-bound) and add (memory-bound) in FP32 and BF16, native and flag_gems; flag_gems' BF16 add is
    wrong."""
    mm = {"flops": 2.0 * 4096 ** 3, "nbytes": 3.0 * 4096 ** 2 * 4, "shape": {"M": 4096, "N": 4096, "K": 4096}}
    add = {"flops": 2.0 ** 28, "nbytes": 3.0 * 2 ** 28 * 4, "shape": {"Melements": 256}}
    add_bf16 = {**add, "nbytes": add["nbytes"] / 2}
    return [row("mm", "FP32", "native", 2e-3, **mm), row("mm", "FP32", "flag_gems", 2.5e-3, native_s=2e-3, **mm),
            row("mm", "BF16", "native", 5e-4, **mm), row("mm", "BF16", "flag_gems", 4e-4, native_s=5e-4, **mm),
            row("add", "FP32", "native", 2e-3, **add), row("add", "FP32", "flag_gems", 1.8e-3, native_s=2e-3, **add),
            row("add", "BF16", "native", 1e-3, **add_bf16),
            row("add", "BF16", "flag_gems", 1e-3, native_s=1e-3, correct=False, max_error=0.5, tolerance=0.016,
                **add_bf16)]
