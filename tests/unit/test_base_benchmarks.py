"""Every benchmark of the catalog is a complete package (config, footprint, measure, README with its method), is
documented, and every vendor's base suite resolves on every hardware it has."""

from __future__ import annotations

import importlib

import pytest

from case_runners.core.paths import project_root
from case_runners.plan.base import BENCHMARKS_DIR, base_suite, benchmark_config_path
from case_runners.plan.config.benchmarks import BENCHMARKS
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.plan.run_plan import make_plan
from case_runners.vendors.description import load_vendor, vendor_names

ROOT = project_root()
README_SECTIONS = ("## Method", "## Params")  # what a benchmark's README explains


@pytest.mark.parametrize("name", list(BENCHMARKS))
def test_every_benchmark_is_a_package_with_its_config_method_and_code(name):
    folder = ROOT.joinpath(*BENCHMARKS_DIR, name)
    config = load_mapping(benchmark_config_path(ROOT, name), ROOT)
    assert config["benchmark"] == name and config["params"], name
    package = importlib.import_module(f"case_runners.tasks.base.benchmarks.{name}")
    assert callable(package.footprint), name
    assert callable(importlib.import_module(f"case_runners.tasks.base.benchmarks.{name}.measure").measure), name
    readme = (folder / "README.md").read_text(encoding="utf-8")
    missing = [s for s in README_SECTIONS if s not in readme]
    assert not missing, f"{folder / 'README.md'}: no section {missing}"
    for param in config["params"]:
        assert f"`{param}`" in readme, f"{folder / 'README.md'}: param {param} is not explained"
    for doc in ("README.md", "docs/base.md"):
        assert f"case_runners/tasks/base/benchmarks/{name}/README.md" in (ROOT / doc).read_text(encoding="utf-8"), doc


@pytest.mark.parametrize("vendor", vendor_names(ROOT))
def test_every_vendors_base_suite_resolves_on_each_of_its_hardware(vendor):
    for hardware in load_vendor(vendor, ROOT).hardware:
        suite = [{"case": s, "hardware": hardware} if isinstance(s, str) else {**s, "hardware": hardware}
                 for s in base_suite(ROOT, vendor)]
        plan = make_plan({"task": "base", "vendor": vendor, "cases": suite}, check=True)
        assert plan["errors"] == [], (vendor, hardware)
        assert [c["case"] for c in plan["cases"]] == [s["case"] for s in suite]


def test_a_run_with_no_case_list_runs_the_vendors_suite():
    plan = make_plan({"task": "base", "vendor": "cpu"}, check=True)
    assert plan["errors"] == []
    suite = [s if isinstance(s, str) else s["case"] for s in base_suite(ROOT, "cpu")]
    assert [c["case"] for c in plan["cases"]] == suite
    assert set(suite) == set(BENCHMARKS)  # the cpu suite, which CI runs, has every benchmark
    training = make_plan({"vendor": "cpu"}, check=True)
    assert [c["case_id"] for c in training["cases"]] == ["digits_cnn_CPUx1x1"]
