"""h2d's measurement: host-to-device copies (case_runners/tasks/base/transfer.py, shared with d2h)."""

from __future__ import annotations

from typing import Any

from case_runners.records.base import Measurement
from case_runners.tasks.base import transfer
from case_runners.tasks.base.context import BaseContext


def measure(params: dict[str, Any], ctx: BaseContext) -> list[Measurement]:
    return transfer.measure(transfer.H2D, params, ctx)
