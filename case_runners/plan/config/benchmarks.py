"""The base benchmarks, defined once: each one's name, how many ranks it takes, its unit and the vendor's peak it is
measured against (vendor.yaml `hardware.<HW>`: the keys in HARDWARE_PEAKS, documented in docs/adapting-a-chip.md).

A leaf of the configuration, torch-free: the plan, the vendor check, the records, the summary and the base task
(case_runners/tasks/base/) import it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

ONE = "one"  # one process per device: each rank measures its own device (nproc > 1: all devices at once)
COLLECTIVE = "collective"  # every rank of the round in one process group: at least two
PAIR = "pair"  # exactly two ranks, in one process group

FLOP_S, BYTES_S, BYTES = "FLOP/s", "B/s", "B"

# The hardware table's keys the base benchmarks read (peak_flops, memory_bytes were there before them).
PEAK_FLOPS = "peak_flops"  # {precision: dense FLOP/s}
MEMORY_BYTES = "memory_bytes"  # device memory
MEMORY_BANDWIDTH = "memory_bandwidth_bytes_s"  # device memory bandwidth (datasheet)
H2D = "h2d_bytes_s"  # host-device link, one direction (both h2d and d2h are measured against it)
INTERCONNECT = "interconnect_bytes_s"  # {intra: within a node, inter: across nodes}: one device's, one direction
INTRA, INTER = "intra", "inter"
PRECISIONS_KEY = "precisions"  # the precisions the device computes (default: those of peak_flops)
HARDWARE_PEAKS = (PEAK_FLOPS, MEMORY_BYTES, MEMORY_BANDWIDTH, H2D, INTERCONNECT)

# How a base benchmark measures (its `mode` param, declared for every benchmark here): perfplay's torch benchmark,
# the vendor's toolkit (vendor/<vendor>/base/toolkits/<benchmark>/: vendors/toolkits.py), or both, side by side.
MODE = "mode"
TORCH, TOOLKIT, BOTH = "torch", "toolkit", "both"
MODES = (TORCH, TOOLKIT, BOTH)
MODE_PARAM = {MODE: {"default": TORCH, "type": "str", "choices": list(MODES)}}
SOURCES = (TORCH, TOOLKIT)  # what measured a figure (records/base.py Measurement.source)


def runs_toolkit(params: Mapping[str, Any]) -> bool:
    """Whether a base benchmark's resolved params run the vendor's toolkit."""
    return params.get(MODE, TORCH) in (TOOLKIT, BOTH)


def runs_torch(params: Mapping[str, Any]) -> bool:
    """Whether they run perfplay's torch benchmark."""
    return params.get(MODE, TORCH) in (TORCH, BOTH)


FLOP_CONVENTION = "FLOPs of an MxK by KxN matmul = 2*M*N*K (1 multiply-add = 2 FLOPs)"
# A precision's element type: the torch dtype's name (torch-free here) and its bytes per element. tf32 computes on
# fp32 tensors; fp8 is e4m3.
DTYPES: dict[str, tuple[str, int]] = {
    "fp64": ("float64", 8), "fp32": ("float32", 4), "tf32": ("float32", 4), "fp16": ("float16", 2),
    "bf16": ("bfloat16", 2), "fp8": ("float8_e4m3fn", 1), "int8": ("int8", 1)}


@dataclasses.dataclass(frozen=True)
class Benchmark:
    name: str
    ranks: str  # ONE, COLLECTIVE or PAIR
    unit: str  # of its achieved figure
    peak: str  # the hardware table key of its peak
    measures: str  # one line, for --help, the docs and messages
    convention: str  # how its figure is counted, stated in every record


BUS = "nccl-tests' convention: algbw = S / t"
BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (
    Benchmark("gemm", ONE, FLOP_S, PEAK_FLOPS, "matmul FLOP/s per precision, square and LLM-shaped",
              FLOP_CONVENTION),
    Benchmark("memory_bandwidth", ONE, BYTES_S, MEMORY_BANDWIDTH,
              "device memory bandwidth: device-to-device copy and a STREAM-style triad",
              "bytes = read + written per iteration: copy 2 x size, triad (a = b + s*c) 3 x size"),
    Benchmark("memory_capacity", ONE, BYTES, MEMORY_BYTES,
              "the largest single allocation and the total one process can hold", "bytes allocated and held"),
    Benchmark("h2d", ONE, BYTES_S, H2D, "host-to-device copies from pinned and pageable memory, by size",
              "bytes = the transfer size, one way"),
    Benchmark("d2h", ONE, BYTES_S, H2D, "device-to-host copies to pinned and pageable memory, by size",
              "bytes = the transfer size, one way"),
    Benchmark("allreduce", COLLECTIVE, BYTES_S, INTERCONNECT, "all-reduce bus bandwidth by message size",
              f"{BUS} with S the message size; busbw = algbw x 2(n-1)/n over n ranks"),
    Benchmark("allgather", COLLECTIVE, BYTES_S, INTERCONNECT, "all-gather bus bandwidth by message size",
              f"{BUS} with S the gathered bytes (n x the message); busbw = algbw x (n-1)/n"),
    Benchmark("p2p", PAIR, BYTES_S, INTERCONNECT, "send/recv bandwidth between two ranks by message size",
              f"{BUS} with S the message rank 0 sends rank 1; busbw = algbw"),
)}


def supported_precisions(hardware: Mapping[str, Any]) -> list[str]:
    """The precisions a device computes: its `precisions` list, else the precisions of its peak_flops."""
    listed = hardware.get(PRECISIONS_KEY)
    if isinstance(listed, list):
        return [str(p) for p in listed]
    return list((hardware.get(PEAK_FLOPS) or {}).keys())


@dataclasses.dataclass(frozen=True)
class Peak:
    """A measurement's peak: its value, the vendor.yaml key it came from, and why there is none."""
    value: float | None
    key: str  # hardware.H100.peak_flops.bf16
    reason: str | None  # why value is None


def scope(nnodes: int) -> str:
    """A collective's interconnect: within a node (intra) or across nodes (inter)."""
    return INTER if nnodes > 1 else INTRA


def peak_for(benchmark: str, hardware_name: str, hardware: Mapping[str, Any], *, precision: str | None = None,
             nnodes: int = 1) -> Peak:
    """The peak of `benchmark` on `hardware` (the resolved config's vendor_info.hardware): the precision's peak
    FLOP/s for gemm, the intra- or inter-node interconnect for a collective (by nnodes), else its own key."""
    spec = BENCHMARKS[benchmark]
    path = [spec.peak]
    if spec.peak == PEAK_FLOPS:
        path.append(str(precision))
    elif spec.peak == INTERCONNECT:
        path.append(scope(nnodes))
    key = ".".join(["hardware", hardware_name, *path])
    value: Any = hardware
    for part in path:
        value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return Peak(float(value), key, None)
    return Peak(None, key, f"the vendor gives no peak: vendor.yaml has no {key}")


def fraction(achieved: float | None, peak: Peak) -> float | None:
    """achieved / peak, or None without either."""
    if achieved is None or peak.value is None:
        return None
    return achieved / peak.value
