"""The docker runtime against a real engine: the cpu vendor's image built from a debootstrapped base, digits
at 1x2 in a container to convergence, image idempotence, and no container left after success, a killed rank,
a timeout or an interrupted controller."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import docker
from cluster import leftovers, rank_pid, round_record, wait_for
from conftest import DIGITS_1X2
from docker_env import REPO, docker_vars, image_tags, remember, run_containers, run_docker
from playbook_run import BIN, checkout_copy, playbook_env, run_playbook

BUILD_TASK = "runtime_docker : Build the images this host's rounds run in"
# Runs until its time budget unless a fault stops it first (synthetic data never reaches the target).
LONG = dict(DIGITS_1X2, overrides={"synthetic": True, "time_budget_s": 120, "max_epochs": 10000})


def _node_dir(results: Path, run_id: str, case_id: str, number: int = 1) -> Path:
    return results / run_id / case_id / f"round{number}" / "localhost_noderank0"


def _start(results: Path, run_id: str, log: Path, *cases: dict, **extra: object) -> subprocess.Popen:
    remember(run_id)
    handle = open(log, "w")  # noqa: SIM115 - owned by the process
    return subprocess.Popen([str(BIN / "ansible-playbook"), "run_case.yml", "-e", f"perfplay_results_dir={results}",
                             "-e", f"perfplay_run_id={run_id}", "-e", docker_vars(*cases, **extra)],
                            cwd=REPO, env=playbook_env(REPO), stdout=handle, stderr=subprocess.STDOUT, text=True)


def _training(results: Path, run_id: str, case_id: str, rank: int) -> int | None:
    log = _node_dir(results, run_id, case_id) / f"rank{rank}.out.log"
    if log.exists() and "TRAIN_START" in log.read_text(errors="replace"):
        return rank_pid(run_id, rank)
    return None


def test_digits_converges_in_a_container_that_is_removed_afterwards(cpu_image, results: Path):
    run = run_docker(REPO, "run_case.yml", results, "run_dock", DIGITS_1X2)
    assert run.rc == 0, run.output[-3000:]
    record = round_record(results, "run_dock", "digits_cnn_CPUx1x2", 1)
    assert record["status"] == "success"
    assert record["metrics"]["converged"] is True and record["metrics"]["final_metric"] >= 0.95

    node = _node_dir(results, "run_dock", "digits_cnn_CPUx1x2")
    result = json.loads((node / "node_result.json").read_text())
    assert result["container"] == "perfplay-run_dock-digits_cnn_CPUx1x2-round1-n0"
    assert result["image"].startswith("perfplay-cpu-pytorch:")
    # The ranks ran the image's Python and torch, not the host's.
    submit = json.loads((node / "rank1.out.log").read_text().splitlines()[0].removeprefix("[PerfLog] "))
    assert submit["value"]["python"].startswith("/opt/perfplay-venv/bin/python")
    assert submit["value"]["torch"].endswith("+cpu")
    assert (node / "container_prepare.log").read_text().startswith("environment: no environment_variables.sh")
    # Files in the results belong to the login user, and nothing of the run is left.
    assert (node / "rank0.out.log").stat().st_uid == os.getuid()
    assert run_containers("run_dock") == []
    assert leftovers("run_dock") == []


def test_the_image_is_built_once_and_again_after_its_dockerfile_changes(cpu_image, results: Path, tmp_path: Path):
    again = run_docker(REPO, "playbooks/preflight.yml", results, "run_again", DIGITS_1X2)
    assert again.rc == 0, again.output[-3000:]
    assert again.task_statuses()[BUILD_TASK] == ["ok"], "an unchanged image was rebuilt"

    checkout = checkout_copy(tmp_path / "checkout")
    dockerfile = checkout / "vendor" / "cpu" / "docker_image" / "pytorch" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "LABEL perfplay.test=edited\n")
    before = image_tags("perfplay-cpu-pytorch")
    try:
        edited = run_docker(checkout, "playbooks/preflight.yml", results, "run_edit", DIGITS_1X2)
        assert edited.rc == 0, edited.output[-3000:]
        assert edited.task_statuses()[BUILD_TASK] == ["changed"]
        new = image_tags("perfplay-cpu-pytorch") - before
        assert len(new) == 1, "the edited Dockerfile gets its own tag"
        labels = docker.from_env().images.get(new.pop()).labels
        assert labels["perfplay.test"] == "edited"
        same = run_docker(checkout, "playbooks/preflight.yml", results, "run_edit2", DIGITS_1X2)
        assert same.task_statuses()[BUILD_TASK] == ["ok"]
    finally:
        for tag in image_tags("perfplay-cpu-pytorch") - before:
            docker.from_env().images.remove(tag)


def test_a_killed_rank_fails_the_round_and_its_container_is_removed(cpu_image, results: Path, tmp_path: Path):
    run = _start(results, "run_dkill", tmp_path / "run.log", LONG)
    try:
        pid = wait_for(lambda: _training(results, "run_dkill", "digits_cnn_CPUx1x2", 1), 180, "rank 1 training")
        assert run_containers("run_dkill") == ["perfplay-run_dkill-digits_cnn_CPUx1x2-round1-n0"]
        os.kill(pid, signal.SIGKILL)
        assert run.wait(timeout=120) != 0, "the play fails at the end: a round failed"
    finally:
        if run.poll() is None:
            run.kill()
    record = round_record(results, "run_dkill", "digits_cnn_CPUx1x2", 1)
    assert record["status"] == "failed"
    assert "rank 1 on localhost was killed by SIGKILL" in json.dumps(record)
    assert run_containers("run_dkill") == []
    assert leftovers("run_dkill") == []


def test_a_timeout_stops_the_round_and_its_container_is_removed(cpu_image, results: Path):
    run = run_docker(REPO, "run_case.yml", results, "run_dtime", LONG, perfplay_case_timeout_s=20)
    assert run.rc != 0
    record = round_record(results, "run_dtime", "digits_cnn_CPUx1x2", 1)
    assert record["status"] == "timeout"
    assert "case timeout of" in json.dumps(record)
    assert run_containers("run_dtime") == []
    assert leftovers("run_dtime") == []


def test_an_interrupted_controller_leaves_nothing_after_cleanup(cpu_image, results: Path, tmp_path: Path):
    run = _start(results, "run_dint", tmp_path / "run.log", LONG)
    try:
        wait_for(lambda: _training(results, "run_dint", "digits_cnn_CPUx1x2", 0), 180, "rank 0 training")
        run.send_signal(signal.SIGINT)
        run.wait(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    cleanup = run_playbook(REPO, "playbooks/cleanup.yml", "-e", "perfplay_run_id=run_dint",
                           "-e", f"perfplay_results_dir={results}")
    assert cleanup.rc == 0, cleanup.output[-3000:]
    assert "perfplay-run_dint-digits_cnn_CPUx1x2-round1-n0" in cleanup.output
    wait_for(lambda: not run_containers("run_dint") and not leftovers("run_dint"), 30, "nothing of the run left")


def test_bad_image_settings_are_rejected_before_any_host_is_touched(docker_engine, results: Path):
    run = run_playbook(REPO, "run_case.yml", "-e", f"perfplay_results_dir={results}", "-e", json.dumps(
        {"perfplay_runtime": "docker", "perfplay_image": {"base": "x"}, "perfplay_cases": [DIGITS_1X2]}))
    assert run.rc != 0
    assert "key 'perfplay_image.base': unknown image setting" in run.output
    assert "allowed: base_image, ca_bundle, pip_extra_index_url" in run.output
    assert not list(results.iterdir()), "a run directory was created"


def test_the_vendor_case_environment_requirements_and_csrc_are_set_up_in_the_container(cpu_image, results: Path,
                                                                                        tmp_path: Path):
    checkout = checkout_copy(tmp_path / "checkout")
    case_dir = checkout / "vendor" / "cpu" / "cases" / "digits_cnn"
    (case_dir / "environment_variables.sh").write_text("export PERFPLAY_PROBE=from-environment-file\n")
    (case_dir / "requirements.txt").write_text("PyYAML==6.0.3\n")  # in the image already: no pip
    (case_dir / "csrc" / "probe_ops").mkdir(parents=True)
    (case_dir / "csrc" / "probe_ops" / "__init__.py").write_text("VALUE = 42\n")
    # setup.py fails unless the environment file was sourced first, in the same container.
    (case_dir / "csrc" / "setup.py").write_text(
        "import os\nfrom setuptools import setup\n"
        "assert os.environ['PERFPLAY_PROBE'] == 'from-environment-file'\n"
        "setup(name='probe-ops', version='1.0', packages=['probe_ops'])\n")
    one = dict(DIGITS_1X2, nproc=1, repeat=2)
    run = run_docker(checkout, "run_case.yml", results, "run_dprep", one)
    assert run.rc == 0, run.output[-3000:]
    first = (_node_dir(results, "run_dprep", "digits_cnn_CPUx1x1", 1) / "container_prepare.log").read_text()
    assert f"environment: sourced {case_dir / 'environment_variables.sh'}" in first
    assert "requirements: vendor/cpu/cases/digits_cnn/requirements.txt already satisfied" in first
    assert "csrc: building setup.py" in first
    assert (results / "run_dprep" / "digits_cnn_CPUx1x1" / ".container-site" / "probe_ops" / "__init__.py").is_file()
    second = (_node_dir(results, "run_dprep", "digits_cnn_CPUx1x1", 2) / "container_prepare.log").read_text()
    assert "csrc: already built" in second, "the second round reuses the first round's build"
    assert run_containers("run_dprep") == []


def test_two_nodes_meet_across_two_containers(cpu_image, results: Path, tmp_path: Path):
    """Two inventory hosts on this machine, one container each: the rendezvous and gloo cross containers."""
    inventory = tmp_path / "two_nodes.yml"
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
             "perfplay_node_addr": "127.0.0.1", "perfplay_project_dir": "{{ playbook_dir | dirname }}",
             "perfplay_venv": "{{ ansible_playbook_python | dirname | dirname }}"}
    inventory.write_text(json.dumps({"all": {"children": {"perfplay_hosts": {
        "hosts": {"nodeA": {}, "nodeB": {}}, "vars": local}}}}))
    two = dict(DIGITS_1X2, nnodes=2, nproc=1)
    run = run_playbook(REPO, "run_case.yml", "-i", str(inventory), "-e", f"perfplay_results_dir={results}",
                       "-e", f"perfplay_run_id={remember('run_d2n2')}", "-e", docker_vars(two))
    assert run.rc == 0, run.output[-3000:]
    record = round_record(results, "run_d2n2", "digits_cnn_CPUx2x1", 1)
    assert record["status"] == "success" and record["metrics"]["converged"] is True
    names = set()
    for node, host in ((0, "nodeA"), (1, "nodeB")):
        doc = json.loads((results / "run_d2n2" / "digits_cnn_CPUx2x1" / "round1" / f"{host}_noderank{node}" /
                          "node_result.json").read_text())
        assert doc["status"] == "success"
        names.add(doc["container"])
    assert names == {"perfplay-run_d2n2-digits_cnn_CPUx2x1-round1-n0", "perfplay-run_d2n2-digits_cnn_CPUx2x1-round1-n1"}
    assert run_containers("run_d2n2") == []


def test_an_inference_case_runs_in_the_container_with_the_vendor_s_requirements(cpu_image, results: Path,
                                                                                 tmp_path: Path):
    """task: inference in a container; the vendor's <vendor>_requirements.txt replaces the standard case's."""
    checkout = checkout_copy(tmp_path / "checkout")
    (checkout / "case_runners" / "cases" / "digits_cnn" / "inference" / "requirements.txt").write_text(
        "perfplay-no-such-package==0.0.1\n")  # replaced by the vendor's file: never installed
    case_dir = checkout / "vendor" / "cpu" / "cases" / "digits_cnn"
    (case_dir / "cpu_requirements.txt").write_text("PyYAML==6.0.3\n")  # in the image already: no pip
    run = run_docker(checkout, "run_case.yml", results, "run_dinf", {"case": "digits_cnn", "task": "inference"})
    assert run.rc == 0, run.output[-3000:]
    record = round_record(results, "run_dinf", "digits_cnn_inference_CPUx1x1", 1)
    assert record["status"] == "success", record["reason"]
    metrics = record["metrics"]
    assert metrics["steps"] == ["a", "b", "c", "d", "e", "f", "g"]
    assert metrics["validation_accuracy"] >= 0.95 and metrics["inference_accuracy"] >= 0.95
    assert metrics["agreement"] >= 0.99
    node = _node_dir(results, "run_dinf", "digits_cnn_inference_CPUx1x1")
    prepare = (node / "container_prepare.log").read_text()
    assert "requirements: vendor/cpu/cases/digits_cnn/cpu_requirements.txt already satisfied" in prepare
    assert "perfplay-no-such-package" not in prepare
    submit = json.loads((node / "rank0.out.log").read_text().splitlines()[0].removeprefix("[PerfLog] "))
    assert submit["value"]["task"] == "inference" and submit["value"]["python"].startswith("/opt/perfplay-venv/")
    assert Path(metrics["onnx_path"]).is_file(), "the export is kept in the run directory on the host"
    assert run_containers("run_dinf") == []
    # That export, given by path from outside the checkout and the results: its folder (the model and its external
    # data) is mounted read-only, and step d (the export) is skipped.
    given = tmp_path / "given"
    given.mkdir()
    for path in Path(metrics["onnx_path"]).parent.glob("digits_cnn.onnx*"):
        shutil.copy(path, given)
    onnx = given / "digits_cnn.onnx"
    run = run_docker(checkout, "run_case.yml", results, "run_donnx",
                     {"case": "digits_cnn", "task": "inference", "overrides": {"exist_onnx_path": str(onnx)}})
    assert run.rc == 0, run.output[-3000:]
    record = round_record(results, "run_donnx", "digits_cnn_inference_CPUx1x1", 1)
    assert record["status"] == "success", record["reason"]
    assert record["metrics"]["onnx_path"] == str(onnx) and "d" not in record["metrics"]["steps"]
    assert run_containers("run_donnx") == []


def test_a_generate_round_loads_a_checkpoint_given_by_absolute_path_in_the_container(cpu_image, results: Path,
                                                                                    tmp_path: Path):
    """The checkpoint lies outside the results, data dir and checkout: the round's container mounts it read-only."""
    from case_runners.cases.llama.model import build_model, save_checkpoint  # noqa: PLC0415 - torch

    shape = {"model": "tiny", "vocab_size": 0}
    checkpoint = save_checkpoint(build_model(shape), tmp_path / "ckpt", shape)
    quick = {"batch_sizes": [1], "prompt_lens": [1], "output_lens": [1], "warmup": 0, "iterations": 1}
    run = run_docker(REPO, "run_case.yml", results, "run_dgen",
                     {"case": "llama", "task": "generate", "overrides": {"checkpoint": str(checkpoint), **quick}})
    assert run.rc == 0, run.output[-3000:]
    record = round_record(results, "run_dgen", "llama_generate_CPUx1x1", 1)
    assert record["status"] == "success", record["reason"]
    assert record["metrics"]["checkpoint"] == str(checkpoint)
    assert run_containers("run_dgen") == []
