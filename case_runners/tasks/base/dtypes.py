"""A precision's torch dtype, from the one table of element types (plan/config/benchmarks.py DTYPES)."""

from __future__ import annotations

from typing import Any

from case_runners.plan.config.benchmarks import DTYPES


def torch_dtype(precision: str) -> Any:
    import torch

    return getattr(torch, DTYPES[precision][0])
