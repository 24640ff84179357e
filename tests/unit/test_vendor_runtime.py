"""The open vendor model: any device type and backend, the vendor's runtime hook, and what the host preflight says
when the hook or torch after it cannot give what vendor.yaml names."""

import os
import textwrap
from pathlib import Path

import pytest
import torch

from case_runners.core.errors import ConfigError
from case_runners.launch.env_file import sourced
from case_runners.plan.run_plan import make_plan
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round_build import mfu
from case_runners.tasks.training.trainer import Precision
from case_runners.vendors.description import load_vendor, vendor_info
from case_runners.vendors.runtime import RuntimeHookError, VendorRuntime, check_hook_source
from process_helpers import REAPED_S, run_pids, wait_for
from record_helpers import resolved

VENDOR_YAML = """\
device: {device}
dist_backend: {backend}
amp_dtype: bf16
visible_devices: {{env: ACME_VISIBLE_DEVICES}}
default_hardware: X1
hardware:
  X1: {{peak_flops: {{fp32: 1.0e12, tf32: 8.0e12, bf16: 16.0e12}}}}
"""


def make_vendor(root: Path, runtime: str | None = None, device: str = "cpu", backend: str = "gloo",
                name: str = "acme") -> Path:
    folder = root / "vendor" / name
    folder.mkdir(parents=True)
    (folder / "vendor.yaml").write_text(VENDOR_YAML.format(device=device, backend=backend))
    if runtime is not None:
        (folder / "runtime.py").write_text(textwrap.dedent(runtime))
    return folder


def hook(root: Path, name: str = "acme") -> VendorRuntime:
    vendor = load_vendor(name, root)
    return VendorRuntime(name, vendor.device, vendor.dist_backend, root)


def test_any_device_and_backend_name_is_taken_and_only_its_form_is_checked(tmp_path):
    make_vendor(tmp_path, device="sdaa", backend="tccl")
    vendor = load_vendor("acme", tmp_path)
    assert (vendor.device, vendor.dist_backend) == ("sdaa", "tccl")
    assert vendor_info(vendor, "X1")["amp_dtype"] == "bf16"
    make_vendor(tmp_path, device="SDAA card", name="bad")
    with pytest.raises(ConfigError, match=r"vendor/bad/vendor.yaml: key 'device': 'SDAA card' is not a torch name"):
        load_vendor("bad", tmp_path)


def test_a_vendor_description_is_typed_with_its_defaults_and_its_string_keys_are_checked(tmp_path):
    """load_vendor gives a VendorDescription (absent keys at their defaults); a monitor, description or
    visible_devices.env that is not a string is refused naming the key and the file (it once reached the run)."""
    make_vendor(tmp_path)
    vendor = load_vendor("acme", tmp_path)
    assert (vendor.name, vendor.path, vendor.amp_dtype, vendor.fsdp, vendor.monitor, vendor.container) == \
        ("acme", tmp_path / "vendor" / "acme" / "vendor.yaml", "bf16", False, None, {})
    assert (vendor.visible_devices_env, vendor.visible_devices_scope, vendor.default_hardware) == \
        ("ACME_VISIBLE_DEVICES", "node", "X1")
    for key, line in (("monitor", "monitor: 5\n"), ("description", "description: [a]\n"),
                      ("visible_devices.env", "visible_devices: {env: 7}\n")):
        folder = make_vendor(tmp_path, name=key.replace(".", "_"))
        (folder / "vendor.yaml").write_text((folder / "vendor.yaml").read_text().replace(
            "visible_devices: {env: ACME_VISIBLE_DEVICES}\n", "" if key == "visible_devices.env" else
            "visible_devices: {env: ACME_VISIBLE_DEVICES}\n") + line)
        with pytest.raises(ConfigError, match=rf"^vendor/{folder.name}/vendor.yaml: key '{key}': must be a "):
            load_vendor(folder.name, tmp_path)


def test_the_preflight_names_the_vendor_file_the_key_and_what_torch_said(tmp_path):
    make_vendor(tmp_path, device="sdaa", backend="tccl")
    problems = hook(tmp_path).check()
    assert any("vendor/acme/vendor.yaml: key 'device': torch cannot make a 'sdaa' device" in p
               and "Expected one of cpu" in p for p in problems), problems
    assert any("key 'dist_backend': torch does not know the backend 'tccl'" in p for p in problems), problems


def test_a_backend_the_hook_registers_is_known_to_the_preflight(tmp_path):
    make_vendor(tmp_path, backend="acmeccl_preflight", runtime="""
        def setup():
            import torch.distributed as dist
            from torch.distributed import ProcessGroupGloo
            if "acmeccl_preflight" not in dist.Backend.backend_list:
                dist.Backend.register_backend("acmeccl_preflight", lambda store, rank, size, timeout:
                                              ProcessGroupGloo(store, rank, size, timeout), devices=["cpu"])

        def device_count():
            return 3
    """)
    runtime = hook(tmp_path)
    assert runtime.check() == []
    assert runtime.device_count() == 3, "the count is the hook's, not os.cpu_count()"


@pytest.mark.parametrize("source, message", [
    ("IMPORTS = ['torch_acme_missing']\n",
     "vendor/acme/runtime.py: IMPORTS: import torch_acme_missing failed: ModuleNotFoundError: No module named"),
    ("def setup():\n    raise RuntimeError('firmware too old')\n",
     "vendor/acme/runtime.py: setup() raised RuntimeError: firmware too old"),
    ("raise ImportError('libacme.so not found')\n",
     "vendor/acme/runtime.py: importing it failed: ImportError: libacme.so not found"),
])
def test_a_failing_hook_is_named_with_its_file_and_cause(tmp_path, source, message):
    make_vendor(tmp_path, runtime=source)
    problems = _problems(tmp_path)
    assert len(problems) == 1 and message in problems[0], problems


def _problems(root: Path) -> list[str]:
    try:
        return hook(root).check()
    except RuntimeHookError as exc:  # the module itself failed to load
        return [str(exc)]


def test_a_device_count_that_is_not_a_number_is_refused(tmp_path):
    make_vendor(tmp_path, runtime="def device_count():\n    return '2'\n")
    with pytest.raises(RuntimeHookError, match=r"runtime.py: device_count\(\) returned '2' \(str\), not a number"):
        hook(tmp_path).device_count()


def test_unknown_points_and_wrong_signatures_are_refused_on_the_controller(tmp_path):
    make_vendor(tmp_path, runtime="""
        def synchronise(device):
            pass

        def pick_device():
            pass
    """)
    problems, _ = check_hook_source("acme", tmp_path)
    assert any("line 2: defines 'synchronise', which is not a point" in p for p in problems), problems
    assert any("pick_device takes 0 positional parameter(s); the caller calls pick_device(index)" in p
               for p in problems), problems
    with pytest.raises(ConfigError, match="synchronise"):
        load_vendor("acme", tmp_path)


def test_shipped_vendors_use_the_same_hook():
    for name in ("cpu", "nvidia"):
        problems, defined = check_hook_source(name)
        assert problems == [] and "device_count" in defined, (name, problems)
    cpu = hook(Path(__file__).resolve().parents[2], "cpu")
    assert cpu.device_count() == os.cpu_count()
    assert cpu.check() == []
    assert cpu.peak_memory_bytes(torch.device("cpu")) > 0, "the cpu vendor reports the process's peak RSS"


def test_amp_uses_the_vendors_dtype_and_tf32_is_named_as_what_ran():
    assert Precision(True, "cuda", "bf16").name == "bf16"
    assert Precision(True, "cpu", "bf16").grad_scaler() is None, "bf16 trains without a GradScaler"
    assert Precision(True, "cpu", "fp16").grad_scaler() is not None
    assert Precision(False, "cuda", "fp16", tf32=True).name == "tf32"
    assert Precision(True, "cuda", "fp16", tf32=True).name == "fp16", "AMP's dtype wins over tf32"
    config = ResolvedConfig.from_json(resolved("bert", flops_per_sample=1e9))  # a written figure
    config.vendor_info.hardware = {"peak_flops": {"fp32": 1e12, "tf32": 8e12}}
    info = mfu({"precision": "tf32", "p_core": 1000.0}, config)
    assert (info.value, info.precision, info.peak_flops_per_device) == (0.125, "tf32", 8e12)


def test_the_environment_file_sets_and_unsets_and_a_failing_one_is_named(tmp_path):
    good = tmp_path / "environment_variables.sh"
    good.write_text("export ACME_CACHE=/tmp/acme\nunset DROP_ME\n")
    env = sourced(good, {"PATH": os.environ["PATH"], "DROP_ME": "1", "KEEP": "2"})
    assert env["ACME_CACHE"] == "/tmp/acme" and env["KEEP"] == "2" and "DROP_ME" not in env
    assert "SHLVL" not in env, "bash's own variables stay out"
    bad = tmp_path / "broken.sh"
    bad.write_text("echo 'acme driver missing' >&2\nfalse\n")
    with pytest.raises(Exception, match=r"broken.sh: sourcing it failed \(exit code 1\): acme driver missing"):
        sourced(bad, {"PATH": os.environ["PATH"]})


def test_the_resolved_config_carries_the_vendors_amp_dtype():
    result = make_plan({"vendor": "cpu", "cases": ["digits_cnn"]}, check=True)
    assert result["ok"] and result["cases"][0]["vendor_info"]["amp_dtype"] == "bf16"
    assert result["cases"][0]["requirements"] == [], "the cpu vendor's digits_cnn needs no extra pins"


def test_a_backend_torch_lists_but_was_not_built_with_is_refused_at_the_preflight(tmp_path):
    """xccl is in dist.Backend.backend_list on every torch; this CPU torch was not built with it: the round would
    fail with "Distributed package doesn't have XCCL built in". The hook registers it behind the guard the test chip
    uses (tests/vendor_testchip/runtime.py), which then registers it, and torch still cannot run it."""
    assert "xccl" in torch.distributed.Backend.backend_list and not torch.distributed.is_backend_available("xccl")
    chip = (Path(__file__).parents[1] / "vendor_testchip" / "runtime.py").read_text()
    make_vendor(tmp_path, backend="xccl", runtime=chip.replace('BACKEND = "testccl"', 'BACKEND = "xccl"'))
    problems = hook(tmp_path).check()
    assert len(problems) == 1, problems
    said = "vendor/acme/vendor.yaml: key 'dist_backend': torch lists the backend 'xccl' but was not built with it"
    assert problems[0].startswith(f"{said} after vendor/acme/runtime.py ran (available here: gloo"), problems
    assert "nccl" not in problems[0] and "mpi" not in problems[0], problems


def test_a_hook_call_that_hangs_is_stopped_within_its_timeout_naming_the_file_and_the_call(tmp_path, monkeypatch):
    """device_count() sleeping forever (a driver that never answers) and a setup() that does: the preflight's
    bounded calls stop them after $PERFPLAY_VENDOR_CALL_TIMEOUT_S, name the file and the call, and leave nothing
    running (the child started a process of its own too)."""
    from case_runners.host.check import hook_problems
    from case_runners.host.devices import list_devices

    pid_file = tmp_path / "sleeper.pid"
    make_vendor(tmp_path, runtime=f"""
        import subprocess
        import time

        def setup():
            time.sleep(3600)

        def device_count():
            sleeper = subprocess.Popen(["sleep", "3600"])
            open({str(pid_file)!r}, "w").write(str(sleeper.pid))
            time.sleep(3600)
    """)
    monkeypatch.setenv("PERFPLAY_VENDOR_CALL_TIMEOUT_S", "2")
    found = list_devices("acme", tmp_path)
    assert found["count"] == 0
    assert found["error"] == ("vendor/acme/runtime.py: device_count() did not return within 2 s: stopped (the "
                              "timeout: $PERFPLAY_VENDOR_CALL_TIMEOUT_S)")
    sleeper = int(pid_file.read_text())
    assert wait_for(lambda: not Path(f"/proc/{sleeper}").exists() or
                    Path(f"/proc/{sleeper}/stat").read_text().split(")")[1].split()[0] == "Z", timeout=30), \
        "the process the hook started is gone with it"
    assert hook_problems("acme", "cpu", "gloo", tmp_path) == [
        "vendor/acme/runtime.py: setup() did not return within 2 s: stopped (the timeout: "
        "$PERFPLAY_VENDOR_CALL_TIMEOUT_S)"]


def test_a_hanging_environment_file_is_stopped_with_what_it_started(tmp_path, monkeypatch):
    from case_runners.core import pidfiles
    from case_runners.core.processes import identify
    from case_runners.launch import env_file
    monkeypatch.setattr(env_file, "ENV_FILE_TIMEOUT_S", 3)
    run_id = "envhang-" + os.urandom(4).hex()
    hang = tmp_path / "environment_variables.sh"
    hang.write_text(f"sleep 1000 >/dev/null 2>&1 &\necho $! > {tmp_path}/child\nls {tmp_path} > {tmp_path}/seen\n"
                    "sleep 1000\n")
    child = None
    try:
        with pytest.raises(Exception, match=r"variables.sh: cannot be sourced: it did not finish within 3 s"):
            sourced(hang, {"PATH": os.environ["PATH"]}, tmp_path, run_id)
        child = int((tmp_path / "child").read_text())
        assert f"env_file.{run_id}.pid" in (tmp_path / "seen").read_text(), "its pid is recorded while it runs"
        # SIGKILL is sent to the whole group before sourced() returns; a loaded host may take a moment to end them
        assert wait_for(lambda: identify(child) is None, REAPED_S), "the background child went with the file's bash"
        assert wait_for(lambda: not run_pids(run_id), REAPED_S), "nothing left"
        assert not pidfiles.find(tmp_path, run_id), "the pid file is removed"
    finally:
        if child and identify(child) is not None:
            os.kill(child, 9)
