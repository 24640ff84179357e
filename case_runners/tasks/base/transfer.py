"""Host-device copies, the method of both h2d and d2h (their README.md): for each mode and size, `iterations` copies
of one buffer timed as one block after `warmup` ones. Torch-free at import: the plan imports footprint."""

from __future__ import annotations

from typing import Any

from case_runners.core.errors import PerfplayError
from case_runners.records.base import Measurement, measurement
from case_runners.tasks.base.context import BaseContext
from case_runners.tasks.base.sizes import size_label
from case_runners.vendors.plugin_source import last_line

H2D, D2H = "h2d", "d2h"
DIRECTIONS = (H2D, D2H)
PINNED, PAGEABLE = "pinned", "pageable"  # the modes: page-locked host memory (the runtime's pin_memory) or plain
MODES = (PINNED, PAGEABLE)
HOST_NOTE = "the device is the host: a host-memory copy (memcpy), not a bus transfer"


def footprint(params: dict[str, Any], world_size: int) -> list[tuple[str, int]]:
    """(what, bytes) of each size: the device's buffer (the host holds its copy)."""
    return [(f"a transfer of {size_label(size)}", size) for size in params["sizes"]]


def _pinned_problem(ctx: BaseContext) -> str | None:
    """Why the runtime cannot give this device pinned host memory, or None when it can."""
    if ctx.device.type == "cpu":
        return "the device is the host's CPU: a copy is host memory to host memory, there is no page-locked staging"
    import torch

    try:
        ctx.runtime.pin_memory(torch.ones(1, dtype=torch.uint8))
    except PerfplayError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - torch's own failure (no accelerator to pin for), named
        return last_line(exc)
    return None


def _seconds_per_copy(direction: str, mode: str, size: int, params: dict[str, Any], ctx: BaseContext) -> float:
    """Seconds per copy of `size` bytes between a host buffer of `mode` and one on the device (both freed after)."""
    import torch

    host = torch.ones(size, dtype=torch.uint8)
    if mode == PINNED:
        host = ctx.runtime.pin_memory(host)
    device = torch.ones(size, dtype=torch.uint8, device=ctx.device)
    src, dst = (host, device) if direction == H2D else (device, host)
    return ctx.seconds_per_call(lambda: dst.copy_(src, non_blocking=mode == PINNED), params["iterations"],
                                params["warmup"])


def measure(direction: str, params: dict[str, Any], ctx: BaseContext) -> list[Measurement]:
    """Copies host to device (h2d) or device to host (d2h): `dst.copy_(src)`, non-blocking from pinned memory;
    bytes = the size, achieved = bytes / seconds per copy, against the host-device link's peak."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, not {direction!r}")
    if PINNED in params["modes"]:
        why = _pinned_problem(ctx)
        if why is not None:
            raise PerfplayError(f"{direction} mode '{PINNED}' cannot run on {ctx.device}: {why}. Pinned host memory "
                                f"comes from the vendor's runtime hook pin_memory ({ctx.runtime.shown}); measure "
                                f"modes [{PAGEABLE}] here (params.{direction}.modes in the vendor's base.yaml, or "
                                f"a run override)")
    peak = ctx.peak()
    note = {"note": HOST_NOTE} if ctx.device.type == "cpu" else {}
    found = []
    for mode in params["modes"]:
        for size in params["sizes"]:
            shown = size_label(size)
            try:
                seconds = _seconds_per_copy(direction, mode, size, params, ctx)
            except RuntimeError as exc:  # out of host or device memory, a failed copy
                raise PerfplayError(f"{direction} {mode} {shown} failed on {ctx.device}: {last_line(exc)}") from exc
            found.append(measurement(direction, mode, shown, size / seconds, peak, iterations=params["iterations"],
                                     seconds=seconds, nbytes=size, **note))
            ctx.say(f"{direction} {mode} {shown}: {size / seconds / 1e9:.3f} GB/s")
    return found
