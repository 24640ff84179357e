"""gemm: matmul FLOP/s per precision (README.md: the method). The device memory its shapes need, torch-free."""

from __future__ import annotations

from typing import Any

from case_runners.plan.config.benchmarks import DTYPES

OUTPUT_BYTES = {"fp8": 2, "int8": 4}  # fp8 writes bf16, int8 accumulates in int32; the others write their own type


def footprint(params: dict[str, Any], world_size: int) -> list[tuple[str, int]]:
    """(what, bytes) of each matmul: A, B and the output on the device at once."""
    found = []
    for precision in params["precisions"] or []:
        inputs = DTYPES[precision][1]
        output = OUTPUT_BYTES.get(precision, inputs)
        for m, n, k in params["shapes"]:
            found.append((f"gemm {precision} {m}x{n}x{k}", (m * k + k * n) * inputs + m * n * output))
    return found
