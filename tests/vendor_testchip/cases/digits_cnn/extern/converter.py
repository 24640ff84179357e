"""Swap the model's linear layers for the chip's own (FlagPerf's extern/converter.py pattern)."""

from __future__ import annotations

from torch import nn

from case_runners.tasks.training.adapter import replace_modules

from .layers.linear import TestchipLinear


def convert(model: nn.Module) -> int:
    return replace_modules(model, {nn.Linear: TestchipLinear.from_linear})
