"""One operator x dtype x oplib on the rank's device: its first (cold) call at the timed shape, its output at the
table's small check shape against the float64 CPU reference (never computed at the timed shape), then `warmup`
untimed calls and `iterations` calls each timed on the host clock around the vendor's synchronize, and with the
vendor's device events where its runtime hook has them (tasks/base/timing.py's sources of time, per call here: the
median and the 99th percentile need each call)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from case_runners.records.generate import percentile
from case_runners.records.operation import OperationRow, roofline
from case_runners.tasks.operation import DTYPES, flops_and_bytes, operators
from case_runners.tasks.operation.table import OPS, REFERENCES

SEED = 1234  # the inputs: the same every round, oplib and rank


def inputs(op: str, shape: dict[str, Any], dtype: str, device: Any = None) -> tuple[Any, ...]:
    """The operator's inputs, made by a generator seeded with SEED on `device` (the CPU where None), so that a timed
    shape's gigabytes are not drawn on the host and copied over; on the CPU and copied where torch has no generator
    for the device."""
    make, _ = OPS[op]
    target = torch.device(device or "cpu")
    try:
        generator = torch.Generator(device=target)
    except RuntimeError:  # a device type without a torch generator
        generator = torch.Generator()
    made = make(shape, getattr(torch, DTYPES[dtype][0]), generator.manual_seed(SEED))
    return tuple(a.to(target) if isinstance(a, torch.Tensor) else a for a in made)


def _first(out: Any) -> torch.Tensor:
    return out[0] if isinstance(out, (tuple, list)) else out


def reference(op: str, cpu_args: tuple[Any, ...], out: torch.Tensor) -> torch.Tensor:
    """The float64 CPU result of the operator on the same inputs (REFERENCES where a random mask takes part)."""
    wide = tuple(a.to(torch.float64) if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                 for a in cpu_args)
    if op in REFERENCES:
        return REFERENCES[op](wide, out)
    return _first(OPS[op][1](*wide))


def compare(out: torch.Tensor, ref: torch.Tensor, tolerance: dict[str, float]) -> tuple[bool, float | None,
                                                                                      dict[str, float]]:
    """(correct, max absolute error, tolerance applied): a floating output within atol + rtol x |reference| of the
    reference rounded to its dtype (infinities and NaNs where the reference has them); any other exactly."""
    if out.shape != ref.shape:
        return False, None, tolerance
    exact = not out.is_floating_point()
    applied = {"atol": 0.0, "rtol": 0.0} if exact else tolerance
    expected = ref.to(out.dtype).to(torch.float64)
    got = out.to(torch.float64)
    same = (got == expected) | (got.isnan() & expected.isnan())
    close = same | torch.isclose(got, expected, atol=applied["atol"], rtol=applied["rtol"])
    error = torch.where(same, torch.zeros_like(got), (got - expected).abs())
    largest = float(error.max()) if error.numel() else 0.0
    return bool(close.all()), largest if largest == largest and largest != float("inf") else None, applied


def host_and_device_times(fn: Callable[[], Any], iterations: int, runtime: Any,
                          device: Any) -> tuple[list[float], list[float] | None]:
    """Seconds of each of `iterations` calls: on the host clock around synchronize, and by the hook's events
    (None without)."""
    synchronize = runtime.synchronizer(device)
    host = []
    for _ in range(iterations):
        synchronize()
        began = time.perf_counter()
        fn()
        synchronize()
        host.append(time.perf_counter() - began)
    if runtime.timing_event(device) is None:
        return host, None
    events = []
    for _ in range(iterations):
        start, end = runtime.timing_event(device), runtime.timing_event(device)
        start.record()
        fn()
        end.record()
        end.synchronize()
        events.append(float(start.elapsed_time(end)) / 1000.0)
    return host, events


def check(op: str, dtype: str, device: Any, kept: dict[tuple[str, str], torch.Tensor] | None = None) -> tuple[
        bool, float | None, dict[str, float]]:
    """compare's (correct, max error, tolerance) of `op` in `dtype` on `device` at its check shape (operators.yaml),
    with the oplib that is enabled. `kept`: references by (op, dtype), read before computing one and filled after
    (where the device is the CPU, a library enabled there would compute the reference too: the native side's are
    kept for it)."""
    cpu_args = inputs(op, operators()[op].check, dtype)
    got = _first(OPS[op][1](*(a.to(device) if isinstance(a, torch.Tensor) else a for a in cpu_args))).detach().cpu()
    if op in REFERENCES or kept is None or (op, dtype) not in kept:
        ref = reference(op, cpu_args, got)
        if kept is not None and op not in REFERENCES:
            kept[(op, dtype)] = ref
    else:
        ref = kept[(op, dtype)]
    return compare(got, ref, operators()[op].tolerance.get(dtype, {"atol": 0.0, "rtol": 0.0}))


def measure(op: str, dtype: str, shape: dict[str, Any], oplib: str, *, runtime: Any, device: Any,
            hardware: dict[str, Any], warmup: int, iterations: int,
            kept: dict[tuple[str, str], torch.Tensor] | None = None) -> OperationRow:
    """The row of `op` in `dtype` timed at `shape`, checked at its check shape, with `oplib` enabled already
    (`kept`: check's)."""
    args = inputs(op, shape, dtype, device)
    call = OPS[op][1]
    synchronize = runtime.synchronizer(device)
    synchronize()
    began = time.perf_counter()
    call(*args)
    synchronize()
    cold = time.perf_counter() - began
    correct, max_error, tolerance = check(op, dtype, device, kept)
    for _ in range(warmup):
        call(*args)
    host, events = host_and_device_times(lambda: call(*args), iterations, runtime, device)
    median = statistics.median(host)
    device_median = statistics.median(events) if events else None
    seconds = device_median if device_median is not None else median
    flops, moved = flops_and_bytes(op, shape, dtype)
    flops_per_s, intensity = flops / seconds, flops / moved
    fraction, bound = roofline(flops_per_s, intensity, (hardware.get("peak_flops") or {}).get(DTYPES[dtype][2]),
                               hardware.get("memory_bandwidth_bytes_s"))
    return OperationRow(op=op, dtype=dtype, oplib=oplib, shape=dict(shape), check_shape=dict(operators()[op].check),
                        correct=correct, max_error=max_error, tolerance=tolerance, latency_cold_s=cold,
                        latency_median_s=median, latency_p99_s=percentile(sorted(host), 99),
                        device_median_s=device_median, flops=flops, bytes=moved, flops_per_s=flops_per_s,
                        bytes_per_s=moved / seconds, intensity=intensity, roofline_fraction=fraction, bound=bound,
                        speedup=None)
