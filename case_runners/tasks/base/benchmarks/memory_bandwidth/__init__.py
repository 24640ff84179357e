"""memory_bandwidth: device memory bandwidth by buffer size, a copy and a STREAM-style triad (README.md: the method).
The device memory its sizes need, torch-free."""

from __future__ import annotations

from typing import Any

from case_runners.plan.config.benchmarks import DTYPES
from case_runners.tasks.base.sizes import size_label

# Each kind's buffers on the device, which is also how many buffers' bytes a call moves (each read or written once),
# and which they are.
KINDS = {"copy": (2, "src read, dst written"), "triad": (3, "b and c read, a written")}
SCALAR = 3.0  # triad's s, as STREAM's


def element_bytes(dtype: str) -> int:
    return DTYPES[dtype][1]


def plan_problems(params: dict[str, Any], hardware: dict[str, Any], hardware_name: str,
                  world_size: int) -> list[tuple[str, str]]:
    """Sizes that are not a whole number of the dtype's elements."""
    width = element_bytes(params["dtype"])
    return [("sizes", f"{size} bytes is not a whole number of {params['dtype']} elements ({width} bytes each)")
            for size in params["sizes"] if size % width]


def footprint(params: dict[str, Any], world_size: int) -> list[tuple[str, int]]:
    """(what, bytes) per size: the buffers of its hungriest kind, on the device at once."""
    buffers = max(KINDS[kind][0] for kind in params["kinds"])
    return [(f"memory_bandwidth {size_label(size)} x {buffers} buffers", size * buffers) for size in params["sizes"]]
