"""The trainer adapter points (vendor/<vendor>/cases/<case>/extern/trainer_adapter.py): each one's name, the
positional arguments the trainer calls it with, and what it does. tasks/training/adapter.py checks adapters against this
table (POINTS) and plan/config/flagperf_names.py names FlagPerf's functions with it (ADAPTER_POINTS).
"""

from __future__ import annotations

# (name, positional arguments, what it does)
ADAPTER_SIGNATURES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("convert_model", ("model", "ctx"), "the model with the vendor's layers, before it moves to the device"),
    ("model_to_fp16", ("model", "ctx"), "amp only: the model prepared for mixed precision"),
    ("create_optimizer", ("model", "ctx", "standard"),
     "(optimizer, scheduler or None); standard() gives the case's own pair"),
    ("create_grad_scaler", ("ctx",), "amp only: the gradient scaler, or None"),
    ("autocast", ("dtype", "ctx"), "amp only: the mixed-precision context of the forward pass and evaluation"),
    ("model_to_ddp", ("model", "ctx"), "world_size > 1 only: the model wrapped for data-parallel training"),
    ("train_step", ("model", "batch", "ctx"), "the forward pass: (loss, samples in the batch)"),
    ("backward", ("step", "loss", "optimizer", "scaler", "ctx"), "the backward pass of the step's loss"),
    ("update_model_params", ("step", "optimizer", "scheduler", "scaler", "ctx"),
     "clip, optimizer step, scaler update and scheduler step"),
)
_PARAMS = {name: params for name, params, _ in ADAPTER_SIGNATURES}


def adapter_call(name: str) -> str:
    """How the trainer calls a point: `backward(step, loss, optimizer, scaler, ctx)` (KeyError: not a point)."""
    return f"{name}({', '.join(_PARAMS[name])})"
