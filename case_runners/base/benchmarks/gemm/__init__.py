"""gemm: matmul FLOP/s per precision (README.md: the method). The device memory its shapes need, torch-free."""

from __future__ import annotations

from typing import Any

# Bytes per element of the inputs and of the output, by precision (fp8 writes bf16, int8 accumulates in int32).
ELEMENT_BYTES = {"fp64": (8, 8), "fp32": (4, 4), "tf32": (4, 4), "fp16": (2, 2), "bf16": (2, 2), "fp8": (1, 2),
                 "int8": (1, 4)}


def footprint(params: dict[str, Any], world_size: int) -> list[tuple[str, int]]:
    """(what, bytes) of each matmul: A, B and the output on the device at once."""
    found = []
    for precision in params["precisions"] or []:
        inputs, output = ELEMENT_BYTES.get(precision, (8, 8))
        for m, n, k in params["shapes"]:
            found.append((f"gemm {precision} {m}x{n}x{k}", (m * k + k * n) * inputs + m * n * output))
    return found
