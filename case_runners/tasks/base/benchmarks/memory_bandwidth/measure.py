"""memory_bandwidth's measurement: per buffer size, each kind's `iterations` calls timed as one block after `warmup`
ones; achieved = the bytes a call reads and writes / its seconds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from case_runners.core.errors import PerfplayError
from case_runners.records.base import Measurement, measurement
from case_runners.tasks.base.benchmarks.memory_bandwidth import KINDS, SCALAR, element_bytes
from case_runners.tasks.base.context import BaseContext
from case_runners.tasks.base.dtypes import torch_dtype
from case_runners.tasks.base.memory import out_of_memory
from case_runners.tasks.base.sizes import size_label


def buffers(count: int, elements: int, dtype: str, device: Any) -> list[Any]:
    """`count` buffers of the dtype, filled (1, 2, 3...: every page touched, no denormals or NaN to slow the CPU)."""
    import torch

    found = []
    for i in range(count):
        found.append(torch.empty(elements, dtype=torch_dtype(dtype), device=device))
        found[-1].fill_(i + 1)
    return found


def call(kind: str, held: list[Any]) -> Callable[[], Any]:
    """copy: a <- b; triad: a <- b + SCALAR * c, in one op (torch.add with alpha, into a)."""
    import torch

    if kind == "copy":
        return lambda: held[0].copy_(held[1])
    return lambda: torch.add(held[1], held[2], alpha=SCALAR, out=held[0])


def measure(params: dict[str, Any], ctx: BaseContext) -> list[Measurement]:
    found = []
    peak = ctx.peak()
    dtype, kinds = params["dtype"], params["kinds"]
    count = max(KINDS[kind][0] for kind in kinds)
    for size in params["sizes"]:
        label = size_label(size)
        elements = size // element_bytes(dtype)
        try:
            held = buffers(count, elements, dtype, ctx.device)
        except RuntimeError as exc:
            if not out_of_memory(exc):
                raise
            raise PerfplayError(f"memory_bandwidth {label}: {count} {dtype} buffers of {label} do not fit on "
                                f"{ctx.device}: {str(exc).strip().splitlines()[0]}; lower the sizes "
                                "(params.memory_bandwidth.sizes)") from exc
        try:
            for kind in kinds:
                seconds = ctx.seconds_per_call(call(kind, held), params["iterations"], params["warmup"])
                buffers_moved, which = KINDS[kind]
                nbytes = buffers_moved * elements * element_bytes(dtype)
                found.append(measurement("memory_bandwidth", kind, label, nbytes / seconds, peak,
                                         iterations=params["iterations"], seconds=seconds, nbytes=nbytes,
                                         note=f"bytes = {buffers_moved} x buffer: {which}"))
                ctx.say(f"memory_bandwidth {kind} {label} {dtype}: {nbytes / seconds / 1e9:.2f} GB/s")
        finally:
            del held
            ctx.runtime.empty_cache(ctx.device)
    return found
