"""What the host preflight and runtime_host run on a host: host-check, requirements, the checkout bundle."""

from __future__ import annotations

import importlib.metadata
import json
import os
import socket
import subprocess
import sys
import tarfile

import pytest

from case_runners.core.paths import project_root
from case_runners.host.check import PROBE_FILE_ENV, check_master_port, host_check, probe_key
from case_runners.host.requirements import check_requirements, pins
from case_runners.plan.bundle import write_bundle
from case_runners.records.schema import RecordError
from process_helpers import SHORT_S
from record_helpers import resolved

REPO = project_root()
DIGITS = resolved("digits_cnn", params={"synthetic": False})


def test_host_check_passes_on_this_host():
    result = host_check({"vendor": "cpu", "nproc": 1, "cases": [DIGITS], "master_port": 0,
                         "master_addr": "127.0.0.1"})
    assert result["ok"], result["problems"]
    assert result["devices"]["count"] >= 1
    assert 0 < result["master_port"] < 65536


def test_host_check_names_every_problem_at_once(tmp_path):
    bad_data = dict(DIGITS, data_dir=str(tmp_path / "nowhere"))
    result = host_check({"vendor": "cpu", "nproc": 4096, "cases": [bad_data], "device_count": 2})
    assert not result["ok"]
    assert len(result["problems"]) == 2
    assert "a round needs nproc=4096 cpu devices, the host has 2 (host var perfplay_device_count)" \
        in result["problems"][0]
    assert "key 'data_dir' (run var perfplay_cases) of digits_cnn_CPUx1x1" in result["problems"][1]


def test_a_passed_runtime_probe_of_the_cpu_vendor_is_not_repeated(tmp_path):
    """host-check imports torch to probe the cpu vendor's device and backend once: the next check with the same
    Python, distributions and hook answers without importing torch (about 1 CPU-s less per run)."""
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"vendor": "cpu", "nproc": 1, "cases": [DIGITS]}))
    env = {**os.environ, PROBE_FILE_ENV: str(tmp_path / "probe.json")}

    def imports_torch() -> bool:
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "case_runners", "host-check", "--request",
                               str(request)], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0 and json.loads(done.stdout)["ok"], done.stderr[-2000:]
        return any(line.rsplit("|", 1)[-1].strip() == "torch" for line in done.stderr.splitlines())

    assert imports_torch(), "the first check probes (in a forked child, whose imports -X importtime shows too)"
    assert not imports_torch()
    assert probe_key("cpu", "cpu", "gloo") != probe_key("cpu", "cpu", "mpi"), "another backend is probed again"
    assert probe_key("nvidia", "cuda", "nccl") is None, "a device that can be lost is probed at every run"


def test_a_framework_version_other_than_the_hosts_torch_is_a_warning():
    """pytorch_<major.minor> of a selection is compared with this Python's torch: a mismatch warns, never fails."""
    here = ".".join(importlib.metadata.version("torch").split("+")[0].split(".")[:2])
    same = resolved(selection={"framework": f"pytorch_{here}.9"})  # the patch level does not count
    other = resolved(selection={"framework": "pytorch_1.8"})
    assert (same["framework"], same["framework_version"]) == ("pytorch", f"{here}.9")
    assert host_check({"vendor": "cpu", "cases": [same]})["warnings"] == []
    result = host_check({"vendor": "cpu", "cases": [other, DIGITS]})
    assert result["ok"], result["problems"]
    assert result["warnings"] == [
        f"case digits_cnn_CPUx1x1 asks for pytorch_1.8 (perfplay_cases), this host has torch "
        f"{importlib.metadata.version('torch')} ({sys.executable}): its results are for the torch it ran on"]
    docker = dict(other, runtime={"kind": "docker", "image": "perfplay-cpu-pytorch:0", "run": {}})
    assert host_check({"vendor": "cpu", "cases": [docker]})["warnings"] == [], "the image's torch counts there"


def test_a_case_of_the_request_is_a_resolved_config():
    with pytest.raises(RecordError, match=r"^host-check request: cases\[1\]: key 'case_id': expected"):
        host_check({"vendor": "cpu", "nproc": 1, "cases": [DIGITS, {**DIGITS, "case_id": None}]})


def test_the_collectives_interface_must_exist_on_the_host():
    assert host_check({"vendor": "cpu", "nic": "lo"})["problems"] == []
    names = sorted(name for _, name in socket.if_nameindex())
    assert host_check({"vendor": "cpu", "nic": "nosuchnic0"})["problems"] == [
        f"key 'perfplay_nic': this host has no network interface 'nosuchnic0' (allowed: {', '.join(names)})"]


def test_a_master_port_in_use_is_a_problem():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        picked, problems = check_master_port("127.0.0.1", port)
    assert picked is None
    assert f"key 'perfplay_master_port': port {port} on 127.0.0.1 is not free" in problems[0]


def test_an_address_not_on_this_host_binds_all_addresses():
    port, problems = check_master_port("192.0.2.1", 0)  # TEST-NET-1: never local
    assert not problems and port > 0


def test_requirements_are_checked_against_the_installed_versions(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("# pins\nPyYAML==6.0.3  # ok\ntorch==2.13.0\nnumpy==0.0.1\nno-such-dist==1.0\nloose>=1\n")
    result = check_requirements(req)
    assert not result["satisfied"]
    assert result["missing"] == ["no-such-dist==1.0"]
    assert result["mismatched"][0].startswith("numpy==0.0.1 (installed ")
    assert result["unpinned"] == ["loose>=1"]


def test_this_checkout_s_requirements_are_satisfied_in_its_venv():
    out = subprocess.run([sys.executable, "-m", "case_runners", "requirements", "--requirements",
                          str(REPO / "requirements.txt")], capture_output=True, text=True, check=True, cwd=REPO,
                         timeout=SHORT_S)
    assert json.loads(out.stdout)["satisfied"] is True


def test_the_host_check_answers_the_pins_first_and_checks_nothing_else_while_one_is_missing(tmp_path):
    """host-check with requirements: one process answers the venv's pins and the host. While a file lacks a pin the
    answer names the file and the package and says which files pip is to install, before anything the pins would
    install is imported; a file of pins that hold adds nothing but an unpinned line's warning."""
    vendor_pins = tmp_path / "vendor_requirements.txt"

    def host_check_cli(*files: str) -> dict:
        request = tmp_path / "request.json"
        request.write_text(json.dumps({"vendor": "cpu", "nproc": 1, "cases": [DIGITS],
                                       "master_addr": "127.0.0.1", "requirements": list(files)}))
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "case_runners", "host-check", "--request",
                               str(request)], capture_output=True, text=True, check=True, cwd=REPO, timeout=SHORT_S)
        return {**json.loads(done.stdout), "imported": done.stderr}

    vendor_pins.write_text("PyYAML==6.0.3\nno-such-dist==1.0\n")
    lacking = host_check_cli("requirements.txt", str(vendor_pins))
    assert (lacking["ok"], lacking["checked"], lacking["unmet"]) == (False, False, [str(vendor_pins)])
    assert lacking["problems"] == [f"{vendor_pins}: this Python ({sys.executable}) lacks no-such-dist==1.0: install "
                                   f"them with {sys.executable} -m pip install -r {vendor_pins} (the playbook does)"]
    assert " yaml\n" not in lacking["imported"] and "case_runners.host.check" not in lacking["imported"]

    vendor_pins.write_text("PyYAML==6.0.3\nnumpy\n")
    held = host_check_cli("requirements.txt", str(vendor_pins))
    assert (held["ok"], held["checked"], held["unmet"]) == (True, True, [str(vendor_pins)]), held["problems"]
    assert held["warnings"] == [f"{vendor_pins}: numpy not a name==version pin: not checked"]
    assert held["devices"]["count"] >= 1 and held["data"][0]["case_id"] == DIGITS["case_id"]
    assert host_check_cli("requirements.txt")["unmet"] == []


def test_pins_read_extras_and_markers():
    assert pins("a[x]==1.0 ; python_version>'3'\n\n#c\n") == [("a", "1.0")]


def test_the_bundle_is_byte_identical_for_the_same_files(tmp_path):
    first = write_bundle(REPO, tmp_path / "a.tar")
    second = write_bundle(REPO, tmp_path / "b.tar")
    assert first == second
    with tarfile.open(tmp_path / "a.tar") as tar:
        names = tar.getnames()
    assert "requirements.txt" in names and "case_runners/cli/main.py" in names
    assert "vendor/cpu/vendor.yaml" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_bundle_changes_when_a_file_changes(tmp_path):
    root = tmp_path / "checkout"
    for name in ("case_runners", "vendor"):
        (root / name).mkdir(parents=True)
        (root / name / "x.py").write_text("x = 1\n")
    (root / "requirements.txt").write_text("a==1\n")
    before = write_bundle(root, tmp_path / "a.tar")
    (root / "vendor" / "x.py").write_text("x = 2\n")
    assert write_bundle(root, tmp_path / "b.tar") != before
