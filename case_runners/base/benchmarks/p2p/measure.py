"""p2p's measurement (case_runners/base/collectives.py: by message size, the slowest rank's time)."""

from __future__ import annotations

from typing import Any

from case_runners.base import collectives
from case_runners.base.context import BaseContext
from case_runners.records.base import Measurement


def measure(params: dict[str, Any], ctx: BaseContext) -> list[Measurement]:
    return collectives.measure(collectives.P2P, params, ctx)
