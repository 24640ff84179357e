"""The collective benchmarks (allreduce, allgather, p2p), defined once: their bus-bandwidth conventions, the element
types they send, their device memory and plan-time checks, and their measurement by message size.

Conventions of nccl-tests (doc/PERFORMANCE.md): algbw = S / t, busbw = algbw x the collective's bus factor, with t
the slowest rank's seconds per call and S the bytes of the collective (allgather: the gathered total). The figure
against the interconnect's peak is busbw. Importing this module never imports torch (the plan uses it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from case_runners.core.errors import PerfplayError
from case_runners.plan.config.benchmarks import DTYPES
from case_runners.records.base import Measurement, measurement
from case_runners.tasks.base.context import BaseContext
from case_runners.tasks.base.dtypes import torch_dtype
from case_runners.tasks.base.sizes import size_label

ALLREDUCE, ALLGATHER, P2P = "allreduce", "allgather", "p2p"
SENT_TYPES = ("fp64", "fp32", "fp16", "bf16")  # the element types a collective sends (plan/config/benchmarks.py DTYPES)


@dataclasses.dataclass(frozen=True)
class Collective:
    name: str
    operation: str  # the torch.distributed call timed; with the dtype, the measurements' kind
    bus_factor: Callable[[int], float]  # of n ranks: busbw / algbw
    gathers: bool  # S is n x the message (each rank's contribution), else the message
    convention: str  # how S and busbw are counted, in each measurement's note


COLLECTIVES = {c.name: c for c in (
    Collective(ALLREDUCE, "all_reduce", lambda n: 2 * (n - 1) / n, False,
               "algbw = S / t with S the message; busbw = algbw x 2(n-1)/n"),
    Collective(ALLGATHER, "all_gather", lambda n: (n - 1) / n, True,
               "algbw = S / t with S the gathered total (n x the message per rank); busbw = algbw x (n-1)/n"),
    Collective(P2P, "send_recv", lambda n: 1.0, False,
               "rank 0 sends S to rank 1: algbw = S / t with S the message; busbw = algbw"),
)}


def collective_bytes(name: str, message: int, n: int) -> int:
    """S: the bytes of the collective on n ranks for a message of `message` bytes (per rank for allgather)."""
    return n * message if COLLECTIVES[name].gathers else message


def bandwidths(name: str, message: int, n: int, seconds: float) -> tuple[float, float]:
    """(algbw, busbw) in bytes/s of one call taking `seconds`."""
    algbw = collective_bytes(name, message, n) / seconds
    return algbw, algbw * COLLECTIVES[name].bus_factor(n)


def footprint(name: str, params: dict[str, Any], world_size: int) -> list[tuple[str, int]]:
    """(what, bytes) per message size: the buffers one rank holds at once (allgather: its input and the n x larger
    output; the others: the message, reduced or sent in place)."""
    if COLLECTIVES[name].gathers:
        return [(f"{name} of {size_label(size)} per rank on {world_size} ranks",
                 size + collective_bytes(name, size, world_size)) for size in params["sizes"]]
    return [(f"{name} {size_label(size)}", size) for size in params["sizes"]]


def plan_problems(params: dict[str, Any], hardware: dict[str, Any], hardware_name: str,
                  world_size: int) -> list[tuple[str, str]]:
    """(param, message): a dtype the collectives do not send, a size that is no whole number of elements."""
    dtype = params["dtype"]
    if dtype not in SENT_TYPES:
        return [("dtype", f"'{dtype}' is not an element type the collectives send: one of "
                          f"{', '.join(SENT_TYPES)}")]
    return [("sizes", f"{size} bytes is no whole number of {dtype} elements ({DTYPES[dtype][1]} bytes each)")
            for size in params["sizes"] if size % DTYPES[dtype][1]]


def measure(name: str, params: dict[str, Any], ctx: BaseContext) -> list[Measurement]:
    """Per message size: the buffers on the device, one call checked for the values it must deliver, a barrier,
    then `warmup` untimed and `iterations` timed calls (ctx.seconds_per_call); every rank reports the slowest
    rank's seconds."""
    import torch.distributed as dist

    spec, n, dtype = COLLECTIVES[name], ctx.world_size, params["dtype"]
    if name == P2P and n != 2:
        raise PerfplayError(f"p2p runs between two ranks, not {n}")
    peak = ctx.peak()
    found = []
    for message in params["sizes"]:
        label = size_label(message) + (" per rank" if spec.gathers else "")
        what = f"{name} {label} {dtype} on {ctx.device} ({n} ranks, {ctx.runtime.dist_backend})"
        try:
            call, delivered = _collective(name, message // DTYPES[dtype][1], torch_dtype(dtype),
                                          ctx.rank, n, ctx.device)
            call()
            _agree(delivered(), what, ctx.device)
            dist.barrier()
            seconds = _slowest(ctx.seconds_per_call(call, params["iterations"], params["warmup"]), ctx.device)
        except (RuntimeError, ValueError) as exc:
            raise PerfplayError(f"{what} failed: {(str(exc).strip().splitlines() or [type(exc).__name__])[0]}") from exc
        del call, delivered
        algbw, busbw = bandwidths(name, message, n, seconds)
        found.append(measurement(name, f"{spec.operation} {dtype}", label, busbw, peak,
                                 iterations=params["iterations"], seconds=seconds,
                                 nbytes=collective_bytes(name, message, n), algbw=algbw,
                                 note=f"nccl-tests convention, n = {n} ranks: {spec.convention}; t = the slowest "
                                      "rank's seconds per call"))
        ctx.say(f"{name} {label}: busbw {busbw / 1e9:.3f} GB/s, algbw {algbw / 1e9:.3f} GB/s, "
                f"{seconds * 1e6:.1f} us per call")
    return found


def _collective(name: str, count: int, dtype: Any, rank: int, n: int,
                device: Any) -> tuple[Callable[[], Any], Callable[[], bool]]:
    """(the call, whether the last call delivered what it must): the buffers on the device, filled so the first
    call's result is known; after the check the timed calls keep going on the same buffers."""
    import torch
    import torch.distributed as dist

    if name == ALLREDUCE:
        buffer = torch.ones(count, dtype=dtype, device=device)

        def reduced() -> bool:
            ok = _all_equal(buffer, n)
            buffer.zero_()  # the timed sums stay at zero: no overflow in fp16
            return ok
        return lambda: dist.all_reduce(buffer), reduced
    if name == ALLGATHER:
        mine = torch.full((count,), rank, dtype=dtype, device=device)
        gathered = torch.empty(n * count, dtype=dtype, device=device)
        return (lambda: dist.all_gather_into_tensor(gathered, mine)), \
            lambda: all(_all_equal(part, i) for i, part in enumerate(gathered.view(n, count)))
    buffer = torch.ones(count, dtype=dtype, device=device) if rank == 0 else \
        torch.zeros(count, dtype=dtype, device=device)
    if rank == 0:
        return lambda: dist.send(buffer, 1), lambda: True
    return lambda: dist.recv(buffer, 0), lambda: _all_equal(buffer, 1)


def _all_equal(tensor: Any, value: int) -> bool:
    """Whether every element is `value` (its least and greatest: no tensor of the buffer's size)."""
    return float(tensor.min()) == value == float(tensor.max())


def _agree(ok: bool, what: str, device: Any) -> None:
    """Every rank learns whether every rank got what it must (so all of them stop, none waits on the others)."""
    import torch
    import torch.distributed as dist

    flag = torch.tensor([1 if ok else 0], dtype=torch.int32, device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    if not int(flag.item()):
        raise PerfplayError(f"{what}: a rank received wrong values from its first call")


def _slowest(seconds: float, device: Any) -> float:
    """The largest of every rank's seconds."""
    import torch
    import torch.distributed as dist

    found = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(found, op=dist.ReduceOp.MAX)
    return float(found.item())
