"""memory_bandwidth and memory_capacity on the host's CPU, in-process: bytes counted as their READMEs say, the
capacity searches bounded and freed, and the plan's refusals (no bound; buffers beyond the device's memory)."""

from __future__ import annotations

import math
import weakref

import pytest
import torch

from case_runners.core.errors import PerfplayError
from case_runners.core.paths import project_root
from case_runners.plan.base import benchmark_config_path
from case_runners.plan.config.benchmarks import DTYPES
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.plan.run_plan import make_plan
from case_runners.tasks.base.benchmarks.memory_bandwidth import KINDS
from case_runners.tasks.base.benchmarks.memory_bandwidth import measure as bandwidth
from case_runners.tasks.base.benchmarks.memory_capacity import measure as capacity
from case_runners.tasks.base.context import BaseContext
from case_runners.tasks.base.memory import out_of_memory
from case_runners.tasks.base.sizes import size_label
from case_runners.vendors.runtime import VendorRuntime

MIB = 2**20
PIB = 2**50  # more than any host's address space gives: a real, immediate allocation failure


def context(benchmark: str, lines: list[str] | None = None, **hardware) -> BaseContext:
    """The cpu vendor's runtime and device; `lines`: what the benchmark says."""
    runtime = VendorRuntime("cpu", "cpu", "gloo")
    runtime.prepare()
    lines = [] if lines is None else lines
    return BaseContext(benchmark=benchmark, runtime=runtime, device=torch.device("cpu"), hardware_name="CPU",
                       hardware=hardware, nnodes=1, rank=0, world_size=1, say=lines.append)


def bandwidth_params(**given):
    return {"sizes": [MIB, 4 * MIB], "dtype": "fp32", "kinds": ["copy", "triad"], "warmup": 1, "iterations": 2,
            **given}


def capacity_params(**given):
    return {"kinds": ["single", "total"], "max_bytes": 8 * MIB, "granularity": MIB, "chunk_bytes": 4 * MIB, **given}


def test_bandwidth_counts_copy_as_two_buffers_and_triad_as_three():
    lines: list[str] = []
    found = bandwidth.measure(bandwidth_params(), context("memory_bandwidth", lines, memory_bandwidth_bytes_s=1e12))
    assert [(m.kind, m.size) for m in found] == [("copy", "1 MiB"), ("triad", "1 MiB"), ("copy", "4 MiB"),
                                                 ("triad", "4 MiB")]
    for m, size in zip(found, [MIB, MIB, 4 * MIB, 4 * MIB]):
        assert m.bytes == {"copy": 2, "triad": 3}[m.kind] * size
        assert m.seconds > 0 and math.isfinite(m.achieved) and m.achieved > 0
        assert m.achieved == pytest.approx(m.bytes / m.seconds)
        assert m.unit == "B/s" and m.iterations == 2
        assert (m.peak, m.peak_key) == (1e12, "hardware.CPU.memory_bandwidth_bytes_s")
        assert m.fraction_of_peak == pytest.approx(m.achieved / 1e12)
        assert m.note.startswith(f"bytes = {m.bytes // size} x buffer")
    assert [line.split(":")[0] for line in lines] == [f"memory_bandwidth {m.kind} {m.size} fp32" for m in found]


def test_bandwidth_bytes_follow_the_dtype_and_a_missing_peak_is_explained():
    (m,) = bandwidth.measure(bandwidth_params(sizes=[MIB], dtype="bf16", kinds=["triad"]), context("memory_bandwidth"))
    assert m.bytes == 3 * MIB and m.fraction_of_peak is None
    assert "hardware.CPU.memory_bandwidth_bytes_s" in m.reason


def test_copy_and_triad_compute_what_they_say():
    held = bandwidth.buffers(3, 4, "fp32", torch.device("cpu"))  # filled 1, 2, 3
    bandwidth.call("triad", held)()
    assert held[0].tolist() == [2 + 3.0 * 3] * 4
    bandwidth.call("copy", held)()
    assert held[0].tolist() == [2.0] * 4


def test_bandwidth_names_a_size_the_device_cannot_hold():
    with pytest.raises(PerfplayError, match=r"memory_bandwidth 1024 TiB: .*do not fit on cpu.*sizes"):
        bandwidth.measure(bandwidth_params(sizes=[PIB]), context("memory_bandwidth"))


def test_capacity_bounded_by_the_cap_says_so():
    ctx = context("memory_capacity", memory_bytes=16 * 2**30)
    single, total = capacity.measure(capacity_params(), ctx)
    for m in (single, total):
        assert m.bytes == m.achieved == 8 * MIB and m.seconds is None and m.iterations == 1 and m.unit == "B"
        assert m.note == "bounded by max_bytes (8 MiB): the device may hold more"
        assert m.peak_key == "hardware.CPU.memory_bytes" and m.fraction_of_peak == pytest.approx(8 * MIB / 2**34)
    assert single.bytes >= MIB  # at least an allocation known to succeed


capacity_module_hold = capacity.hold  # the real one, before a test replaces it


class SmallDevice:
    """A device of `capacity` bytes: the real allocation (filled), refused when the bytes still held would pass
    the capacity; a tensor's bytes come back when it is freed."""

    def __init__(self, capacity: int) -> None:
        self.capacity, self.held, self.real = capacity, 0, capacity_module_hold

    def hold(self, nbytes, ctx):
        if self.held + nbytes > self.capacity:
            return None
        found = self.real(nbytes, ctx)
        self.held += nbytes
        weakref.finalize(found, self.release, nbytes)
        return found

    def release(self, nbytes: int) -> None:
        self.held -= nbytes



def test_capacity_searches_to_the_granularity_below_the_bound_and_frees_everything(monkeypatch):
    device = SmallDevice(11 * MIB + MIB // 2)
    monkeypatch.setattr(capacity, "hold", device.hold)
    single, total = capacity.measure(capacity_params(max_bytes=16 * MIB), context("memory_capacity"))
    assert single.bytes == 11 * MIB  # the largest multiple of 1 MiB within 11.5 MiB
    assert total.bytes == 11 * MIB  # 4 + 4 MiB, then 2 and 1 MiB after the refusals
    assert single.note == total.note == "to a granularity of 1 MiB"
    assert single.size == "up to 16 MiB"
    assert device.held == 0


def test_capacity_fails_when_nothing_fits(monkeypatch):
    monkeypatch.setattr(capacity, "hold", SmallDevice(MIB // 2).hold)
    with pytest.raises(PerfplayError, match="memory_capacity single: cpu refused even 1 MiB"):
        capacity.measure(capacity_params(), context("memory_capacity"))


def test_capacity_without_any_bound_is_refused_by_the_runner_too():
    with pytest.raises(PerfplayError, match="set max_bytes .*hardware.CPU.memory_bytes"):
        capacity.measure(capacity_params(max_bytes=None), context("memory_capacity"))


def test_an_allocation_failure_is_told_from_other_errors():
    with pytest.raises(RuntimeError) as refused:
        torch.empty(PIB, dtype=torch.uint8)
    assert out_of_memory(refused.value)
    assert not out_of_memory(RuntimeError("The size of tensor a (2) must match the size of tensor b (3)"))
    assert not out_of_memory(ValueError("memory"))


def test_size_labels():
    assert [size_label(n) for n in (100, 1536, 64 * MIB, 3 * 2**29, 80 * 2**30)] == [
        "100 B", "1.5 KiB", "64 MiB", "1.5 GiB", "80 GiB"]


def test_the_configs_choices_are_the_kinds_and_dtypes_the_code_knows():
    root = project_root()
    params = load_mapping(benchmark_config_path(root, "memory_bandwidth"), root)["params"]
    assert params["kinds"]["items"]["choices"] == list(KINDS)
    assert all(d in DTYPES for d in params["dtype"]["choices"])
    params = load_mapping(benchmark_config_path(root, "memory_capacity"), root)["params"]
    assert params["kinds"]["items"]["choices"] == ["single", "total"]


def plan(tmp_path, vendor: str, case: str, **selection):
    return make_plan({"vendor": vendor, "task": "base", "cases": [{"case": case, **selection}],
                      "results_dir": str(tmp_path)}, check=True)


def test_the_cpu_vendor_caps_capacity_and_sizes_bandwidth_past_the_cache(tmp_path):
    result = plan(tmp_path, "cpu", "memory_capacity")
    assert result["ok"], result["errors"]
    assert result["cases"][0]["params"]["max_bytes"] == 2**30
    result = plan(tmp_path, "cpu", "memory_bandwidth")
    assert result["ok"], result["errors"]
    assert min(result["cases"][0]["params"]["sizes"]) >= 64 * MIB


def test_plan_refuses_capacity_with_no_bound(tmp_path):
    result = plan(tmp_path, "cpu", "memory_capacity", overrides={"max_bytes": None})
    assert not result["ok"]
    (error,) = result["errors"]
    assert "max_bytes" in error and "hardware.CPU.memory_bytes" in error
    assert plan(tmp_path, "nvidia", "memory_capacity", hardware="H100", overrides={"max_bytes": None})["ok"]


def test_plan_refuses_bandwidth_buffers_beyond_the_device_memory(tmp_path):
    result = plan(tmp_path, "nvidia", "memory_bandwidth", hardware="H100", overrides={"sizes": [2**30, 40 * 2**30]})
    assert not result["ok"]
    (error,) = result["errors"]
    assert "memory_bandwidth 40 GiB x 3 buffers needs 128849018880 bytes" in error
    assert "hardware.H100.memory_bytes" in error
    result = plan(tmp_path, "nvidia", "memory_bandwidth", hardware="H100",
                  overrides={"sizes": [40 * 2**30], "kinds": ["copy"]})
    assert result["ok"], result["errors"]  # two buffers of 40 GiB fit in 80


def test_plan_refuses_sizes_that_are_not_whole_elements_and_a_granularity_above_the_chunk(tmp_path):
    result = plan(tmp_path, "cpu", "memory_bandwidth", overrides={"sizes": [4098]})
    assert not result["ok"]
    assert "sizes" in result["errors"][0] and "4098 bytes is not a whole number of fp32 elements" in \
        result["errors"][0]
    result = plan(tmp_path, "cpu", "memory_capacity", overrides={"granularity": 2**28})
    assert not result["ok"]
    assert "granularity" in result["errors"][0] and "chunk_bytes" in result["errors"][0]
