"""The test chip's operator library (its FlagGems): CPU kernels of its own for aten's relu, add and silu, written
differently from aten's, registered over aten's through torch.library when the runtime hook's enable_oplib("testlib")
runs. BROKEN names kernels made deliberately wrong (a test sets it): the correctness check must catch them."""

from __future__ import annotations

import torch

BROKEN: tuple[str, ...] = ()
_LIBRARY: list[torch.library.Library] = []  # kept alive: the registrations last as long as the Library object


def _relu(x: torch.Tensor) -> torch.Tensor:
    kept = x * (x > 0)  # the sign mask times the input
    return kept + 0.5 if "relu" in BROKEN else kept


def _add(a: torch.Tensor, b: torch.Tensor, *, alpha: float = 1) -> torch.Tensor:
    total = torch.sub(a, b, alpha=-alpha)  # a - (-alpha) b
    return total * 1.01 if "add" in BROKEN else total


def _silu(x: torch.Tensor) -> torch.Tensor:
    found = x / (1 + torch.exp(-x))  # x sigmoid(x) as a quotient
    return -found if "silu" in BROKEN else found


def enable() -> None:
    """Register the kernels over aten's CPU ones, once per process."""
    if _LIBRARY:
        return
    library = torch.library.Library("aten", "IMPL")
    for name, kernel in (("relu", _relu), ("add.Tensor", _add), ("silu", _silu)):
        library.impl(name, kernel, "CPU")
    _LIBRARY.append(library)
