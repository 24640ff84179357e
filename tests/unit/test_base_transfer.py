"""h2d and d2h (case_runners/tasks/base/transfer.py) on the CPU: each copy counted as its size, the pinned mode refused
where there is no pinned memory, and a size beyond the device's memory refused when the run is planned."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from case_runners.core.errors import PerfplayError
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.plan.run_plan import make_plan
from case_runners.tasks.base import transfer
from case_runners.tasks.base.benchmarks.d2h.measure import measure as measure_d2h
from case_runners.tasks.base.benchmarks.h2d.measure import measure as measure_h2d
from case_runners.tasks.base.context import BaseContext
from case_runners.tasks.base.sizes import size_label
from case_runners.vendors.runtime import VendorRuntime

ROOT = Path(__file__).resolve().parents[2]
SIZES = [4096, 1 << 20]


def cpu_context(benchmark: str, lines: list[str]) -> BaseContext:
    import torch

    runtime = VendorRuntime("cpu", "cpu", "gloo")
    runtime.prepare()
    return BaseContext(benchmark=benchmark, runtime=runtime, device=torch.device("cpu"), hardware_name="CPU",
                       hardware={"h2d_bytes_s": None}, nnodes=1, rank=0, world_size=1, say=lines.append)


def params(**over: Any) -> dict[str, Any]:
    return {"sizes": SIZES, "modes": ["pageable"], "warmup": 1, "iterations": 3, **over}


@pytest.mark.parametrize(("benchmark", "measure"), [("h2d", measure_h2d), ("d2h", measure_d2h)])
def test_pageable_copies_count_their_size(benchmark: str, measure: Any) -> None:
    lines: list[str] = []
    found = measure(params(), cpu_context(benchmark, lines))
    assert [(m.benchmark, m.kind, m.bytes, m.size) for m in found] == [
        (benchmark, "pageable", size, size_label(size)) for size in SIZES]
    for m in found:
        assert m.unit == "B/s" and m.iterations == 3
        assert m.seconds is not None and m.seconds > 0 and math.isfinite(m.achieved) and m.achieved > 0
        assert m.achieved == pytest.approx(m.bytes / m.seconds)
        assert m.peak is None and m.fraction_of_peak is None
        assert m.peak_key == "hardware.CPU.h2d_bytes_s" and "no peak" in m.reason
        assert m.note == transfer.HOST_NOTE
    assert len(lines) == len(SIZES) and all(line.startswith(f"{benchmark} pageable ") for line in lines)


@pytest.mark.parametrize("benchmark", ["h2d", "d2h"])
def test_pinned_is_refused_on_the_cpu_naming_mode_device_and_hook(benchmark: str) -> None:
    lines: list[str] = []
    measure = measure_h2d if benchmark == "h2d" else measure_d2h
    with pytest.raises(PerfplayError) as caught:
        measure(params(modes=["pageable", "pinned"]), cpu_context(benchmark, lines))
    message = str(caught.value)
    assert f"{benchmark} mode 'pinned'" in message and "cpu" in message
    assert "pin_memory" in message and "vendor/cpu/runtime.py" in message
    assert not lines  # refused before anything was timed


def test_sizes_show_in_binary_units() -> None:
    assert [size_label(n) for n in (512, 1024, 65536, 1536 << 10, 1 << 30)] == [
        "512 B", "1 KiB", "64 KiB", "1.5 MiB", "1 GiB"]


def test_both_directions_take_the_same_params() -> None:
    h2d, d2h = (load_mapping(ROOT / f"case_runners/tasks/base/benchmarks/{b}/config.yaml", ROOT)
                for b in ("h2d", "d2h"))
    assert h2d["params"] == d2h["params"]
    assert tuple(h2d["params"]["modes"]["items"]["choices"]) == transfer.MODES


@pytest.mark.parametrize("benchmark", ["h2d", "d2h"])
def test_a_size_beyond_the_device_memory_is_refused_at_plan_time(benchmark: str) -> None:
    too_big = 128 << 30  # an H100 has 80 GiB
    request = {"vendor": "nvidia", "task": "base",
               "cases": [{"case": benchmark, "hardware": "H100", "overrides": {"sizes": [1 << 30, too_big]}}]}
    plan = make_plan(request, check=True, root=ROOT)
    assert not plan["ok"]
    message = " ".join(str(e) for e in plan["errors"])
    assert f"a transfer of 128 GiB needs {too_big} bytes" in message and "memory_bytes" in message
    request["cases"][0]["overrides"]["sizes"] = [1 << 30]
    assert make_plan(request, check=True, root=ROOT)["ok"]
