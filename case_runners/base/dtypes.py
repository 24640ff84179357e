"""A precision's torch dtype, from the one table of element types (config/benchmarks.py DTYPES)."""

from __future__ import annotations

from typing import Any

from case_runners.config.benchmarks import DTYPES


def torch_dtype(precision: str) -> Any:
    import torch

    return getattr(torch, DTYPES[precision][0])
