"""A round record's environment (records/environment.py, records/environment_build.py): a real run's record names the
checkout's commit, rank 0's Python and torch, node 0's host and device; a record from before still loads; what cannot
be found is null, never a failed record."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import types
from pathlib import Path

import pytest

from case_runners.records.environment_build import build_environment, checkout_state
from case_runners.records.round import RoundRecord
from case_runners.records.schema import ABSENT
from case_runners.records.summary_build import summarize_run
from case_runners.vendors.runtime import VendorRuntime

REPO = Path(__file__).resolve().parents[2]


def git(*argv: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *argv], capture_output=True, text=True, check=True,
                          timeout=60).stdout


@pytest.fixture(scope="module")
def run_dir(digits_run) -> Path:
    """A real `case_runners run digits_cnn` of 5 steps, as a user makes it (shared: tests/conftest.py)."""
    return digits_run.run_dir


def test_a_real_round_records_its_environment(run_dir):
    (path,) = run_dir.glob("*/round1/round_record.json")
    record = RoundRecord.load(path)
    env = record.environment
    assert env is not ABSENT
    assert env.perfplay.commit == git("rev-parse", "HEAD").strip()
    assert env.perfplay.dirty is bool(git("status", "--porcelain").strip())
    assert env.python == platform.python_version()
    assert env.torch == importlib.metadata.version("torch")
    assert env.software == {}  # the cpu vendor's hook reports no stack of its own
    assert env.host is not None and env.host.cpu_model and env.host.logical_cpus and env.host.mem_total_bytes
    assert env.host.kernel == platform.release()
    assert env.devices == [env.host.cpu_model]  # the cpu vendor's monitor names the CPU
    assert json.loads(path.read_text())["versions"]["python"] == platform.python_version()
    # One rank of the cpu vendor: the host's cores, as the launcher's OMP_NUM_THREADS and torch both had it.
    assert env.threads is not ABSENT
    assert (env.threads.intra_op, env.threads.omp_num_threads) == (os.cpu_count(), str(os.cpu_count()))


def test_a_record_from_before_the_environment_still_loads_and_summarises(run_dir, tmp_path):
    old = tmp_path / run_dir.name
    subprocess.run(["cp", "-r", str(run_dir), str(old)], check=True, timeout=60)
    (path,) = old.glob("*/round1/round_record.json")
    doc = json.loads(path.read_text())
    del doc["environment"]
    for rank in doc["per_rank"]:
        del rank["threads"]  # a rank result from before perfplay kept its thread settings
    path.write_text(json.dumps(doc))
    record = RoundRecord.load(path)
    assert record.environment is ABSENT and "environment" not in record.to_json()
    assert summarize_run(old).cases[0].rounds[0]["status"] == record.status


def test_no_git_checkout_or_no_git_gives_nulls_not_a_failure(tmp_path, monkeypatch):
    state = checkout_state(tmp_path)
    assert (state.commit, state.dirty) == (None, None) and state.version
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on the PATH
    assert (checkout_state(REPO).commit, checkout_state(REPO).dirty) == (None, None)


def test_a_folder_inside_another_repository_is_not_taken_for_a_checkout():
    assert checkout_state(REPO / "docs").commit is None


def test_without_sys_info_files_host_and_devices_are_unknown(tmp_path):
    env = build_environment({"torch": "2.13.0", "python": "3.11.7", "cuda": "12.8"}, tmp_path, "nvidia")
    assert (env.host, env.devices) == (None, [])
    assert (env.python, env.torch, env.software) == ("3.11.7", "2.13.0", {"cuda": "12.8"})
    assert build_environment(None, None, "cpu").python is None  # rank 0 failed: no versions


def test_a_hand_edited_sys_info_value_of_the_wrong_type_is_null(tmp_path):
    (tmp_path / "sys_info.json").write_text(json.dumps({"hostname": "h", "logical_cpus": "many", "kernel": 6}))
    (tmp_path / "nvidia_sys_info.json").write_text(json.dumps({"devices": [{"name": "NVIDIA H100"}, "junk"]}))
    env = build_environment({}, tmp_path, "nvidia")
    assert env.host is not None and (env.host.hostname, env.host.logical_cpus, env.host.kernel) == ("h", None, None)
    assert env.devices == ["NVIDIA H100"]


def test_nvidia_versions_name_the_driver_and_the_cuda_it_supports(monkeypatch):
    nvml = types.ModuleType("pynvml")
    nvml.__dict__.update(nvmlInit=lambda: None, nvmlShutdown=lambda: None,
                         nvmlSystemGetDriverVersion=lambda: b"550.54.15", nvmlSystemGetCudaDriverVersion=lambda: 12040)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    found = VendorRuntime("nvidia", "cuda", "nccl").versions()
    assert found["driver"] == "550.54.15" and found["cuda_driver"] == "12.4"
    assert found["python"] == platform.python_version() and {"torch", "cuda", "cudnn"} <= set(found)

    def unsupported() -> int:
        raise RuntimeError("NVML_ERROR_FUNCTION_NOT_FOUND")
    nvml.nvmlSystemGetCudaDriverVersion = unsupported  # an old driver: that version unknown, the rest kept
    found = VendorRuntime("nvidia", "cuda", "nccl").versions()
    assert found["driver"] == "550.54.15" and found["cuda_driver"] == "unknown (RuntimeError)"
