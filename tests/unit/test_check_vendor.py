"""check-vendor on a vendor's pull request: each finding one line naming the file, exit status 1 on any error."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from case_runners.cli import main as cli
from case_runners.core.paths import project_root
from case_runners.plan.config.benchmarks import BENCHMARKS, ONE
from case_runners.vendors.check.run import check_vendor
from testchip import chip_project

OVERLAY = project_root() / "tests" / "vendor_testchip"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A project copy with vendor/testchip scaffolded and filled in (tests/vendor_testchip)."""
    return chip_project(tmp_path / "project")


def lines(root: Path, name: str = "testchip") -> list[str]:
    return [str(f) for f in check_vendor(name, root) if f.level != "ok"]


def test_a_filled_in_vendor_has_no_finding_and_the_cli_exits_0(root, capsys):
    assert lines(root) == []
    assert cli.main(["check-vendor", "testchip", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "check-vendor testchip: 0 error(s), 0 warning(s)"
    assert "ok: vendor/testchip/cases/digits_cnn/extern/trainer_adapter.py: adapts convert_model" in out


def test_a_vendor_config_may_not_change_the_workload(root):
    config = root / "vendor" / "testchip" / "cases" / "digits_cnn" / "config_TC1x1x1.yaml"
    config.write_text(config.read_text() + "synthetic: true\n")
    (found,) = lines(root)
    assert found.startswith("error: vendor/testchip/cases/digits_cnn/config_TC1x1x1.yaml: ")
    assert "key 'synthetic'" in found and "run-only" in found


def test_config_names_follow_the_hardware_table(root):
    cases = root / "vendor" / "testchip" / "cases" / "digits_cnn"
    shutil.copy(cases / "config_TC1x1x1.yaml", cases / "config_TC9x1x1.yaml")
    shutil.copy(cases / "config_TC1x1x1.yaml", cases / "config_TC1_1x1.yaml")
    (cases / "notes.txt").write_text("tuning notes\n")
    found = lines(root)
    assert "error: vendor/testchip/cases/digits_cnn/config_TC9x1x1.yaml: hardware 'TC9' is not in vendor.yaml's " \
           "hardware table (allowed: TC1)" in found
    assert "error: vendor/testchip/cases/digits_cnn/config_TC1_1x1.yaml: is not named " \
           "config_<HW>x<nnodes>x<nproc>.yaml" in found
    assert any(f.startswith("warning: vendor/testchip/cases/digits_cnn/notes.txt: is not a file perfplay reads")
               for f in found)


def test_the_readme_keeps_the_required_sections(root):
    readme = root / "vendor" / "testchip" / "README.md"
    readme.write_text(readme.read_text().replace("## Software stack", "## Software"))
    assert lines(root) == ["error: vendor/testchip/README.md: has no section 'Software stack' (the vendor README: "
                           "docs/adapting-a-chip.md)"]


def test_an_unfilled_monitor_is_an_error(root):
    shutil.rmtree(root / "vendor" / "scaffolded", ignore_errors=True)
    assert cli.main(["new-vendor", "scaffolded", "--device", "cpu", "--backend", "gloo", "--root", str(root)]) == 0
    found = lines(root, "scaffolded")
    assert "error: vendor/scaffolded/monitor.py: reports no util (a vendor monitor must report utilisation and " \
           "memory used; perfplay adds the timestamp)" in found, found


def test_engines_and_adapters_are_held_to_their_contracts(root):
    vendor = root / "vendor" / "testchip"
    (vendor / "engines" / "acmert.py").write_text(textwrap.dedent("""\
        class InferModel:
            def __init__(self, config):
                pass
        """))
    adapter = vendor / "cases" / "digits_cnn" / "extern" / "trainer_adapter.py"
    adapter.write_text(adapter.read_text() + "\n\ndef step_optimizer(optimizer):\n    optimizer.step()\n")
    found = lines(root)
    assert "error: vendor/testchip/engines/acmert.py: InferModel.__init__ takes 2 positional parameter(s); the " \
           "caller calls __init__(self, config, onnx_path, model)" in found
    assert "error: vendor/testchip/engines/acmert.py: InferModel.__call__ is not defined" in found
    assert any(f.startswith("error: vendor/testchip/cases/digits_cnn/extern/trainer_adapter.py: line ")
               and "defines 'step_optimizer', which is not a point" in f for f in found), found


BASE = "vendor/testchip/base.yaml"
LISTED = ", ".join(sorted(BENCHMARKS))


def base_findings(root: Path, text: str | None) -> list[str]:
    """check-vendor's findings on base.yaml, written with `text` (None: without the file)."""
    path = root / BASE
    path.unlink()
    if text is not None:
        path.write_text("---\n" + textwrap.dedent(text))
    return [str(f) for f in check_vendor("testchip", root) if f.where == BASE]


def test_base_yaml_suite_entries_resolve_as_the_base_task_resolves_them(root):
    found = base_findings(root, """\
        suite:
          - gemm
          - nosuch
          - {case: allreduce, nproc: 1}
        params:
          gemm: {precisions: [fp32, fp64]}
        """)
    assert f"error: {BASE}: key 'suite[1].case': unknown base benchmark 'nosuch' (allowed: {LISTED})" in found
    assert f"error: {BASE}: key 'suite[2].nproc': allreduce is a collective: it needs at least 2 ranks (nnodes x " \
           "nproc), got 1" in found
    assert f"error: {BASE}: params.gemm: key 'precisions': TC1 does not compute 'fp64' (vendor.yaml hardware.TC1." \
           "precisions, else its peak_flops) (allowed: bf16, fp32)" in found, found


@pytest.mark.parametrize(("text", "expected"), [
    ("suite: [gemm]\nsizes: {gemm: 1}\n", "key 'sizes': unknown key (allowed: params, suite)"),
    ("suite: [gemm]\nparams: {gemmm: {}}\n", f"key 'params.gemmm': unknown benchmark 'gemmm' (allowed: {LISTED})"),
    ("suite: [gemm]\nparams: {gemm: [fp32]}\n", "key 'params.gemm': must map param names to values"),
])
def test_base_yaml_keys_and_params_benchmarks_are_checked(root, text, expected):
    assert base_findings(root, text) == [f"error: {BASE}: {expected}"]


def test_params_of_a_benchmark_outside_the_suite_are_checked_too(root):
    found = base_findings(root, """\
        suite:
          - {case: allreduce, nproc: 2}
        params:
          gemm: {iterations: 0, warp: 1}
        """)
    assert f"error: {BASE}: params.gemm: key 'warp': unknown config key (allowed: iterations, mode, precisions, " \
           "shapes, warmup)" in found, found
    assert any(f.startswith(f"error: {BASE}: params.gemm: key 'iterations': 0 is out of range") for f in found), found


def test_a_base_yaml_that_resolves_is_one_ok_line(root):
    assert base_findings(root, "suite: [gemm]\nparams:\n  gemm: {shapes: [[512, 512, 512]]}\n") == \
        [f"ok: {BASE}: its suite resolves (gemm_base_TC1x1x1)"]
    default = ", ".join(f"{name}_base_TC1x1x1" for name, spec in BENCHMARKS.items() if spec.ranks == ONE)
    assert base_findings(root, None) == [f"ok: {BASE}: absent: the base suite, every one-rank benchmark at its "
                                         f"defaults, resolves ({default})"]


def test_base_toolkits_are_checked_each_an_ok_line_or_an_error_naming_its_file_and_key(root):
    toolkits = root / "vendor" / "testchip" / "base" / "toolkits"
    shown = "vendor/testchip/base/toolkits/memory_bandwidth/toolkit.yaml"
    assert f"ok: {shown}: memory_bandwidth toolkit: memory bandwidth, bytes read + written per call (copy 2 x array, " \
           "triad 3 x array) (B/s); built with cc; runs per rank (--set mode=toolkit or both)" in \
        [str(f) for f in check_vendor("testchip", root)]
    path = toolkits / "memory_bandwidth" / "toolkit.yaml"
    path.write_text(path.read_text().replace("unit: B/s", "unit: GB/s"))
    shutil.copytree(toolkits / "memory_bandwidth", toolkits / "nosuch")
    unit = "key 'unit': 'GB/s' is not the unit of memory_bandwidth's figures"
    assert lines(root) == [  # base.yaml's suite runs it in mode both: the suite does not resolve either
        f"error: vendor/testchip/base.yaml: {shown}: {unit} (mode both, set in run overrides (suite[1].overrides)) "
        "(allowed: B/s)",
        f"error: {shown}: {unit} (allowed: B/s)",
        "error: vendor/testchip/base/toolkits/nosuch: 'nosuch' is not a base benchmark: a toolkit's folder is named "
        f"after the benchmark it measures (allowed: {', '.join(sorted(BENCHMARKS))})"]
    nvidia = [str(f) for f in check_vendor("nvidia", project_root())]
    assert [f.split(":")[1].strip() for f in nvidia if "/base/toolkits/" in f] == [
        "vendor/nvidia/base/toolkits/allreduce/toolkit.yaml", "vendor/nvidia/base/toolkits/gemm/toolkit.yaml"]
    assert all(f.startswith("ok: ") for f in nvidia if "/base/toolkits/" in f), nvidia


def test_an_unknown_vendor_or_a_path_is_refused(root, capsys):
    assert lines(root, "../etc") == ["error: ../etc: is not a vendor name (a folder under vendor/: "
                                     "^[A-Za-z0-9][A-Za-z0-9_-]*$)"]
    assert cli.main(["check-vendor", "nosuchchip", "--root", str(root)]) == 1
    assert "error: vendor/nosuchchip: no vendor.yaml: not a vendor (vendors: cpu, nvidia, testchip)" \
        in capsys.readouterr().out


def test_the_shipped_vendors_pass_where_their_devices_are():
    assert lines(project_root(), "cpu") == []
    nvidia = lines(project_root(), "nvidia")
    assert all(f.startswith("error: vendor/nvidia/monitor.py: -o start failed") for f in nvidia), \
        "without a GPU only NVML is missing"


def test_the_functional_check_wants_rank_0s_dllogger_stream(tmp_path):
    """A round that left no unified log, a malformed one, or one without the eval metric is an error naming it."""
    from case_runners.rank.driver import dllogger
    from case_runners.vendors.check.functional import _unified_log

    class Record:
        metrics = {"metric": "accuracy"}

    assert "rank 0 wrote no rank0.dllogger.json" in str(_unified_log(tmp_path, Record(), "c")[0])
    stream = dllogger.dllogger_path(tmp_path, 0)
    stream.write_text("not dllogger\n")
    assert f"{stream}:1: not a dllogger line" in str(_unified_log(tmp_path, Record(), "c")[0])
    line = ('DLLL {"timestamp": "1.0", "elapsedtime": "0.5", "datetime": null, "type": "LOG", "step": [1, 1], '
            '"data": {"%s": 1.0}}\n')
    stream.write_text(line % "train.loss" + line % "train.ips")
    assert "has no eval.accuracy line" in str(_unified_log(tmp_path, Record(), "c")[0])
    stream.write_text(line % "train.loss" + line % "train.ips" + line % "eval.accuracy")
    assert _unified_log(tmp_path, Record(), "c") == []


def test_functional_refuses_a_backend_torch_lists_but_was_not_built_with(root):
    """xccl is in torch's backend list, not in this CPU build: refused before any case runs, naming the key."""
    vendor = root / "vendor" / "testchip"
    (vendor / "vendor.yaml").write_text((vendor / "vendor.yaml").read_text().replace("testccl", "xccl"))
    (vendor / "runtime.py").write_text((vendor / "runtime.py").read_text().replace('"testccl"', '"xccl"'))
    found = [str(f) for f in check_vendor("testchip", root, functional=True) if f.level != "ok"]
    assert len(found) == 1, found
    assert found[0].startswith("error: vendor/testchip/vendor.yaml: key 'dist_backend': torch lists the backend "
                               "'xccl' but was not built with it after vendor/testchip/runtime.py ran (available "
                               "here: gloo"), found


def test_functional_runs_two_ranks_where_the_probe_counts_two_devices(root):
    """The test chip's probe says 2 and digits_cnn has a TC1x1x2 config: it runs at 1x2 (the run itself:
    tests/integration/test_new_chip.py); one device, or no 1x2 config, runs 1x1 and says the backend did not run."""
    from case_runners.vendors.check.functional import _backend_run, adapted_cases

    training, _ = adapted_cases("testchip", root, devices=2)
    assert ("digits_cnn", "TC1", 2) in training and ("bert", "TC1", 1) in training, "bert has no 1x2 config"
    training, _ = adapted_cases("testchip", root, devices=1)
    assert {nproc for _, _, nproc in training} == {1}
    shown = "vendor/testchip/vendor.yaml"
    (found,) = _backend_run(training, {"count": 1}, "testccl", shown)
    assert str(found) == (f"warning: {shown}: the device probe counts 1 device(s) here: the cases ran 1x1 only, "
                          "the backend 'testccl' was not exercised")
    (root / "vendor" / "testchip" / "cases" / "digits_cnn" / "config_TC1x1x2.yaml").unlink()
    training, _ = adapted_cases("testchip", root, devices=2)
    (found,) = _backend_run(training, {"count": 2}, "testccl", shown)
    assert "no case has a config_<HW>x1x2.yaml: the cases ran 1x1 only" in str(found)


def test_a_syntax_error_in_environment_variables_sh_is_an_error(root):
    """bash -n reads the file without running it: an unclosed `if` is named with the file and the line."""
    env = root / "vendor" / "testchip" / "cases" / "digits_cnn" / "environment_variables.sh"
    assert "ok: vendor/testchip/cases/digits_cnn/environment_variables.sh: parses in bash (bash -n)" in \
        [str(f) for f in check_vendor("testchip", root)]
    env.write_text(env.read_text() + "if [ -d /opt/testchip ]; then\n  export TESTCHIP_FAST=1\n")
    assert lines(root) == ["error: vendor/testchip/cases/digits_cnn/environment_variables.sh: bash -n: line 5: "
                           "syntax error: unexpected end of file"]


def test_a_key_the_inference_configuration_adds_is_the_runs_warning(root):
    """A key digits_cnn's configurations.yaml does not have is added with a warning by the plan (the run prints it):
    check-vendor shows the same warning, naming the file."""
    path = root / "vendor" / "testchip" / "cases" / "digits_cnn" / "testchip_configurations.yaml"
    path.write_text(path.read_text() + "testrt_opt_level: 3\n")
    shown = "vendor/testchip/cases/digits_cnn/testchip_configurations.yaml"
    assert lines(root) == [f"warning: {shown}: key 'testrt_opt_level' is not in "
                           "case_runners/cases/digits_cnn/inference/configurations.yaml; added as 3"]


def test_operation_yaml_resolves_on_each_hardware_and_its_bad_keys_name_the_file(root):
    """testchip's operation.yaml (all 52 operators sized for a CI box, native and testlib) resolves; an unknown chip,
    operator, param or library in it is an error naming the file, the key and what is allowed."""
    path = root / "vendor" / "testchip" / "operation.yaml"
    found = [str(f) for f in check_vendor("testchip", root) if "operation.yaml" in str(f)]
    assert found == ["ok: vendor/testchip/operation.yaml: the operation task resolves on TC1"]
    path.write_text("oplibs: [native, flag_gems]\nparams:\n  TC2: {mm: {M: 8}}\n  TC1: {mm: {Q: 8}, conv: {M: 1}}\n")
    errors = [str(f) for f in check_vendor("testchip", root) if "operation.yaml" in str(f)]
    shown = "error: vendor/testchip/operation.yaml: key"
    assert f"{shown} 'oplibs[1]': unknown 'flag_gems' (allowed: native, testlib)" in errors
    assert f"{shown} 'params.TC2': unknown chip 'TC2' (allowed: TC1)" in errors
    assert f"{shown} 'params.TC1.mm.Q': unknown param 'Q' of mm (allowed: K, M, N)" in errors
    assert any(e.startswith(f"{shown} 'params.TC1.conv': unknown operator 'conv' (allowed: abs, add,") for e in errors)
