"""`perfplay cases`: the catalogue of every case per task with the hardware and scales each vendor has configs
for, as a table, --json and --markdown; docs/catalogue.md is the --markdown output, kept current."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from case_runners.cli import main as cli
from case_runners.core.errors import ConfigError
from case_runners.core.paths import project_root
from case_runners.plan.config.benchmarks import BENCHMARKS
from case_runners.plan.config.resolved import TASKS
from case_runners.views.catalogue.build import Catalogue, build_catalogue, first_sentence
from case_runners.views.catalogue.render import COMMAND, PAGE, render_markdown
from testchip import fill_hardware

REPO = project_root()
OVERLAY = REPO / "tests" / "vendor_testchip"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A checkout whose vendors are cpu, nvidia and testchip (scaffolded, with only tests/vendor_testchip's cases
    and base suite, and a file whose name is not a config's)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "case_runners").symlink_to(REPO / "case_runners")
    for name in ("cpu", "nvidia"):
        (root / "vendor" / name).parent.mkdir(exist_ok=True)
        (root / "vendor" / name).symlink_to(REPO / "vendor" / name)
    assert cli.main(["new-vendor", "testchip", "--device", "cpu", "--backend", "testccl", "--hardware", "TC1",
                     "--root", str(root)]) == 0
    vendor = root / "vendor" / "testchip"
    shutil.rmtree(vendor / "cases")  # the scaffold's config of every case: only the overlay's
    shutil.copytree(OVERLAY / "cases", vendor / "cases")
    shutil.copy(OVERLAY / "base.yaml", vendor)
    shutil.copytree(OVERLAY / "engines", vendor / "engines")
    (vendor / "cases" / "digits_cnn" / "config_TC1x1x1.yaml.orig").write_text("{}\n")
    fill_hardware(vendor)
    return root


def cell(catalogue: Catalogue, task: str, case: str, vendor: str) -> dict[str, list[str]] | None:
    entry = next(e for e in catalogue.entries if (e.task, e.case) == (task, case))
    found = [v for v in entry.vendors if v.vendor == vendor]
    return {hw.hardware: hw.scales for hw in found[0].hardware} if found else None


def test_each_task_lists_each_vendors_hardware_and_scales(root: Path) -> None:
    catalogue = build_catalogue(root)
    assert catalogue.vendors == ["cpu", "nvidia", "testchip"]
    assert [e.task for e in catalogue.entries] == sorted((e.task for e in catalogue.entries), key=TASKS.index)
    # training: the vendor case folder's config_<HW>x<N>x<P>.yaml, by scale, a file of another name left out
    assert cell(catalogue, "training", "digits_cnn", "testchip") == {"TC1": ["1x1", "1x2"]}
    assert cell(catalogue, "training", "digits_cnn", "cpu") == {"CPU": ["1x1", "1x2", "2x1", "2x2"]}
    assert cell(catalogue, "training", "bert", "nvidia") == {"A100": ["1x1", "1x8", "2x8"],
                                                           "H100": ["1x1", "1x8", "2x8"]}
    assert cell(catalogue, "training", "bert", "testchip") is None
    # inference: where the case's config resolves (the vendor's <vendor>_configurations.yaml, or the standard
    # config where the vendor has its compiler's engine), every hardware at 1x1
    assert cell(catalogue, "inference", "digits_cnn", "testchip") == {"TC1": ["1x1"]}
    assert cell(catalogue, "inference", "digits_cnn", "cpu") == {"CPU": ["1x1"]}  # onnxruntime, without a file
    assert cell(catalogue, "inference", "digits_cnn", "nvidia") is None  # no onnxruntime engine, no file
    # base: the vendor's suite, at its scales, on its default hardware
    assert cell(catalogue, "base", "allreduce", "testchip") == {"TC1": ["1x2"]}
    assert cell(catalogue, "base", "allreduce", "nvidia") == {"A100": ["1x8"]}
    assert cell(catalogue, "base", "h2d", "testchip") is None
    assert [e.case for e in catalogue.entries if e.task == "base"] == list(BENCHMARKS)
    # generate: the case's generate.yaml
    assert cell(catalogue, "generate", "llama", "cpu") == {"CPU": ["1x1"]}
    assert cell(catalogue, "generate", "llama", "testchip") is None
    digits = next(e for e in catalogue.entries if (e.task, e.case) == ("training", "digits_cnn"))
    assert digits.target is not None and (digits.target.metric, digits.target.value) == ("accuracy", 0.95)
    assert digits.description.endswith("in seconds.")  # the first sentence only


def test_vendor_filter_keeps_its_configs_and_cases(root: Path) -> None:
    catalogue = build_catalogue(root, "testchip")
    assert catalogue.vendors == ["testchip"]
    assert {(e.task, e.case) for e in catalogue.entries} == {
        ("training", "digits_cnn"), ("inference", "digits_cnn"), ("base", "gemm"), ("base", "memory_bandwidth"),
        ("base", "allreduce"), ("inference", "aquila_7b_mmlu")}  # its standard is torch alone: every vendor runs it
    assert all([v.vendor for v in e.vendors] == ["testchip"] for e in catalogue.entries)


def test_a_vendor_inference_file_that_does_not_resolve_is_an_error(root: Path) -> None:
    path = root / "vendor" / "testchip" / "cases" / "digits_cnn" / "testchip_configurations.yaml"
    path.write_text("compiler: tensorrt\n")
    with pytest.raises(ConfigError, match="vendor 'testchip' has no engine 'tensorrt'"):
        build_catalogue(root)


def test_unknown_vendor_is_refused_naming_the_vendors(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["cases", "--vendor", "nvdia"]) == cli.EXIT_BAD_INPUT
    assert "--vendor 'nvdia': no vendor/nvdia/vendor.yaml (vendors: cpu, nvidia)" in capsys.readouterr().err


def test_json_is_a_versioned_document(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["cases", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == Catalogue.SCHEMA == "perfplay.case_catalogue/1"
    assert Catalogue.from_json(doc).to_json() == doc
    assert Catalogue.problems({**doc, "entries": [{**doc["entries"][0], "task": "tuning"}]})


def test_table_has_a_row_per_case_and_a_column_per_vendor(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["cases"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["task", "case", "target", "cpu", "nvidia", "description"]
    bert = next(line for line in lines if line.startswith("training") and " bert " in line)
    assert "mlm_accuracy ≥ 0.72" in bert and "A100 1x1 1x8 2x8, H100 1x1 1x8 2x8" in bert


def test_first_sentence() -> None:
    assert first_sentence("Small CNN (v1.5, 8x8 digits); fast.  The default\n case.") == \
        "Small CNN (v1.5, 8x8 digits); fast."
    assert first_sentence("FLOPs = 2*M*N*K.") == "FLOPs = 2*M*N*K."


def test_the_catalogue_page_is_current() -> None:
    expected = render_markdown(build_catalogue(REPO), REPO)
    assert (REPO / PAGE).read_text(encoding="utf-8") == expected, f"{PAGE} is out of date: run `{COMMAND}`"


def test_the_command_imports_neither_torch_nor_ansible() -> None:
    code = ("import sys; from case_runners.cli.main import main; main(['cases', '--json']); "
            "print([m for m in ('torch', 'ansible') if m in sys.modules], file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO,
                          check=True)
    assert done.stderr.strip().splitlines()[-1] == "[]"
    assert json.loads(done.stdout)["schema"] == Catalogue.SCHEMA
