"""p2p's measurement (case_runners/tasks/base/collectives.py: by message size, the slowest rank's time)."""

from __future__ import annotations

from typing import Any

from case_runners.records.base import Measurement
from case_runners.tasks.base import collectives
from case_runners.tasks.base.context import BaseContext


def measure(params: dict[str, Any], ctx: BaseContext) -> list[Measurement]:
    return collectives.measure(collectives.P2P, params, ctx)
