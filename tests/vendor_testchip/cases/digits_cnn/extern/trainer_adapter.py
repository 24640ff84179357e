"""The test chip's adapter of digits_cnn (contract: case_runners/tasks/training/adapter.py)."""

from __future__ import annotations

import os

from .converter import convert


def convert_model(model, ctx):
    swapped = convert(model)
    print(f"testchip adapter: convert_model swapped {swapped} linear layers, kernel cache "
          f"{os.environ.get('TESTCHIP_KERNEL_CACHE')}", flush=True)
    return model


def create_optimizer(model, ctx, standard):
    """The case's optimizer and schedule, with the chip's preferred (non-foreach) update kernels."""
    optimizer, scheduler = standard()
    for group in optimizer.param_groups:
        group["foreach"] = False
    print(f"testchip adapter: create_optimizer {type(optimizer).__name__} without foreach", flush=True)
    return optimizer, scheduler


def model_to_fp16(model, ctx):
    print(f"testchip adapter: model_to_fp16 keeps fp32 master weights, autocast {ctx.amp_dtype}", flush=True)
    return model


def backward(step, loss, optimizer, scaler, ctx):
    if step == 1:
        print("testchip adapter: backward", flush=True)
    (scaler.scale(loss) if scaler is not None else loss).backward()
