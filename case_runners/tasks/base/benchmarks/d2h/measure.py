"""d2h's measurement: device-to-host copies (case_runners/tasks/base/transfer.py, shared with h2d)."""

from __future__ import annotations

from typing import Any

from case_runners.records.base import Measurement
from case_runners.tasks.base import transfer
from case_runners.tasks.base.context import BaseContext


def measure(params: dict[str, Any], ctx: BaseContext) -> list[Measurement]:
    return transfer.measure(transfer.D2H, params, ctx)
