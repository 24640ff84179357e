"""memory_capacity: the largest single allocation and the total one process can hold on the device (README.md: the
method). Its bound and the device memory it may take, torch-free."""

from __future__ import annotations

from typing import Any

from case_runners.plan.config.benchmarks import MEMORY_BYTES

NO_BOUND = ("memory_capacity needs a bound: set max_bytes (the vendor's base.yaml params.memory_capacity.max_bytes, "
            "or a run override) or the device's memory in vendor.yaml hardware.{hardware}.memory_bytes")


def known_memory(hardware: dict[str, Any]) -> int | None:
    """The vendor's memory_bytes, where it gives one."""
    value = hardware.get(MEMORY_BYTES)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def plan_problems(params: dict[str, Any], hardware: dict[str, Any], hardware_name: str,
                  world_size: int) -> list[tuple[str, str]]:
    """No bound at all (neither max_bytes nor memory_bytes), a granularity above the chunk."""
    problems = []
    if params["max_bytes"] is None and known_memory(hardware) is None:
        problems.append(("max_bytes", NO_BOUND.format(hardware=hardware_name)))
    if params["granularity"] > params["chunk_bytes"]:
        problems.append(("granularity", f"{params['granularity']} is more than chunk_bytes "
                                        f"({params['chunk_bytes']}): total's chunks halve down to it"))
    return problems


def footprint(params: dict[str, Any], world_size: int) -> list[tuple[str, int]]:
    """The bound it sets itself (max_bytes): never more than the device's memory."""
    if params["max_bytes"] is None:
        return []
    return [("memory_capacity max_bytes", params["max_bytes"])]
