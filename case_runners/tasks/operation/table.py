"""The torch side of the operator table (operators.yaml): each operator's inputs, made from its shape params and
dtype by a seeded generator on the generator's device (the CPU for a check, whose reference gets the same values),
and its call. FlagPerf's main.py of each operator is the model: the same torch call on the same kind of inputs.
Operators FlagPerf times with a backward pass (relu, softmax, ...) are timed forward here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

Inputs = Callable[[dict[str, Any], torch.dtype, torch.Generator], tuple[Any, ...]]
DROPOUT_P = 0.2  # FlagPerf's


def _rows(p: dict[str, Any], key: str = "Melements") -> tuple[int, int]:
    """(rows, 1024): p[key] x 2**20 elements as FlagPerf's (m, 1024, 1024), flattened to rows of 1024."""
    return int(p[key] * 1024), 1024


def _randn(shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(shape, generator=gen, dtype=torch.float32, device=gen.device).to(dtype)


def _one(p: dict[str, Any], dtype: torch.dtype, gen: torch.Generator) -> tuple[Any, ...]:
    return (_randn(_rows(p), dtype, gen),)


def _two(p: dict[str, Any], dtype: torch.dtype, gen: torch.Generator) -> tuple[Any, ...]:
    return _randn(_rows(p), dtype, gen), _randn(_rows(p), dtype, gen)


def _ints(count: int) -> Inputs:
    def make(p: dict[str, Any], dtype: torch.dtype, gen: torch.Generator) -> tuple[Any, ...]:
        low, high = (-32768, 32768) if dtype != torch.int16 else (-32768, 32767)
        return tuple(torch.randint(low, high, _rows(p), generator=gen, dtype=torch.int32, device=gen.device).to(dtype)
                     for _ in range(count))
    return make


def _matrices(*shapes: Callable[[dict[str, Any]], tuple[int, ...]]) -> Inputs:
    return lambda p, dtype, gen: tuple(_randn(shape(p), dtype, gen) for shape in shapes)


def _norm_input(p: dict[str, Any], dtype: torch.dtype, gen: torch.Generator) -> tuple[Any, ...]:
    return (_randn((p["bs"], p["channel"], p["hiddensize"]), dtype, gen),)


def _dropout(x: torch.Tensor) -> torch.Tensor:
    return F.dropout(x, DROPOUT_P, training=True)


def _native_dropout(x: torch.Tensor) -> torch.Tensor:
    return torch.native_dropout(x, DROPOUT_P, True)[0]


def _native_group_norm(x: torch.Tensor) -> torch.Tensor:
    bs, channel, hidden = x.shape
    return torch.native_group_norm(x, None, None, bs, channel, hidden, channel // 2, 1e-5)[0]


def _dropout_reference(args: tuple[Any, ...], out: torch.Tensor) -> torch.Tensor:
    """Dropout's reference keeps the elements the device kept (its random mask), scaled by 1 / (1 - p)."""
    (x,) = args
    return torch.where(out.to(torch.float64) != 0, x / (1 - DROPOUT_P), torch.zeros_like(x))


# op -> (inputs, call); the call returns the tensor checked against the reference
OPS: dict[str, tuple[Inputs, Callable[..., Any]]] = {
    "abs": (_one, torch.abs),
    "add": (_two, torch.add),
    "addmm": (_matrices(lambda p: (p["M"], p["K"]), lambda p: (p["M"], p["N"]), lambda p: (p["N"], p["K"])),
              torch.addmm),
    "all": (lambda p, dtype, gen: (torch.arange(0, p["Melements"] * 1048576, dtype=torch.float32,
                                                device=gen.device).to(dtype),),
            torch.all),
    "amax": (_matrices(lambda p: (80 * p["M"], 80 * p["N"])), lambda a: torch.amax(a, 1)),
    "argmax": (_matrices(lambda p: (80 * p["M"], 80 * p["N"])), lambda a: torch.argmax(a, 1)),
    "bitwise_and": (_ints(2), torch.bitwise_and),
    "bitwise_not": (_ints(1), torch.bitwise_not),
    "bitwise_or": (_ints(2), torch.bitwise_or),
    "bmm": (_matrices(lambda p: (p["BS"], p["M"], p["N"]), lambda p: (p["BS"], p["N"], p["K"])), torch.bmm),
    "cos": (_one, torch.cos),
    "cross_entropy_loss": (lambda p, dtype, gen: (
        _randn((p["bs"], p["elements"]), dtype, gen),
        torch.randint(0, p["elements"], (p["bs"],), generator=gen, device=gen.device)), F.cross_entropy),
    "div": (_one, lambda a: torch.div(a, 0.5)),
    "dropout": (_one, _dropout),
    "eq": (_two, torch.eq),
    "exp": (_one, torch.exp),
    "ge": (_two, torch.ge),
    "gelu": (_one, F.gelu),
    "group_norm": (_norm_input, lambda a: F.group_norm(a, a.shape[1] // 2)),
    "gt": (_two, torch.gt),
    "isinf": (lambda p, dtype, gen: (_randn(_rows(p, "M"), dtype, gen),), torch.isinf),
    "isnan": (lambda p, dtype, gen: (_randn(_rows(p, "M"), dtype, gen),), torch.isnan),
    "layer_norm": (_norm_input, lambda a: F.layer_norm(a, list(a.shape[1:]))),
    "le": (_two, torch.le),
    "linear": (_matrices(lambda p: (p["M"], p["N"]), lambda p: (p["K"], p["N"])), F.linear),
    "log_softmax": (_matrices(lambda p: (p["M"] * 1024, p["N"])), lambda a: F.log_softmax(a, dim=1)),
    "lt": (_two, torch.lt),
    "max": (_one, torch.max),
    "mean": (_one, torch.mean),
    "min": (_one, torch.min),
    "mm": (_matrices(lambda p: (p["M"], p["N"]), lambda p: (p["N"], p["K"])), torch.mm),
    "mul": (_one, lambda a: torch.mul(a, 2)),
    "mv": (_matrices(lambda p: (p["M"], p["N"]), lambda p: (p["N"],)), torch.mv),
    "native_dropout": (_one, _native_dropout),
    "native_group_norm": (_norm_input, _native_group_norm),
    "ne": (_two, torch.ne),
    "neg": (_one, torch.neg),
    "outer": (_matrices(lambda p: (10 * p["M"],), lambda p: (10 * p["N"],)), torch.outer),
    "pow": (_one, lambda a: torch.pow(a, 2)),
    "prod": (_one, torch.prod),
    "reciprocal": (_one, torch.reciprocal),
    "relu": (_one, torch.relu),
    "rsqrt": (lambda p, dtype, gen: (_randn(_rows(p), dtype, gen).abs(),), torch.rsqrt),
    "rsub": (_two, torch.rsub),
    "sigmoid": (_one, torch.sigmoid),
    "silu": (_one, F.silu),
    "sin": (_one, torch.sin),
    "softmax": (_one, lambda a: F.softmax(a, dim=1)),
    "sub": (_two, torch.sub),
    "sum": (_one, torch.sum),
    "tanh": (_one, torch.tanh),
    "triu": (_matrices(lambda p: (50 * p["M"], 50 * p["N"])), torch.triu),
}
# op -> reference(float64 inputs, the device's output): where the call alone cannot be repeated (random masks)
REFERENCES: dict[str, Callable[[tuple[Any, ...], torch.Tensor], torch.Tensor]] = {
    "dropout": _dropout_reference, "native_dropout": _dropout_reference}
