"""h2d's measurement: host-to-device copies (case_runners/base/transfer.py, shared with d2h)."""

from __future__ import annotations

from typing import Any

from case_runners.base import transfer
from case_runners.base.context import BaseContext
from case_runners.records.base import Measurement


def measure(params: dict[str, Any], ctx: BaseContext) -> list[Measurement]:
    return transfer.measure(transfer.H2D, params, ctx)
