"""The base task's spine: a benchmark selection resolved and refused at plan time, the peaks and fractions of the
hardware table, timing through the vendor's runtime, and a gemm round from the command line to the summary."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import pytest

from case_runners.core.errors import ConfigError
from case_runners.core.paths import project_root
from case_runners.plan.base import base_suite, vendor_base
from case_runners.plan.config.benchmarks import BENCHMARKS, BYTES, BYTES_S, FLOP_S, ONE, peak_for
from case_runners.plan.run_plan import make_plan
from case_runners.records.base import BEST, MEDIAN, headlines, measurement
from case_runners.records.round import BaseRoundRecord, RoundRecord
from case_runners.records.summary import RunSummary, Stat
from case_runners.tasks.base.timing import seconds_per_call
from case_runners.vendors.description import load_vendor
from case_runners.views.summary import base_rows

ROOT = project_root()
H100 = load_vendor("nvidia", ROOT).hardware["H100"]


def plan(*cases: dict, vendor: str = "cpu") -> dict:
    return make_plan({"task": "base", "vendor": vendor, "cases": list(cases)}, check=True)


def test_a_gemm_selection_resolves_the_vendors_params_and_the_hardwares_precisions():
    cpu = plan({"case": "gemm"})
    assert cpu["errors"] == []
    (config,) = cpu["cases"]
    assert (config["task"], config["case_id"]) == ("base", "gemm_base_CPUx1x1")
    assert config["params"]["precisions"] == ["fp32", "bf16"]  # vendor/cpu/base.yaml
    assert config["provenance"]["precisions"] == "vendor/cpu/base.yaml (params.gemm)"
    nvidia = plan({"case": "gemm", "hardware": "H100"}, vendor="nvidia")
    (config,) = nvidia["cases"]
    assert config["params"]["precisions"] == list(H100["peak_flops"])  # null: every precision with a peak
    assert config["provenance"]["precisions"].startswith("vendor/nvidia/vendor.yaml")


def test_bad_base_selections_are_refused_by_name_before_any_host():
    errors = plan({"case": "gemm", "overrides": {"precisions": ["fp8"]}},
                  {"case": "allreduce"}, {"case": "p2p", "nproc": 3}, {"case": "gemm", "nnodes": 2},
                  {"case": "nosuch"}, vendor="cpu")["errors"]
    assert any("run overrides (perfplay_cases[0].overrides): key 'precisions': CPU does not compute 'fp8'" in e
               and "allowed: bf16, fp16, fp32, fp64" in e for e in errors), errors
    assert any("key 'perfplay_cases[1].nproc': allreduce is a collective: it needs at least 2 ranks" in e
               for e in errors), errors
    assert any("key 'perfplay_cases[2].nproc': p2p runs between two ranks" in e for e in errors), errors
    assert any("key 'perfplay_cases[3].nnodes': gemm measures each device on its own" in e for e in errors), errors
    assert any("unknown base benchmark 'nosuch'" in e and "allowed: allgather, allreduce, d2h, gemm" in e
               for e in errors), errors
    too_big = plan({"case": "gemm", "hardware": "A100", "overrides": {"precisions": ["fp32"],
                                                                      "shapes": [[65536, 65536, 65536]]}},
                   vendor="nvidia")["errors"]
    assert any("gemm fp32 65536x65536x65536 needs 51539607552 bytes of device memory, more than the 42949672960 "
               "of A100" in e for e in too_big), too_big


def test_the_vendors_base_file_is_checked(tmp_path):
    folder = tmp_path / "vendor" / "acme"
    folder.mkdir(parents=True)
    (folder / "base.yaml").write_text("suite: [gemm]\nparams: {gemmm: {warmup: 1}}\n")
    with pytest.raises(ConfigError, match=r"vendor/acme/base.yaml: key 'params.gemmm': unknown benchmark 'gemmm'"):
        vendor_base(tmp_path, "acme")
    (folder / "base.yaml").write_text("suites: [gemm]\n")
    with pytest.raises(ConfigError, match=r"key 'suites': unknown key \(allowed: params, suite\)"):
        vendor_base(tmp_path, "acme")
    (folder / "base.yaml").unlink()
    assert base_suite(tmp_path, "acme") == [name for name, b in BENCHMARKS.items() if b.ranks == ONE]


def test_errors_of_the_vendors_suite_name_its_base_file(tmp_path):
    import shutil

    for folder in ("case_runners", "vendor"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "vendor/cpu/base.yaml").write_text("suite:\n  - gemmm\n  - {case: gemm, overrides: {warmupp: 1}}\n")
    errors = make_plan({"task": "base", "vendor": "cpu"}, check=True, root=tmp_path)["errors"]
    assert any(e.startswith("vendor/cpu/base.yaml: key 'suite[0].case': unknown base benchmark 'gemmm'")
               for e in errors), errors
    assert "vendor/cpu/base.yaml (suite[1].overrides): key 'warmupp': unknown config key (allowed: iterations, mode, " \
           "precisions, shapes, warmup)" in errors, errors


def test_peaks_come_from_the_hardware_table_or_say_why_not():
    gemm = peak_for("gemm", "H100", H100, precision="bf16")
    assert (gemm.value, gemm.key, gemm.reason) == (989.4e12, "hardware.H100.peak_flops.bf16", None)
    assert peak_for("allreduce", "H100", H100, nnodes=1).key == "hardware.H100.interconnect_bytes_s.intra"
    inter = peak_for("allreduce", "H100", H100, nnodes=2)
    assert (inter.value, inter.key) == (50.0e9, "hardware.H100.interconnect_bytes_s.inter")
    none = peak_for("memory_bandwidth", "CPU", {"memory_bandwidth_bytes_s": None})
    assert none.value is None and "vendor.yaml has no hardware.CPU.memory_bandwidth_bytes_s" in none.reason
    m = measurement("gemm", "bf16", "8x8x8", 791.52e12, gemm, iterations=1, seconds=1.0, nbytes=None)
    assert math.isclose(m.fraction_of_peak, 0.8) and "reason" not in m.to_json()


def test_headlines_give_the_best_size_and_for_gemm_the_median():
    peak = peak_for("gemm", "H100", H100, precision="fp16")
    found = [measurement("gemm", "fp16", size, value, peak, iterations=1, seconds=1.0, nbytes=None)
             for size, value in (("a", 1.0e12), ("b", 3.0e12), ("c", 2.0e12))]
    best, median = headlines(found)
    assert (best.stat, best.size, best.achieved) == (BEST, "b", 3.0e12)
    assert (median.stat, median.size, median.achieved) == (MEDIAN, None, 2.0e12)
    copy = measurement("memory_bandwidth", "copy", "1 MiB", 5.0, peak_for("memory_bandwidth", "H100", H100),
                       iterations=1, seconds=1.0, nbytes=1 << 20)
    assert [h.stat for h in headlines([copy])] == [BEST]


@pytest.mark.parametrize(("values", "unit", "shown"), [
    ((1.20e11, 1.28e11), FLOP_S, "0.12 TFLOP/s ±0.01"),  # the std in the mean's unit, not in GFLOP/s
    ((9.0e10, 1.0e11), FLOP_S, "95.0 GFLOP/s ±7.1"),
    ((3.2e12, 3.3e12), BYTES_S, "3250.00 GB/s ±70.71"),
    ((2 ** 31, 2 ** 31), BYTES, "2.00 GiB ±0.00"),
])
def test_a_base_figure_and_its_std_are_shown_in_one_unit(values, unit, shown):
    assert base_rows._achieved(Stat.of(list(values)), unit) == shown


class _Runtime:
    """A vendor runtime as timing.py sees it: synchronize, and events or none."""

    def __init__(self, events: bool) -> None:
        self.events, self.synced, self.made = events, 0, []

    def synchronizer(self, device):
        def synchronize():
            self.synced += 1
        return synchronize

    def timing_event(self, device):
        if not self.events:
            return None
        runtime = self

        class Event:
            def record(self):
                self.at = len(runtime.made)
                runtime.made.append("record")

            def synchronize(self):
                runtime.made.append("synchronize")

            def elapsed_time(self, end):
                return 250.0  # ms
        return Event()


@pytest.mark.parametrize("events", [True, False])
def test_timing_uses_the_vendors_events_or_perf_counter_around_synchronize(events):
    calls = []
    runtime = _Runtime(events)
    seconds = seconds_per_call(lambda: calls.append(1), iterations=5, warmup=2, runtime=runtime, device="dev")
    assert len(calls) == 7
    if events:
        assert seconds == pytest.approx(0.05) and runtime.made == ["record", "record", "synchronize"]
        assert runtime.synced == 1  # before the block: the warm-up finished
    else:
        assert seconds > 0 and runtime.synced == 2  # before and after the block


def test_the_cpu_runtime_has_no_events_and_says_no_memory_info(tmp_path):
    from case_runners.vendors.runtime import RuntimeHookError, VendorRuntime

    cpu = VendorRuntime("cpu", "cpu", "gloo")
    cpu.prepare()
    import torch

    assert cpu.timing_event(torch.device("cpu")) is None and cpu.memory_info(torch.device("cpu")) is None
    folder = tmp_path / "vendor" / "acme"
    folder.mkdir(parents=True)
    (folder / "runtime.py").write_text(textwrap.dedent("""\
        def memory_info(device):
            return "lots"
    """))
    with pytest.raises(RuntimeHookError, match=r"memory_info\(\) returned 'lots', not \(free, total\)"):
        VendorRuntime("acme", "cpu", "gloo", tmp_path).memory_info(torch.device("cpu"))


@pytest.mark.parametrize(("entry", "message"), [
    ("interconnect_bytes_s: {intra: 1.0e9, across: 2.0e9}", "key 'hardware.X1.interconnect_bytes_s.across'"),
    ("memory_bandwidth_bytes_s: -5", "key 'hardware.X1.memory_bandwidth_bytes_s': must be a positive number"),
    ("precisions: [fp32, fp4]", "key 'hardware.X1.precisions': unknown precision 'fp4'"),
])
def test_the_hardware_tables_peaks_are_checked(tmp_path, entry, message):
    folder = tmp_path / "vendor" / "acme"
    folder.mkdir(parents=True)
    (folder / "vendor.yaml").write_text(f"device: cpu\ndist_backend: gloo\nvisible_devices: {{env: null}}\n"
                                        f"default_hardware: X1\nhardware:\n  X1:\n    {entry}\n")
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_vendor("acme", tmp_path)


def test_a_gemm_round_runs_from_the_command_line_to_the_summary(tmp_path):
    done = subprocess.run([sys.executable, "-m", "case_runners", "run", "gemm", "--task", "base", "--results-dir",
                           str(tmp_path), "--no-monitors", "--set", "shapes=[[64, 64, 64], [128, 128, 128]]",
                           "--set", "iterations=2"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr + done.stdout
    (run_dir,) = tmp_path.glob("run*")
    record = RoundRecord.load(run_dir / "gemm_base_CPUx1x1" / "round1" / "round_record.json")
    assert isinstance(record, BaseRoundRecord) and record.status == "success"
    kinds = [(m["kind"], m["size"]) for m in record.metrics["measurements"]]
    assert kinds == [("fp32", "64x64x64"), ("fp32", "128x128x128"), ("bf16", "64x64x64"), ("bf16", "128x128x128")]
    for m in record.metrics["measurements"]:
        assert m["achieved"] > 0 and math.isfinite(m["achieved"])
        assert m["achieved"] == pytest.approx(2 * math.prod(m["shape"]) / m["seconds"])
        assert m["fraction_of_peak"] is None and "no hardware.CPU.peak_flops" in m["reason"]
    summary = RunSummary.load(run_dir / "summary.json")
    (case,) = summary.cases
    assert [(r.kind, r.stat) for r in case.base] == [("fp32", "best"), ("fp32", "median"), ("bf16", "best"),
                                                     ("bf16", "median")]
    assert "| gemm_base_CPUx1x1 | 1 | 1/1 | gemm | bf16 | torch | best |" in (run_dir / "summary.md").read_text()
    assert "fraction withheld:" in done.stdout + done.stderr
    events = [json.loads(line) for line in next(run_dir.rglob("rank0.events.jsonl")).read_text().splitlines()]
    assert sum(e["event"] == "BASE_MEASUREMENT" for e in events) == 4
