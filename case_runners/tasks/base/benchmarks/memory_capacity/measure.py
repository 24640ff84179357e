"""memory_capacity's measurement: `single`, a binary search for the largest allocation that succeeds, and `total`,
chunks held until one fails; every allocation filled (the host commits memory only when it is written), everything
freed after each kind. Neither search goes past the bound: the least of max_bytes, the vendor's memory_bytes and the
runtime's total, of those known."""

from __future__ import annotations

from typing import Any

from case_runners.core.errors import PerfplayError
from case_runners.records.base import Measurement, measurement
from case_runners.tasks.base.benchmarks.memory_capacity import NO_BOUND, known_memory
from case_runners.tasks.base.context import BaseContext
from case_runners.tasks.base.memory import out_of_memory
from case_runners.tasks.base.sizes import size_label

CAP = "max_bytes"


def bound(params: dict[str, Any], ctx: BaseContext) -> tuple[int, str]:
    """(bytes, where from): the least of the known bounds (the cap first when they are equal)."""
    known = []
    if params["max_bytes"] is not None:
        known.append((params["max_bytes"], CAP))
    memory = known_memory(ctx.hardware)
    if memory is not None:
        known.append((memory, f"vendor.yaml hardware.{ctx.hardware_name}.memory_bytes"))
    info = ctx.runtime.memory_info(ctx.device)
    if info is not None:
        known.append((info[1], "the device's total memory (the runtime's memory_info)"))
    if not known:
        raise PerfplayError(NO_BOUND.format(hardware=ctx.hardware_name))
    return min(known, key=lambda found: found[0])


def hold(nbytes: int, ctx: BaseContext) -> Any:
    """nbytes of device memory, filled; None when the device refuses them."""
    import torch

    try:
        held = torch.empty(nbytes, dtype=torch.uint8, device=ctx.device)
        held.fill_(1)
        ctx.synchronize()
    except RuntimeError as exc:
        if not out_of_memory(exc):
            raise
        return None
    return held


def fits(nbytes: int, ctx: BaseContext) -> bool:
    """Whether the device gives nbytes at once; freed again."""
    held = hold(nbytes, ctx)
    found = held is not None
    del held
    ctx.runtime.empty_cache(ctx.device)
    return found


def largest_single(limit: int, granularity: int, ctx: BaseContext) -> int:
    """The largest single allocation up to `limit`: the limit itself, else a multiple of granularity found by
    bisection (known to fit, with the next multiple up refused or untried at the resolution)."""
    if fits(limit, ctx):
        return limit
    low, high = 0, limit  # low fits (or is 0), high does not
    while high - low > granularity:
        middle = low + max(granularity, (high - low) // 2 // granularity * granularity)
        if middle >= high:
            break
        low, high = (middle, high) if fits(middle, ctx) else (low, middle)
    return low


def largest_total(limit: int, chunk: int, granularity: int, ctx: BaseContext) -> int:
    """The bytes held at once in chunks of `chunk` (halved after a refusal, down to granularity) up to `limit`."""
    held: list[Any] = []
    total = 0
    try:
        while total < limit:
            found = hold(min(chunk, limit - total), ctx)
            if found is None:
                if chunk <= granularity:
                    break
                chunk = max(granularity, chunk // 2)
                continue
            held.append(found)
            total += found.numel()
    finally:
        held.clear()
        ctx.runtime.empty_cache(ctx.device)
    return total


def measure(params: dict[str, Any], ctx: BaseContext) -> list[Measurement]:
    found = []
    peak = ctx.peak()
    limit, source = bound(params, ctx)
    granularity = params["granularity"]
    for kind in params["kinds"]:
        if kind == "single":
            nbytes = largest_single(limit, granularity, ctx)
        else:
            nbytes = largest_total(limit, params["chunk_bytes"], granularity, ctx)
        if nbytes == 0:
            raise PerfplayError(f"memory_capacity {kind}: {ctx.device} refused even {size_label(granularity)} "
                                "(params.memory_capacity.granularity): is its memory taken by another process?")
        if nbytes < limit:
            note = f"to a granularity of {size_label(granularity)}"
        elif source == CAP:
            note = f"bounded by {CAP} ({size_label(limit)}): the device may hold more"
        else:
            note = f"reached the bound: {source} ({size_label(limit)})"
        found.append(measurement("memory_capacity", kind, f"up to {size_label(limit)}", nbytes, peak, iterations=1,
                                 seconds=None, nbytes=nbytes, note=note))
        ctx.say(f"memory_capacity {kind}: {size_label(nbytes)} ({note})")
    return found
