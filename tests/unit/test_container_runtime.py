"""The docker runtime without an engine: image tags and build contexts, vendor container options, the plan,
and the preparation a container runs before its ranks (environment file, requirements, csrc)."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from case_runners.core.errors import ConfigError
from case_runners.core.paths import project_root
from case_runners.launch.container.image import BUILD_DIR, build_args, image_spec, write_context
from case_runners.launch.container.prepare import PREPARE_LOG, SITE, prepare
from case_runners.launch.container.supervise import ENTRY, _mounts
from case_runners.launch.node import NodeSpec
from case_runners.plan.run_plan import make_plan
from case_runners.records.resolved import ResolvedConfig
from case_runners.vendors.container_options import check_container, sdk_options
from case_runners.vendors.description import load_vendor
from case_runners.vendors.layout import case_requirements
from process_helpers import SHORT_S
from record_helpers import resolved

REPO = project_root()
DIGITS = {"case": "digits_cnn", "hardware": "CPU", "nnodes": 1, "nproc": 2, "repeat": 1}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The parts of the checkout an image depends on, to edit."""
    root = tmp_path / "checkout"
    for name in ("vendor", "case_runners"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("requirements-case.txt",):
        shutil.copy(REPO / name, root / name)
    return root


def _tag(root: Path, **settings: str) -> str:
    return image_spec(root, load_vendor("cpu", root), "pytorch", settings)["tag"]


def test_the_tag_is_a_hash_of_the_image_inputs_and_not_of_the_pip_sources(checkout: Path):
    first = _tag(checkout)
    assert first == _tag(checkout), "the same inputs give the same tag"
    assert _tag(checkout, pip_index_url="https://mirror.example/simple", ca_bundle="/etc/ssl/x.crt") == first
    assert _tag(checkout, base_image="debian-python:12") != first
    dockerfile = checkout / "vendor" / "cpu" / "docker_image" / "pytorch" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "# edited\n")
    edited = _tag(checkout)
    assert edited != first
    (checkout / "requirements-case.txt").write_text("torch==2.13.0\n")
    assert _tag(checkout) != edited, "perfplay's case pins are an input of every image"


def test_the_image_is_named_after_vendor_and_framework():
    spec = image_spec(REPO, load_vendor("cpu"), "pytorch", {})
    assert spec["ref"] == f"perfplay-cpu-pytorch:{spec['tag']}" and len(spec["tag"]) == 16
    assert spec["settings"]["pip_extra_index_url"] == "https://download.pytorch.org/whl/cpu"  # vendor default
    dropped = image_spec(REPO, load_vendor("cpu"), "pytorch", {"pip_extra_index_url": ""})
    assert "PIP_EXTRA_INDEX_URL" not in build_args(dropped), "an empty value drops the vendor's default"
    # The building host merges the plan's settings over the vendor's defaults again: the drop must survive.
    again = image_spec(REPO, load_vendor("cpu"), "pytorch", dropped["settings"])
    assert build_args(again) == build_args(dropped) and again["tag"] == dropped["tag"]


def test_bad_image_settings_name_the_key_and_the_allowed_values():
    with pytest.raises(ConfigError) as bad_key:
        image_spec(REPO, load_vendor("cpu"), "pytorch", {"pip_mirror": "x"})
    assert "key 'perfplay_image.pip_mirror': unknown image setting (allowed: base_image, ca_bundle" \
        in str(bad_key.value)
    with pytest.raises(ConfigError) as no_dockerfile:
        image_spec(REPO, load_vendor("cpu"), "paddle", {})
    assert "vendor 'cpu' has no vendor/cpu/docker_image/paddle/Dockerfile" in str(no_dockerfile.value)
    assert "(allowed: deepspeed, pytorch)" in str(no_dockerfile.value)


def test_the_build_context_stages_requirements_ca_bundle_and_local_wheels(tmp_path: Path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl").write_bytes(b"wheel")
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    spec = image_spec(REPO, load_vendor("cpu"), "pytorch", {"pip_find_links": str(wheels), "ca_bundle": str(ca),
                                                            "base_image": "base:1"})
    buffer = io.BytesIO()
    write_context(REPO, spec, buffer)
    with tarfile.open(fileobj=buffer) as tar:
        names = set(tar.getnames())
        assert tar.extractfile("perfplay/ca.crt").read() == ca.read_bytes()
    assert {"Dockerfile", "pytorch_install.sh", "perfplay/requirements-case.txt",
            "perfplay/wheels/torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl"} <= names
    args = build_args(spec)
    assert args["BASE_IMAGE"] == "base:1"
    assert args["PIP_FIND_LINKS"] == f"{BUILD_DIR}/perfplay/wheels", "a local folder is staged, not passed"
    url = image_spec(REPO, load_vendor("cpu"), "pytorch", {"pip_find_links": "https://wheels.example/"})
    assert build_args(url)["PIP_FIND_LINKS"] == "https://wheels.example/"
    missing = image_spec(REPO, load_vendor("cpu"), "pytorch", {"ca_bundle": str(tmp_path / "none.pem")})
    with pytest.raises(ConfigError, match="key 'perfplay_image.ca_bundle': CA bundle .* is not a file"):
        write_context(REPO, missing, io.BytesIO())


def test_vendor_container_options_are_checked_and_become_sdk_arguments():
    check_container({"run": {"shm_size": "16g", "ipc_mode": "host", "ulimits": {"memlock": -1}, "gpus": "all",
                             "devices": ["/dev/davinci0"]}}, "vendor/x/vendor.yaml")
    with pytest.raises(ConfigError) as bad:
        check_container({"run": {"network": "bridge"}}, "vendor/x/vendor.yaml")
    assert str(bad.value).startswith("vendor/x/vendor.yaml: key 'container.run.network': unknown container option")
    assert "allowed: cap_add, devices, environment, gpus, ipc_mode, privileged, shm_size, ulimits" in str(bad.value)
    with pytest.raises(ConfigError, match="key 'container.run.ipc_mode': unknown IPC mode 'none'"):
        check_container({"run": {"ipc_mode": "none"}}, "vendor.yaml")
    options = sdk_options({"shm_size": "16g", "ulimits": {"memlock": -1}, "gpus": "all", "devices": ["/dev/davinci0"]})
    assert options["privileged"] is False, "not privileged unless the vendor says so"
    assert options["shm_size"] == "16g" and options["devices"] == ["/dev/davinci0:/dev/davinci0:rwm"]
    assert options["ulimits"][0]["Name"] == "memlock" and options["ulimits"][0]["Soft"] == -1
    assert options["device_requests"][0]["Count"] == -1 and options["device_requests"][0]["Capabilities"] == [["gpu"]]


def test_the_nvidia_vendor_asks_for_gpus_and_every_vendor_loads():
    run = load_vendor("nvidia").container["run"]
    assert run["gpus"] == "all" and not run.get("privileged")


def test_a_docker_plan_puts_the_image_in_every_config():
    plan = make_plan({"vendor": "cpu", "runtime": "docker", "cases": [DIGITS]}, check=True)
    assert plan["ok"], plan["errors"]
    (image,) = plan["images"]
    config = plan["cases"][0]
    assert config["runtime"] == {"kind": "docker", "image": image["ref"], "run": {"shm_size": "1g", "ipc_mode": "host"}}
    host = make_plan({"vendor": "cpu", "cases": [DIGITS]}, check=True)
    assert host["cases"][0]["runtime"] == {"kind": "host"} and host["images"] == []
    bad = make_plan({"vendor": "cpu", "runtime": "podman", "cases": [DIGITS]}, check=True)
    assert "run vars: key 'perfplay_runtime': unknown runtime 'podman' (allowed: docker, host)" in bad["errors"]


def test_a_generate_checkpoint_outside_the_mounts_is_mounted_read_only_at_its_path(tmp_path: Path):
    data, outside, run_dir = tmp_path / "data", tmp_path / "ckpt", tmp_path / "results" / "run_m"
    for folder in (data / "ckpt", outside, run_dir / "saved"):
        folder.mkdir(parents=True)
    (tmp_path / "link").symlink_to(outside)
    config_path = run_dir / "llama_generate_CPUx1x1" / "resolved_config.json"
    spec = NodeSpec(config_path=config_path, log_dir=config_path.parent / "round1" / "localhost_noderank0",
                    node_rank=0, master_addr="127.0.0.1", master_port=0, timeout_s=1, run_id="run_m", nnodes=1,
                    nproc=1)
    config = ResolvedConfig.from_json(resolved("llama", selection={"task": "generate", "data_dir": str(data)}))

    def mounts(checkpoint: str) -> dict[str, tuple[str, bool]]:
        given = dataclasses.replace(config, params={**config.params, "checkpoint": checkpoint})
        return {m["Target"]: (m["Source"], m["ReadOnly"]) for m in _mounts(spec, given, REPO)}

    base = mounts("")
    assert base == {str(REPO): (str(REPO), True), str(run_dir): (str(run_dir), False),
                    str(data.resolve()): (str(data.resolve()), True)}
    assert mounts(str(outside)) == {**base, str(outside): (str(outside.resolve()), True)}
    assert mounts(str(tmp_path / "link")) == {**base, str(tmp_path / "link"): (str(outside.resolve()), True)}, \
        "at the path the rank opens"
    for already in ("trained", "ckpt", str(data / "ckpt"), str(run_dir / "saved")):
        assert mounts(already) == base, already
    assert mounts(str(tmp_path / "none")) == base, "no directory: the rank's own check names it"


def test_an_inference_case_s_files_given_by_absolute_path_are_mounted_read_only(tmp_path: Path):
    run_dir, weights, engine = tmp_path / "results" / "run_i", tmp_path / "w" / "digits.pt", tmp_path / "e.plan"
    onnx = tmp_path / "exported" / "digits_cnn.onnx"
    for path in (weights, engine, onnx, onnx.with_name("digits_cnn.onnx.data")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    config_path = run_dir / "digits_cnn_inference_CPUx1x1" / "resolved_config.json"
    spec = NodeSpec(config_path=config_path, log_dir=config_path.parent / "round1" / "localhost_noderank0",
                    node_rank=0, master_addr="127.0.0.1", master_port=0, timeout_s=1, run_id="run_i", nnodes=1,
                    nproc=1)
    config = ResolvedConfig.from_json(resolved(selection={"task": "inference"}))

    def mounts(**params: str) -> dict[str, tuple[str, bool]]:
        given = dataclasses.replace(config, params={**config.params, **params})
        return {m["Target"]: (m["Source"], m["ReadOnly"]) for m in _mounts(spec, given, REPO)}

    base = mounts()
    assert base == {str(REPO): (str(REPO), True), str(run_dir): (str(run_dir), False)}
    assert mounts(checkpoint=str(weights), exist_compiler_path=str(engine)) == {
        **base, str(weights): (str(weights), True), str(engine): (str(engine), True)}
    assert mounts(exist_onnx_path=str(onnx)) == {**base, str(onnx.parent): (str(onnx.parent), True)}, \
        "the ONNX file's directory: its external data lies beside it"
    assert mounts(exist_onnx_path=str(tmp_path / "placeholder.onnx")) == base, "a placeholder is the engine's to judge"
    assert mounts(checkpoint="weights/digits.pt") == base, "a relative path is the project's, which is mounted"


def test_the_entry_shell_sources_the_environment_file_before_the_launcher(tmp_path: Path):
    env_file = tmp_path / "environment_variables.sh"
    env_file.write_text("export PERFPLAY_PROBE=sourced\n")
    argv = ["bash", "-c", ENTRY, "perfplay-entry", sys.executable, "-c",
            "import os; print(os.environ['PERFPLAY_PROBE'])"]
    out = subprocess.run(argv, env={**os.environ, "PERFPLAY_ENV_FILE": str(env_file)}, capture_output=True, text=True,
                         timeout=SHORT_S)
    assert out.stdout.strip() == "sourced"
    env_file.write_text("return 1\n")
    failed = subprocess.run(argv, env={**os.environ, "PERFPLAY_ENV_FILE": str(env_file)}, capture_output=True,
                            timeout=SHORT_S)
    assert failed.returncode == 3, "a failing environment file stops the container before the launcher"


def test_a_vendor_requirements_file_replaces_the_standard_case_s(tmp_path: Path):
    """<vendor>_requirements.txt replaces the standard case's requirements.txt; the vendor case's own
    requirements.txt is installed after either."""
    project = tmp_path / "project"
    standard = project / "case_runners" / "cases" / "resnet50" / "inference"
    vendor_dir = project / "vendor" / "cpu" / "cases" / "resnet50"
    standard.mkdir(parents=True)
    vendor_dir.mkdir(parents=True)
    config = (project, "cpu", "resnet50", "inference")
    assert case_requirements(*config) == []
    (standard / "requirements.txt").write_text("pycocotools==2.0.4\n")
    assert case_requirements(*config) == [standard / "requirements.txt"]
    assert case_requirements(project, "cpu", "resnet50", "training") == [], "the training case has its own"
    (vendor_dir / "requirements.txt").write_text("PyYAML==6.0.3\n")
    (vendor_dir / "cpu_requirements.txt").write_text("pycocotools==2.0.7\n")
    assert case_requirements(*config) == [vendor_dir / "cpu_requirements.txt", vendor_dir / "requirements.txt"]
    assert case_requirements(project, "nvidia", "resnet50", "inference") == [standard / "requirements.txt"]


def test_prepare_installs_missing_requirements_and_builds_csrc_once(tmp_path: Path, monkeypatch):
    project = tmp_path / "project"
    case_dir = project / "vendor" / "cpu" / "cases" / "digits_cnn"
    (case_dir / "csrc" / "probe_ops").mkdir(parents=True)
    (case_dir / "requirements.txt").write_text("PyYAML==6.0.3\n")  # satisfied: no pip
    (case_dir / "csrc" / "probe_ops" / "__init__.py").write_text("VALUE = 42\n")
    (case_dir / "csrc" / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='probe-ops', version='1.0', packages=['probe_ops'])\n")
    config_path = tmp_path / "run" / "digits_cnn_CPUx1x2" / "resolved_config.json"
    config_path.parent.mkdir(parents=True)
    config = ResolvedConfig.from_json(resolved("digits_cnn", selection={"nproc": 2}))
    config_path.write_text(json.dumps(config.to_json()))
    log_dir = config_path.parent / "round1" / "localhost_noderank0"
    monkeypatch.setenv("PYTHONPATH", "")
    monkeypatch.setattr(sys, "path", list(sys.path))

    prepare(config, config_path, project, log_dir)
    log = (log_dir / PREPARE_LOG).read_text()
    assert "requirements: vendor/cpu/cases/digits_cnn/requirements.txt already satisfied" in log
    assert "csrc: building setup.py" in log
    site = config_path.parent / SITE
    assert (site / "probe_ops" / "__init__.py").is_file()
    assert os.environ["PYTHONPATH"].split(os.pathsep)[0] == str(site), "the ranks import what csrc built"
    prepare(config, config_path, project, log_dir)
    assert "csrc: already built" in (log_dir / PREPARE_LOG).read_text(), "the next round does not rebuild"
    assert not list((case_dir / "csrc").glob("*.egg-info")), "the read-only project is not written to"
