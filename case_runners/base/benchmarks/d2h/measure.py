"""d2h's measurement: device-to-host copies (case_runners/base/transfer.py, shared with h2d)."""

from __future__ import annotations

from typing import Any

from case_runners.base import transfer
from case_runners.base.context import BaseContext
from case_runners.records.base import Measurement


def measure(params: dict[str, Any], ctx: BaseContext) -> list[Measurement]:
    return transfer.measure(transfer.D2H, params, ctx)
