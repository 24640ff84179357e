"""ansible-playbook run_case.yml -e perfplay_task=base on localhost (cpu vendor): the vendor's whole base suite
(vendor/cpu/base.yaml) through the playbook, and bad base input refused before any host is touched, naming the key
and the file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from case_runners.plan.config.benchmarks import BENCHMARKS, peak_for, supported_precisions
from case_runners.plan.config.resolved import BASE
from case_runners.plan.config.selection import parse_selections
from case_runners.plan.config.yaml_io import load_mapping
from playbook_run import REPO, checkout_copy, flat, launched_anything, run_playbook

RUN_ID = "base-suite"
CPU = load_mapping(REPO / "vendor" / "cpu" / "vendor.yaml")["hardware"]["CPU"]


def run_base(checkout: Path, results: Path, **run_vars):
    extra = {"perfplay_task": "base", "perfplay_results_dir": str(results), **run_vars}
    return run_playbook(checkout, "run_case.yml", "-e", json.dumps(extra))


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory) -> tuple:
    """One run of the cpu vendor's base suite: the run names no case."""
    results = tmp_path_factory.mktemp("results")
    return run_base(REPO, results, perfplay_run_id=RUN_ID), results


def test_the_cpu_suite_runs_every_benchmark_of_base_yaml(suite_run):
    run, results = suite_run
    assert run.rc == 0, run.output[-5000:]
    suite, errors = parse_selections(load_mapping(REPO / "vendor" / "cpu" / "base.yaml")["suite"], source="suite",
                                     task=BASE)
    assert errors == [] and suite
    summary = json.loads((results / RUN_ID / "summary.json").read_text())
    assert summary["ok"] and summary["failed_rounds"] == []
    assert sorted((c["case"], c["nnodes"], c["nproc"]) for c in summary["cases"]) == \
        sorted((sel.case, sel.nnodes, sel.nproc) for sel in suite), "every benchmark of the suite, at its scale"
    for case in summary["cases"]:
        assert case["task"] == BASE and case["status"] == "success", case
        assert [r["status"] for r in case["rounds"]] == ["success"], case
        record = json.loads((results / RUN_ID / case["case_id"] / "round1" / "round_record.json").read_text())
        assert record["task"] == BASE and record["status"] == "success", record["reason"]
        assert record["metrics"]["measurements"] == case["measurements"], "the summary keeps the round's figures"
        assert case["case_id"] in run.output, "the play's base table shows every case"


def test_every_measurement_is_positive_and_finite_with_its_peak_key_and_no_fraction_on_cpu(suite_run):
    """The cpu vendor states no peak: each figure is kept, its fraction withheld with the reason naming the key."""
    run, results = suite_run
    assert run.rc == 0, run.output[-5000:]
    summary = json.loads((results / RUN_ID / "summary.json").read_text())
    for case in summary["cases"]:
        assert case["measurements"] and case["base"], case["case_id"]
        for m in case["measurements"]:
            where = f"{case['case_id']} {m['kind']} {m['size']}"
            assert m["benchmark"] == case["case"] and m["unit"] == BENCHMARKS[m["benchmark"]].unit, where
            assert math.isfinite(m["achieved"]) and m["achieved"] > 0, where
            assert m["iterations"] >= 1, where
            peak = peak_for(m["benchmark"], "CPU", CPU, precision=m["kind"], nnodes=case["nnodes"])
            assert m["peak_key"] == peak.key and peak.key.startswith("hardware.CPU."), where
            assert m["peak"] is None and m["fraction_of_peak"] is None, where
            assert m["reason"] == peak.reason and peak.key in m["reason"], where
        for row in case["base"]:  # the headlines: best (and median) over sizes, fraction withheld likewise
            assert row["peak"] is None and row["fraction_of_peak"]["n"] == 0 and row["peak_key"] in row["reason"]


def cases(*items) -> dict:
    return {"perfplay_cases": list(items)}


@pytest.mark.parametrize("run_vars, expected", [
    pytest.param(cases("nosuch"),
                 ["run vars: key 'perfplay_cases[0].case': unknown base benchmark 'nosuch' (allowed: "
                  f"{', '.join(sorted(BENCHMARKS))})"],
                 id="unknown-benchmark"),
    pytest.param(cases({"case": "gemm", "overrides": {"precisions": ["fp32", "fp8"]}}),
                 ["run overrides (perfplay_cases[0].overrides): key 'precisions': CPU does not compute 'fp8'",
                  f"(allowed: {', '.join(sorted(supported_precisions(CPU)))})"],
                 id="unsupported-precision"),
    pytest.param(cases({"case": "allreduce", "nproc": 1}),
                 ["run vars: key 'perfplay_cases[0].nproc': allreduce is a collective: it needs at least 2 ranks"],
                 id="collective-on-one-rank"),
])
def test_bad_base_input_is_refused_before_any_host_is_touched(results_dir, run_vars, expected):
    run = run_base(REPO, results_dir, **run_vars)
    assert run.rc != 0
    for text in expected:
        assert text in flat(run.output), f"{text!r} not in:\n{run.output[-3000:]}"
    assert "Run the rounds one after the other" not in run.output
    assert launched_anything(results_dir) == [] and list(results_dir.iterdir()) == []


def test_bad_entries_of_the_vendors_base_yaml_name_that_file_and_their_keys(tmp_path, results_dir):
    """The run names no case: the suite is base.yaml's, and each of its problems names base.yaml and the key."""
    checkout = checkout_copy(tmp_path / "checkout")
    (checkout / "vendor" / "cpu" / "base.yaml").write_text(
        "---\n"
        "suite:\n"
        "  - gemm\n"
        "  - nosuch\n"
        "  - {case: allreduce, nproc: 1}\n"
        "params:\n"
        "  gemm: {precisions: [fp32, int8]}\n")
    run = run_base(checkout, results_dir)
    assert run.rc != 0
    output = flat(run.output)
    for text in ["vendor/cpu/base.yaml: key 'suite[1].case': unknown base benchmark 'nosuch' (allowed: "
                 f"{', '.join(sorted(BENCHMARKS))})",
                 "vendor/cpu/base.yaml (params.gemm): key 'precisions': CPU does not compute 'int8'",
                 "vendor/cpu/base.yaml: key 'suite[2].nproc': allreduce is a collective"]:
        assert text in output, f"{text!r} not in:\n{run.output[-3000:]}"
    assert launched_anything(results_dir) == [] and list(results_dir.iterdir()) == []
