"""new-vendor and new-case in a copy of the project: complete folders that load, resolve, monitor and train as
written; bad input refused with one line, exit status 2 and nothing written, also when a write fails midway."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from case_runners.cases import code_cases, list_cases
from case_runners.cli import main as cli
from case_runners.core.paths import project_root
from case_runners.monitors.base import DEVICE_FIELDS
from case_runners.monitors.loader import load_vendor_monitor_class
from case_runners.plan.config.benchmarks import BENCHMARKS, COLLECTIVE, PAIR, peak_for
from case_runners.plan.config.stacks import PYTORCH, stack_of
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.plan.layering import frameworks, load_case_base
from case_runners.plan.run_plan import make_plan
from case_runners.vendors.check.structure import check_structure
from case_runners.vendors.description import load_vendor
from case_runners.vendors.runtime import check_hook_source
from case_runners.vendors.scaffold import (
    CASE_README_SECTIONS,
    COLLECTIVE_NPROC,
    README_SECTIONS,
    headings,
    missing_sections,
    smallest_selection,
)
from case_runners.vendors.scaffold.new_case import new_case
from case_runners.vendors.scaffold.new_vendor import new_vendor
from case_runners.vendors.scaffold.writer import Staging
from process_helpers import run_pids, wait_for

VENDOR_FILES = {"vendor.yaml", "base.yaml", "runtime.py", "monitor.py", "README.md", "docker_image/pytorch/Dockerfile",
                "docker_image/pytorch/pytorch_install.sh"}
CASE_FILES = {"__init__.py", "case.py", "config.yaml", "data.py", "README.md"}
RANK_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the project to scaffold into: case_runners/ (a new case must be importable from it), vendor/ and
    the case pins (the docker image's inputs)."""
    root = tmp_path / "project"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(project_root() / "case_runners", root / "case_runners", ignore=ignore)
    shutil.copytree(project_root() / "vendor", root / "vendor", ignore=ignore)
    shutil.copy(project_root() / "requirements-case.txt", root)
    return root


def tree(root: Path) -> dict[str, bytes]:
    """Every file and folder under root (hidden ones included) with its content: to show nothing changed."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"/" for p in sorted(root.rglob("*"))
            if "__pycache__" not in p.parts}


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def scaffold(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def in_copy(root: Path, *argv: str, **kwargs) -> subprocess.CompletedProcess:
    """A Python command that imports the copy's case_runners (where a new case lives), single rank."""
    env = {k: v for k, v in os.environ.items() if k not in RANK_ENV}
    env["PYTHONPATH"] = str(root)
    return subprocess.run([sys.executable, *argv], cwd=root, env=env, capture_output=True, text=True, timeout=600,
                          **kwargs)


@pytest.fixture
def acme(project: Path, capsys) -> Path:
    code, out, err = scaffold(capsys, "new-vendor", "acme", "--device", "acme", "--backend", "accl",
                              "--hardware", "X100", "--root", str(project))
    assert code == 0, err
    assert out.splitlines()[-1] == "next: edit the TODO(vendor) lines, then python -m case_runners check-vendor acme"
    return project


# -- new-vendor ------------------------------------------------------------------------------------------------

def case_configs(project: Path, hardware: str) -> set[str]:
    """The 1x1 configs new-vendor writes: each case's, and one per stack the case lists, in the stack's folder."""
    return {f"cases/{case}/{stack + '/' if stack != PYTORCH else ''}config_{hardware}x1x1.yaml"
            for case in code_cases(project) for stack in frameworks(load_case_base(case, project)[0])}


def test_new_vendor_writes_every_file_and_says_so(acme: Path, capsys) -> None:
    folder = acme / "vendor" / "acme"
    expected = VENDOR_FILES | case_configs(acme, "X100")
    assert files_under(folder) == expected
    assert [p.name for p in (acme / "vendor").iterdir() if p.name.startswith(".")] == []  # no staging left
    assert os.access(folder / "docker_image/pytorch/pytorch_install.sh", os.X_OK)
    for text in ("vendor.yaml", "base.yaml", "runtime.py", "monitor.py", "README.md",
                 "docker_image/pytorch/Dockerfile"):
        assert "TODO(vendor)" in (folder / text).read_text(), text


def test_new_vendor_takes_a_hardware_name_with_a_dash(project: Path, capsys) -> None:
    """FlagPerf's iluvatar names its chips BI-V100 and BI-V150; the plan takes such names, so new-vendor does too."""
    code, _, err = scaffold(capsys, "new-vendor", "acme", "--device", "acme", "--backend", "accl", "--hardware",
                            "BI-V100", "--root", str(project))
    assert code == 0, err
    plan = make_plan({"vendor": "acme", "cases": [{"case": "digits_cnn", "hardware": "BI-V100", "nproc": 1}]},
                     check=True, root=project)
    assert plan["ok"], plan["errors"]
    readme = (project / "vendor" / "acme" / "README.md").read_text()
    assert "(`acme_bi_v100`, see" in readme, "the inventory group it suggests is a valid Ansible group name"


def test_new_vendor_takes_a_hardware_name_of_digits(project: Path, capsys) -> None:
    """FlagPerf names some chips by a number (config_9100x1x8.py): new-vendor takes it, vendor.yaml holds it as a
    string key, and the plan finds config_9100x1x1.yaml for it."""
    code, _, err = scaffold(capsys, "new-vendor", "acme", "--device", "acme", "--backend", "accl", "--hardware",
                            "9100", "--root", str(project))
    assert code == 0, err
    vendor = load_vendor("acme", project)
    assert (vendor.default_hardware, list(vendor.hardware)) == ("9100", ["9100"])
    errors = [str(f) for f in check_structure("acme", project) if f.level == "error"]
    assert [e for e in errors if "memory_bytes" not in e] == []  # the memory to fill is every new vendor's
    plan = make_plan({"vendor": "acme", "cases": [{"case": "digits_cnn", "hardware": "9100", "nproc": 1}]},
                     check=True, root=project)
    assert plan["ok"], plan["errors"]
    case = plan["cases"][0]
    assert (case["case_id"], case["sources"][-1]) == ("digits_cnn_9100x1x1",
                                                     "vendor/acme/cases/digits_cnn/config_9100x1x1.yaml")


def test_new_vendor_printed_each_file(project: Path, capsys) -> None:
    code, out, _ = scaffold(capsys, "new-vendor", "acme", "--device", "acme", "--backend", "accl", "--root",
                            str(project))
    assert code == 0
    written = {line.removeprefix("wrote vendor/acme/") for line in out.splitlines() if line.startswith("wrote ")}
    assert written == VENDOR_FILES | case_configs(project, "ACME")


def test_new_vendor_loads_and_every_case_resolves_at_1x1(acme: Path) -> None:
    vendor = load_vendor("acme", acme)
    assert (vendor.device, vendor.dist_backend, vendor.default_hardware) == ("acme", "accl", "X100")
    assert set(vendor.hardware["X100"]["peak_flops"].values()) == {None}  # to fill: MFU null until then
    assert check_hook_source("acme", acme) == ([], ["versions"])
    for case in code_cases(acme):
        plan = make_plan({"vendor": "acme", "cases": [{"case": case, "hardware": "X100", "nproc": 1}]}, check=True,
                         root=acme)
        assert plan["ok"], plan["errors"]
        config = load_mapping(acme / f"vendor/acme/cases/{case}/config_X100x1x1.yaml")
        assert set(config) <= set(load_case_base(case, acme)[0]["mutable"])
    docker = make_plan({"vendor": "acme", "runtime": "docker", "cases": ["digits_cnn:pytorch:X100"]}, check=True,
                       root=acme)
    assert docker["ok"], docker["errors"]
    assert docker["images"][0]["name"] == "perfplay-acme-pytorch"


def test_the_config_comment_lists_exactly_the_keys_the_plan_allows(acme: Path) -> None:
    """The 1x1 config's "only these keys" comment: the case's mutable params and the trainer's (batch size, amp,
    workers, which its TODO names), as the plan's one definition (load_case_base) has them."""
    for relative in case_configs(acme, "X100"):
        case, *stack = Path(relative).parts[1:-1]  # cases/<case>/[<stack>/]config_X100x1x1.yaml
        lines = (acme / "vendor/acme" / relative).read_text().splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("# Only these keys may be set here"))
        listed = " ".join(line.removeprefix("#").strip() for line in lines[start + 1:] if line.startswith("#   "))
        framework = stack[0] if stack else PYTORCH  # the trainer's, the case's and its stack's params
        assert listed.split(", ") == [key for key in load_case_base(case, acme)[0]["mutable"]
                                      if stack_of(key) in (None, framework)], relative
        assert {"batch_size", "amp", "num_workers"} <= set(listed.split(", ")), case


def test_new_vendor_hardware_has_every_base_peak_to_fill(acme: Path) -> None:
    """The base benchmarks' peaks and precisions are in the table, null (fractions withheld) until filled."""
    text = (acme / "vendor/acme/vendor.yaml").read_text()
    hardware = load_vendor("acme", acme).hardware["X100"]
    assert hardware["precisions"] is None
    assert (hardware["memory_bandwidth_bytes_s"], hardware["h2d_bytes_s"]) == (None, None)
    assert hardware["interconnect_bytes_s"] == {"intra": None, "inter": None}
    for key in ("precisions", "memory_bandwidth_bytes_s", "h2d_bytes_s", "interconnect_bytes_s"):
        assert text.count(f"    {key}: ") == 1, key
    for name in BENCHMARKS:
        peak = peak_for(name, "X100", hardware, precision="bf16")
        assert peak.value is None and peak.key in peak.reason, name


def test_new_vendor_base_suite_has_every_benchmark_and_resolves_with_no_code(acme: Path) -> None:
    """base.yaml: every benchmark, collectives and p2p on two ranks of one server, no params. As written, the base
    task names the one line to fill (memory_capacity's bound, the device memory); filled, the suite resolves and
    check-vendor finds nothing in it."""
    base = load_mapping(acme / "vendor/acme/base.yaml")
    assert base["params"] == {}
    assert base["suite"] == [smallest_selection(name) for name in BENCHMARKS]
    for name, spec in BENCHMARKS.items():
        many = spec.ranks in (COLLECTIVE, PAIR)
        assert (name if not many else {"case": name, "nproc": COLLECTIVE_NPROC}) in base["suite"]
    plan = make_plan({"vendor": "acme", "task": "base"}, check=True, root=acme)
    (unfilled,) = plan["errors"]
    assert "key 'max_bytes'" in unfilled and "vendor.yaml hardware.X100.memory_bytes" in unfilled
    vendor_yaml = acme / "vendor/acme/vendor.yaml"
    vendor_yaml.write_text(vendor_yaml.read_text().replace("memory_bytes: null", "memory_bytes: 68719476736", 1))
    plan = make_plan({"vendor": "acme", "task": "base"}, check=True, root=acme)
    assert plan["ok"], plan["errors"]
    assert [c["case"] for c in plan["cases"]] == list(BENCHMARKS)
    found = [f for f in check_structure("acme", acme) if f.where == "vendor/acme/base.yaml"]
    assert [f.level for f in found] == ["ok"] and "its suite resolves" in found[0].message, found


def test_new_vendor_readme_has_every_section(acme: Path) -> None:
    text = (acme / "vendor/acme/README.md").read_text()
    assert missing_sections(text) == [] and headings(text) == list(README_SECTIONS)
    assert headings(text, 3) == code_cases(acme)  # a results table per case
    for case in code_cases(acme):
        section = text.split(f"### {case}\n", 1)[1].split("\n#", 1)[0]
        for scale in ("1x1", "1x8", "2x8"):
            assert f"| {scale} | `config_X100x{scale}` |" in section
        assert "NVIDIA A100: p_whole" in section


def test_the_longest_names_keep_every_file_within_the_lint_limits(project: Path) -> None:
    """What a vendor or case author commits passes `make lint` (yamllint --strict) and keeps lines within 120."""
    from yamllint import linter  # a dev requirement, as make lint needs it
    from yamllint.config import YamlLintConfig

    longest = "a" * 32
    written = new_vendor(longest, longest, longest, "A" * 32, root=project)
    written += new_case(longest, longest, 1.0e-12, root=project)
    config = YamlLintConfig(file=str(project_root() / ".yamllint"))
    for path in written:
        text = path.read_text()
        if path.suffix == ".yaml":
            assert list(linter.run(text, config)) == [], f"{path}: {list(linter.run(text, config))}"
        if path.suffix != ".md":
            assert max(len(line) for line in text.splitlines()) <= 120, path


def test_new_vendor_monitor_samples_every_device_with_none_readings(acme: Path) -> None:
    monitor = load_vendor_monitor_class("acme", acme)()
    monitor.open()
    try:
        devices = monitor.sample()
        info = monitor.sys_info()
    finally:
        monitor.close()
    assert devices == [{field: 0 if field == "index" else None for field in DEVICE_FIELDS}]  # no device_count hook
    assert info["device"] == "acme" and info["count"] == 1


def test_new_vendor_monitor_runs_as_a_script(acme: Path, tmp_path: Path) -> None:
    run_id = f"test-{uuid.uuid4().hex[:10]}"
    script = acme / "vendor/acme/monitor.py"
    args = ["-l", str(tmp_path / "logs"), "--run-id", run_id, "--interval", "0.2"]

    env = dict(os.environ, PYTHONPATH=str(acme))  # the copy's case_runners importable

    def run(operation: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(script), "-o", operation, *args], cwd="/", env=env,
                              capture_output=True, text=True, timeout=60)

    try:
        started = run("start")
        assert started.returncode == 0, started.stderr
        assert run("status").returncode == 0
        samples = tmp_path / "logs/acme_monitor.jsonl"
        assert wait_for(lambda: samples.exists() and samples.read_text().count("\n") >= 1)
        first = json.loads(samples.read_text().splitlines()[0])
        assert first["devices"][0]["index"] == 0 and first["devices"][0]["util"] is None
    finally:
        stopped = run("stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert run("status").returncode == 3
    assert run_pids(run_id) == []


@pytest.mark.parametrize(("argv", "message"), [
    (["cpu", "--device", "cpu", "--backend", "gloo"], "vendor/cpu already exists"),
    (["Acme", "--device", "acme", "--backend", "accl"], "vendor name 'Acme' is not a plain identifier"),
    (["acme-ai", "--device", "acme", "--backend", "accl"], "vendor name 'acme-ai' is not a plain identifier"),
    (["acme__ai", "--device", "acme", "--backend", "accl"], "vendor name 'acme__ai' is not a plain identifier"),
    (["../acme", "--device", "acme", "--backend", "accl"], "vendor name '../acme' is not a plain identifier"),
    (["a" * 33, "--device", "acme", "--backend", "accl"], "is not a plain identifier"),
    (["host", "--device", "acme", "--backend", "accl"], "vendor name 'host' is reserved"),
    (["acme", "--device", "Acme:0", "--backend", "accl"], "device 'Acme:0' is not a plain identifier"),
    (["acme", "--device", "acme", "--backend", "a-ccl"], "backend 'a-ccl' is not a plain identifier"),
    (["acme", "--device", "acme", "--backend", "accl", "--hardware", "X/100"], "hardware 'X/100' is not a plain"),
    (["acme", "--device", "acme", "--backend", "accl", "--hardware", "X 100"], "hardware 'X 100' is not a plain"),
])
def test_new_vendor_refuses_with_one_line_and_writes_nothing(project: Path, capsys, argv, message) -> None:
    before = tree(project / "vendor")
    code, out, err = scaffold(capsys, "new-vendor", *argv, "--root", str(project))
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
    assert tree(project / "vendor") == before


@pytest.fixture
def failing_write(monkeypatch):
    """Makes Staging.write fail with a full disk on the file named `at`."""
    real_write = Staging.write

    def fail_at(at: str) -> None:
        def write(self, staged, relative, *args, **kwargs):
            if relative == at:
                raise OSError(28, "No space left on device")
            return real_write(self, staged, relative, *args, **kwargs)

        monkeypatch.setattr(Staging, "write", write)

    return fail_at


def test_a_failed_vendor_write_leaves_nothing(project: Path, failing_write) -> None:
    before = tree(project)
    failing_write("runtime.py")
    with pytest.raises(OSError, match="No space left"):
        new_vendor("acme", "acme", "accl", root=project)
    assert tree(project) == before


def test_a_failed_case_write_leaves_nothing(project: Path, failing_write) -> None:
    """The last file, in a folder whose parent (vendor/nvidia/cases/) the scaffold had to make: all of it goes."""
    shutil.rmtree(project / "vendor/nvidia/cases")
    before = tree(project)
    failing_write("config_A100x1x8.yaml")
    with pytest.raises(OSError, match="No space left"):
        new_case("toy", root=project)
    assert tree(project) == before


def test_not_a_checkout_is_refused(tmp_path: Path, capsys) -> None:
    code, _, err = scaffold(capsys, "new-vendor", "acme", "--device", "acme", "--backend", "accl", "--root",
                            str(tmp_path))
    assert code == 2 and "is not a perfplay checkout" in err
    assert list(tmp_path.iterdir()) == []


# -- new-case --------------------------------------------------------------------------------------------------

def test_new_case_writes_a_case_that_resolves_and_trains(project: Path, tmp_path: Path, capsys) -> None:
    code, out, err = scaffold(capsys, "new-case", "toy", "--root", str(project))
    assert code == 0, err
    assert files_under(project / "case_runners/cases/toy") == CASE_FILES
    assert files_under(project / "vendor/cpu/cases/toy") == {"config_CPUx1x1.yaml"}
    assert files_under(project / "vendor/nvidia/cases/toy") == {"config_A100x1x8.yaml"}
    assert len([line for line in out.splitlines() if line.startswith("wrote ")]) == 7
    assert "toy" in list_cases(project) and "toy" not in list_cases()
    readme = (project / "case_runners/cases/toy/README.md").read_text()
    assert missing_sections(readme, CASE_README_SECTIONS) == []
    for path in (project / "case_runners/cases/toy/case.py", project / "case_runners/cases/toy/config.yaml"):
        assert "TODO(case author)" in path.read_text()

    # The copy's case_runners, where the case is: plan it for cpu (1x1) and for the reference (nvidia A100 1x8).
    planned = in_copy(project, "-c", "import json, sys\n"
                      "from case_runners.plan.run_plan import make_plan\n"
                      "from case_runners.host.data_check import check_data\n"
                      "from case_runners.records.resolved import ResolvedConfig\n"
                      "cpu = make_plan({'vendor': 'cpu', 'cases': ['toy'], 'results_dir': sys.argv[1]})\n"
                      "nvidia = make_plan({'vendor': 'nvidia', 'cases': ['toy:pytorch:A100:1:8']}, check=True)\n"
                      "print(json.dumps({'errors': cpu['errors'] + nvidia['errors'], "
                      "'data': check_data(ResolvedConfig.from_json(cpu['cases'][0])) if cpu['ok'] else None, "
                      "'config': cpu['cases'][0]['config_path'] if cpu['ok'] else None}))",
                      str(tmp_path / "results"))
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["errors"] == [] and plan["data"] == []

    trained = in_copy(project, "-m", "case_runners", "worker", "--config", plan["config"], "--log-dir",
                      str(tmp_path / "logs"))
    assert trained.returncode == 0, trained.stderr[-2000:]
    result = json.loads((tmp_path / "logs/rank0.result.json").read_text())
    assert result["status"] == "success" and result["metric"] == "accuracy" and result["steps"] > 0
    assert result["converged"], result  # the stand-in task is learnable: it reaches 0.9 in an epoch or two


def test_new_case_with_a_lower_is_better_metric(project: Path, capsys) -> None:
    code, _, err = scaffold(capsys, "new-case", "toy", "--metric", "wer", "--target", "0.25", "--lower-is-better",
                            "--root", str(project))
    assert code == 0, err
    config = load_mapping(project / "case_runners/cases/toy/config.yaml")
    assert config["target"] == {"metric": "wer", "value": 0.25, "higher_is_better": False}
    case = (project / "case_runners/cases/toy/case.py").read_text()
    assert 'target_metric = "wer"' in case and 'metrics.setdefault(self.target_metric, metrics["eval_loss"])' in case


@pytest.mark.parametrize(("argv", "message"), [
    (["digits_cnn"], "case_runners/cases/digits_cnn already exists"),
    (["npy_header"], "case_runners/cases/npy_header.py already exists"),
    (["Toy"], "case name 'Toy' is not a plain identifier"),
    (["toy.case"], "case name 'toy.case' is not a plain identifier"),
    (["toy", "--metric", "top-1"], "metric 'top-1' is not a plain identifier"),
    (["toy", "--target", "nan"], "target 'nan' is not a finite number"),
    (["toy", "--target", "high"], "target 'high' is not a finite number"),
])
def test_new_case_refuses_with_one_line_and_writes_nothing(project: Path, capsys, argv, message) -> None:
    before = tree(project)
    code, out, err = scaffold(capsys, "new-case", *argv, "--root", str(project))
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
    assert tree(project) == before


def test_new_case_refuses_when_a_vendor_has_its_folder(project: Path, capsys) -> None:
    (project / "vendor/nvidia/cases/toy").mkdir()
    before = tree(project)
    code, _, err = scaffold(capsys, "new-case", "toy", "--root", str(project))
    assert code == 2 and "vendor/nvidia/cases/toy already exists" in err
    assert tree(project) == before


def test_new_case_needs_the_vendors_it_writes_configs_for(project: Path, capsys) -> None:
    (project / "vendor/nvidia/vendor.yaml").unlink()
    before = tree(project)
    code, _, err = scaffold(capsys, "new-case", "toy", "--root", str(project))
    assert code == 2 and "vendor/nvidia/vendor.yaml not found" in err
    assert tree(project) == before
