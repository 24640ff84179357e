"""allreduce: all-reduce bus bandwidth by message size (README.md: the method). Its device memory and
plan-time checks, torch-free, are the collectives' (case_runners/tasks/base/collectives.py)."""

from __future__ import annotations

from typing import Any

from case_runners.tasks.base import collectives

plan_problems = collectives.plan_problems  # the plan's hook: the dtype and sizes, the same for every collective


def footprint(params: dict[str, Any], world_size: int) -> list[tuple[str, int]]:
    return collectives.footprint(collectives.ALLREDUCE, params, world_size)
