"""The operator table (case_runners/tasks/operation/): FlagPerf's 52 operators, each correct on the CPU at the test
chip's small shapes in every one of its standard dtypes, against the float64 reference; the check catches a wrong
result; FLOPs, bytes and the roofline as the formulas say."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from case_runners.core.paths import project_root
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.records.operation import COMPUTE, MEMORY, ROW_FIELDS, OperationRow, roofline, with_speedups
from case_runners.tasks.operation import flops_and_bytes, formula, operators, param_problem
from case_runners.tasks.operation.measure import compare, inputs, measure
from case_runners.vendors.runtime import VendorRuntime

ROOT = project_root()
FLAGPERF_OPS = ("abs add addmm all amax argmax bitwise_and bitwise_not bitwise_or bmm cos cross_entropy_loss div "
                "dropout eq exp ge gelu group_norm gt isinf isnan layer_norm le linear log_softmax lt max mean min mm "
                "mul mv native_dropout native_group_norm ne neg outer pow prod reciprocal relu rsqrt rsub sigmoid "
                "silu sin softmax sub sum tanh triu").split()
SMALL = load_mapping(ROOT / "tests" / "vendor_testchip" / "operation.yaml")["params"]["TC1"]
HARDWARE = {"peak_flops": {"fp32": 2.0e12, "bf16": 4.0e12}, "memory_bandwidth_bytes_s": 2.0e11}


def test_the_table_has_flagperfs_52_operators_with_their_standard_shapes():
    table = operators()
    assert sorted(table) == sorted(FLAGPERF_OPS) and len(table) == 52
    assert table["mm"].params == {"M": 8192, "N": 8192, "K": 8192} and table["bmm"].params["BS"] == 2
    assert table["bitwise_and"].dtypes == ("INT32", "INT16") and table["abs"].dtypes == ("FP32", "FP16", "BF16")
    assert table["layer_norm"].params == {"bs": 20, "channel": 6, "hiddensize": 1048576}
    assert sorted(SMALL) == sorted(FLAGPERF_OPS), "the test chip sizes every operator"
    for op, spec in table.items():
        assert spec.source == f"operation/benchmarks/{op}/case_config.yaml"
        assert set(SMALL[op]) == set(spec.params), op


@pytest.mark.parametrize("op", FLAGPERF_OPS)
def test_every_operator_is_correct_on_cpu_in_each_of_its_dtypes(op):
    runtime = VendorRuntime(None, "cpu", "gloo")
    for dtype in operators()[op].dtypes:
        row = measure(op, dtype, SMALL[op], "native", runtime=runtime, device=torch.device("cpu"),
                      hardware=HARDWARE, warmup=0, iterations=2)
        assert row.correct, (op, dtype, row.max_error, row.tolerance)
        assert set(row.to_json()) == set(ROW_FIELDS)
        assert 0 < row.latency_median_s <= row.latency_p99_s and row.latency_cold_s > 0
        assert row.device_median_s is None, "the host's CPU has no device events"
        assert row.flops_per_s == pytest.approx(row.flops / row.latency_median_s)
        assert row.intensity == pytest.approx(row.flops / row.bytes)
        if dtype in ("FP32", "BF16"):
            assert row.bound in (COMPUTE, MEMORY) and row.roofline_fraction > 0
        else:
            assert (row.bound, row.roofline_fraction) == (None, None), "no peak for the dtype"


def test_correctness_is_checked_at_the_small_check_shape_never_at_the_timed_one(monkeypatch):
    """mm timed at 512 x 384 x 256: the float64 reference on the host only ever sees the inputs of mm's check shape
    (operators.yaml), the row names both shapes and its FLOPs are the timed shape's."""
    from case_runners.tasks.operation import measure as measuring

    seen, real = [], measuring.reference

    def spy(op, cpu_args, out):
        seen.append([tuple(a.shape) for a in cpu_args if isinstance(a, torch.Tensor)])
        return real(op, cpu_args, out)

    monkeypatch.setattr(measuring, "reference", spy)
    timed = {"M": 512, "N": 384, "K": 256}
    row = measure("mm", "FP32", timed, "native", runtime=VendorRuntime(None, "cpu", "gloo"),
                  device=torch.device("cpu"), hardware=HARDWARE, warmup=0, iterations=2)
    check = operators()["mm"].check
    assert row.correct and row.shape == timed and row.check_shape == check == {"M": 64, "N": 64, "K": 64}
    assert seen == [[(64, 64), (64, 64)]], "the reference at the check shape, once"
    assert row.flops == 2 * 512 * 384 * 256
    for op, spec in operators().items():
        assert set(spec.check) == set(spec.params), op
        assert all(param_problem(op, key, value) is None for key, value in spec.check.items()), op


@pytest.mark.parametrize("op", ["add", "all", "bitwise_and", "cross_entropy_loss"])
def test_timed_inputs_are_drawn_on_the_device_where_torch_has_a_generator_for_it_else_copied(op):
    """Every kind of input (floats, a range, integers, class indices) is made on the device by a generator of the
    device (the CPU's: the same values as the check's); for a device torch has no generator for (meta here) on the
    CPU and moved there."""
    shape = operators()[op].check
    on_device = inputs(op, shape, "FP32", torch.device("cpu"))
    assert all(torch.equal(a, b) for a, b in zip(on_device, inputs(op, shape, "FP32")))
    assert {a.device.type for a in inputs(op, shape, "FP32", "meta") if isinstance(a, torch.Tensor)} == {"meta"}


def test_the_check_catches_a_wrong_result_and_compares_integers_exactly():
    ref = torch.linspace(-1, 1, 1000, dtype=torch.float64)
    assert compare(ref.to(torch.float32), ref, {"atol": 1e-4, "rtol": 1e-4})[0]
    wrong = ref.to(torch.float32).clone()
    wrong[7] += 0.01
    correct, error, _ = compare(wrong, ref, {"atol": 1e-4, "rtol": 1e-4})
    assert not correct and error == pytest.approx(0.01, rel=1e-3)
    ints = torch.arange(10, dtype=torch.int32)
    off = ints.clone()
    off[3] += 1
    assert compare(off, ints.to(torch.float64), {"atol": 1e-4, "rtol": 1e-4}) == (False, 1.0, {"atol": 0.0,
                                                                                             "rtol": 0.0})
    assert not compare(ints[:5], ints.to(torch.float64), {"atol": 1.0, "rtol": 1.0})[0], "a shape that differs"


def test_flops_bytes_and_the_roofline_follow_the_formulas():
    assert flops_and_bytes("mm", {"M": 2, "N": 3, "K": 4}, "BF16") == (48.0, (6 + 12 + 8) * 2.0)
    assert flops_and_bytes("add", {"Melements": 1}, "FP32") == (2 * 2**20, 3 * 2**20 * 4)
    assert formula("(M - 1) / 2", {"M": 5}) == 2.0
    with pytest.raises(ValueError, match="not a number"):
        formula("__import__('os')", {})
    # intensity 1 FLOP/byte at 2e11 B/s: a 2e11 FLOP/s roof, under the 2e12 peak: memory-bound
    assert roofline(1.0e11, 1.0, 2.0e12, 2.0e11) == (0.5, MEMORY)
    assert roofline(1.0e12, 100.0, 2.0e12, 2.0e11) == (0.5, COMPUTE)
    assert roofline(1.0e12, 100.0, None, 2.0e11) == (None, None)
    assert param_problem("add", "Melements", 0.0625) is None
    assert "multiple of 1/1024" in param_problem("add", "Melements", 0.0001)
    assert "positive integer" in param_problem("mm", "M", 2.5)
    assert param_problem("isinf", "M", 0.5) is None, "isinf's M counts millions of elements (FlagPerf's key)"


def test_a_library_row_gets_its_speedup_over_the_native_row():
    def row(oplib: str, median: float) -> OperationRow:
        return OperationRow(op="relu", dtype="FP32", oplib=oplib, shape={}, check_shape={}, correct=True, max_error=0.0,
                            tolerance={"atol": 0.0, "rtol": 0.0}, latency_cold_s=1.0, latency_median_s=median,
                            latency_p99_s=median, device_median_s=None, flops=1.0, bytes=1.0, flops_per_s=1.0,
                            bytes_per_s=1.0, intensity=1.0, roofline_fraction=None, bound=None, speedup=None)
    native, lib = with_speedups([row("native", 2.0), row("testlib", 0.5)])
    assert (native.speedup, lib.speedup) == (None, 4.0)


def test_the_test_chips_library_replaces_aten_kernels_and_a_broken_one_is_caught():
    """In a process of its own (the library replaces aten's CPU kernels for the rest of the process): relu natively
    correct; with testlib, its own relu still correct; with relu broken, the row says it is not (checked at relu's
    check shape, timed at four times it)."""
    script = textwrap.dedent("""\
        import importlib.util, sys, torch
        from case_runners.tasks.operation.measure import measure
        from case_runners.vendors.runtime import VendorRuntime
        spec = importlib.util.spec_from_file_location("lib", "tests/vendor_testchip/testlib.py")
        lib = importlib.util.module_from_spec(spec); spec.loader.exec_module(lib)
        runtime, kept = VendorRuntime(None, "cpu", "gloo"), {}
        def row(oplib):
            return measure("relu", "FP32", {"Melements": 0.25}, oplib, runtime=runtime, device=torch.device("cpu"),
                           hardware={}, warmup=0, iterations=2, kept=kept)
        native = row("native")
        x = torch.randn(100)
        before = torch.ops.aten.relu.default(x)
        lib.enable()
        own = row("testlib")
        assert torch.equal(torch.ops.aten.relu.default(x), before)
        lib.BROKEN = ("relu",)
        broken = row("testlib")
        assert lib._LIBRARY, "registered"
        print(native.correct, own.correct, broken.correct, broken.max_error)
        """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    *correct, error = done.stdout.split()
    assert correct == ["True", "True", "False"] and float(error) == pytest.approx(0.5, abs=1e-3)


class _HostEvent:
    """A timing event as torch.cuda.Event's interface has it, on the host clock: what a hook's timing_event gives."""

    def __init__(self) -> None:
        self.at = 0.0

    def record(self) -> None:
        import time

        self.at = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: _HostEvent) -> float:
        return (end.at - self.at) * 1000.0  # ms


class _EventRuntime:
    """A runtime whose hook has timing events (and counts them)."""

    def __init__(self) -> None:
        self.events = 0

    def synchronizer(self, device):
        return lambda: None

    def timing_event(self, device):
        self.events += 1
        return _HostEvent()


def test_where_the_hook_has_device_events_each_call_is_timed_by_them_and_the_figures_use_them():
    runtime = _EventRuntime()
    row = measure("mm", "FP32", {"M": 64, "N": 64, "K": 64}, "native", runtime=runtime, device=torch.device("cpu"),
                  hardware=HARDWARE, warmup=1, iterations=4)
    assert runtime.events == 1 + 2 * 4, "one probe, then a start and an end event per timed call"
    assert row.device_median_s is not None and row.device_median_s > 0
    assert row.flops_per_s == pytest.approx(row.flops / row.device_median_s)
    assert row.bytes_per_s == pytest.approx(row.bytes / row.device_median_s)
