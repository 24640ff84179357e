"""gemm's measurement: for each precision and shape, `iterations` matmuls timed as one block after `warmup` ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from case_runners.core.errors import PerfplayError
from case_runners.records.base import Measurement, measurement
from case_runners.tasks.base.context import BaseContext
from case_runners.tasks.base.dtypes import torch_dtype


def matmul(precision: str, m: int, n: int, k: int, device: Any) -> Callable[[], Any]:
    """A call that multiplies an MxK by a KxN matrix of `precision` on the device: torch.matmul, torch._scaled_mm
    for fp8 (unit scales, bf16 out), torch._int_mm for int8 (int32 out)."""
    import torch

    dtype = torch_dtype(precision)
    if precision == "int8":
        a = torch.randint(-128, 128, (m, k), dtype=dtype, device=device)
        b = torch.randint(-128, 128, (n, k), dtype=dtype, device=device).t()  # column-major: cuBLASLt's int8 fast path
        return lambda: torch._int_mm(a, b)
    a = torch.randn(m, k, device=device).to(dtype)
    if precision == "fp8":
        b = torch.randn(n, k, device=device).to(dtype).t()  # column-major, as _scaled_mm takes it
        one = torch.ones((), device=device)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    b = torch.randn(k, n, device=device).to(dtype)
    return lambda: torch.matmul(a, b)


def measure(params: dict[str, Any], ctx: BaseContext) -> list[Measurement]:
    found = []
    try:
        for precision in params["precisions"]:
            ctx.runtime.allow_tf32(precision == "tf32")  # fp32 is fp32 unless tf32 is asked for
            peak = ctx.peak(precision)
            for m, n, k in params["shapes"]:
                size = f"{m}x{n}x{k}"
                try:
                    call = matmul(precision, m, n, k, ctx.device)
                    seconds = ctx.seconds_per_call(call, params["iterations"], params["warmup"])
                except (RuntimeError, TypeError, NotImplementedError) as exc:
                    raise PerfplayError(f"gemm {precision} {size} failed on {ctx.device}: "
                                        f"{str(exc).strip().splitlines()[0]}") from exc
                del call
                flops = 2.0 * m * n * k
                found.append(measurement("gemm", precision, size, flops / seconds, peak,
                                         iterations=params["iterations"], seconds=seconds, nbytes=None,
                                         shape=[m, n, k]))
                ctx.say(f"gemm {precision} {size}: {flops / seconds / 1e12:.3f} TFLOP/s")
    finally:
        ctx.runtime.allow_tf32(False)
    return found
