"""import-flagperf on FlagPerf's operation suite: a chip's shapes that differ from the standard become
vendor/<vendor>/operation.yaml params (FlagPerf's shape keys kept), host.yaml's CASES its suite, dtypes and oplibs,
and every file and setting is in the report (timing loops and peaks with why they are not carried over)."""

from __future__ import annotations

import pytest

from case_runners.core.errors import ConfigError
from case_runners.vendors.flagperf.importer import import_flagperf
from flagperf_tree import lines, load, write

# perfplay's standard as its operation task's table gives it (op -> params, dtypes)
STANDARD = {"mm": {"params": {"M": 4096, "N": 4096, "K": 256}, "dtypes": ["FP32", "FP16", "BF16"]},
            "add": {"params": {"Melements": 1024}, "dtypes": ["FP32", "FP16", "BF16"]}}
TIMING = "WARMUP: 100\nITERS: 50000\nKERNELWARMUP: 10\nKERNELITERS: 1000\n"
FILES = {
    "operation/benchmarks/mm/case_config.yaml": "M: 8192\nN: 8192\nK: 8192\n" + TIMING,
    "operation/benchmarks/add/case_config.yaml": "Melements: 1024\n" + TIMING,
    "operation/benchmarks/mm/kunlunxin/R300p/case_config.yaml": "M : 16\nN : 40\nK : 256\nITERS: 10000\n"
                                                                 "SPECTFLOPS: 9999\n",
    "operation/benchmarks/add/kunlunxin/R300p/case_config.yaml": "ITERS: 10000\n",
    "operation/benchmarks/add/nvidia/A100_40_SXM/case_config.yaml": "Melements: 512\n",
    "operation/benchmarks/exp/nvidia/A100_40_SXM/case_config.yaml": "Melements: 512\n",
    "operation/configs/host.yaml": """\
        VENDOR: "nvidia"
        HOSTS: ["192.168.1.2"]
        CASES:
            "mm:FP16:312:nativetorch:A100_40_SXM": "ngctorch2403"
            "add:BF16:flaggems:A100_40_SXM": "ngctorch2403"
            "exp:FP32:nativetorch:A100_40_SXM": "ngctorch2403"
        """,
}


def test_a_chip_s_shapes_and_the_host_s_cases_become_the_vendor_s_operation_yaml(tmp_path):
    tree = write(tmp_path / "FlagPerf", FILES)
    out = tmp_path / "out"
    report = import_flagperf(tree, out, operators=STANDARD)
    # only the keys that differ from perfplay's standard (K 256 is the standard's); the chip's name kept
    assert load(out / "vendor" / "kunlunxin" / "operation.yaml") == {
        "oplibs": ["native"], "params": {"R300p": {"mm": {"M": 16, "N": 40}}}}
    # nvidia's A100_40_SXM is perfplay's A100; its host.yaml cases: the operators, dtypes and oplibs perfplay has
    assert load(out / "vendor" / "nvidia" / "operation.yaml") == {
        "params": {"A100": {"add": {"Melements": 512}}}, "suite": ["mm", "add"], "dtypes": ["FP16", "BF16"],
        "oplibs": ["native", "flag_gems"]}
    text = "\n".join(lines(report))
    assert ("mapped          operation/benchmarks/mm/kunlunxin/R300p/case_config.yaml M: 16 -> "
            "vendor/kunlunxin/operation.yaml params.R300p.mm.M (the standard's 4096)") in text
    assert "operation/benchmarks/mm/kunlunxin/R300p/case_config.yaml ITERS: 10000: FlagPerf's timing loop" in text
    assert "SPECTFLOPS: 9999: a chip's peak is vendor.yaml's hardware.R300p.peak_flops.<dtype>" in text
    assert "operation/benchmarks/mm/case_config.yaml: FlagPerf's standard M 8192 (perfplay's 4096)" in text
    assert "no counterpart  operation/benchmarks/exp/nvidia/A100_40_SXM/case_config.yaml: perfplay has no " \
           "operator exp" in text
    assert "CASES exp:FP32:nativetorch:A100_40_SXM: perfplay has no operator exp" in text
    assert "(312 TFLOPS: a chip's peak is vendor.yaml's hardware.<chip>.peak_flops)" in text
    assert report.counts()[0] == "7 config files: 3 mapped, 3 read, 1 no counterpart, 0 skipped"
    assert "read            operation/benchmarks/add/kunlunxin/R300p/case_config.yaml: a chip's config of an " \
           "operator: the standard's shape" in text


def test_without_perfplay_s_table_the_chips_are_compared_with_flagperf_s_standard(tmp_path, monkeypatch):
    monkeypatch.setattr("case_runners.vendors.flagperf.importer.operator_standard", lambda root: None)
    tree = write(tmp_path / "FlagPerf", {name: text for name, text in FILES.items() if "benchmarks" in name})
    out = tmp_path / "out"
    report = import_flagperf(tree, out)
    assert load(out / "vendor" / "kunlunxin" / "operation.yaml") == {
        "oplibs": ["native"], "params": {"R300p": {"mm": {"M": 16, "N": 40, "K": 256}}}}
    text = "\n".join(lines(report))
    assert "perfplay's operator table (case_runners/tasks/operation/operators.yaml) is not in this checkout" in text
    assert ("operation/benchmarks/exp/nvidia/A100_40_SXM/case_config.yaml: no standard of operator exp (FlagPerf's "
            "operation/benchmarks/exp/case_config.yaml)") in text
    assert load(out / "vendor" / "nvidia" / "operation.yaml") == {
        "oplibs": ["native"], "params": {"A100": {"add": {"Melements": 512}}}}


def test_the_operation_host_file_alone_is_refused_with_what_to_import(tmp_path):
    tree = write(tmp_path / "FlagPerf", FILES)
    with pytest.raises(ConfigError, match="host file of FlagPerf's operation suite: import the checkout it is in"):
        import_flagperf(tree / "operation" / "configs" / "host.yaml", tmp_path / "out")
