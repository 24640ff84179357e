"""Fixtures of the docker tests: a real Docker engine (engine.sh starts dockerd, imports a debootstrapped
base image) and the cpu vendor's PyTorch image built through the playbook once per session.

Needs root. Off CI a machine without root skips these tests; in CI (CI=true) that is a failure, as is a
missing package engine.sh cannot install.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # docker_env, whatever pytest's import mode

from docker_env import REPO, engine, forget_runs, run_docker  # noqa: E402
from process_helpers import require_root  # noqa: E402

DIGITS_1X2 = {"case": "digits_cnn", "hardware": "CPU", "nnodes": 1, "nproc": 2, "repeat": 1}


@pytest.fixture(scope="session")
def docker_engine():
    require_root("the docker tests (dockerd, debootstrap)")
    engine("up")
    yield
    engine("down")


@pytest.fixture(autouse=True)
def _nothing_of_the_test_left():
    yield
    if os.geteuid() == 0:
        forget_runs()


@pytest.fixture(scope="session")
def cpu_image(docker_engine, tmp_path_factory) -> None:
    """The preflight builds the image unless its tag is there (about 80 s on a fresh engine)."""
    results = tmp_path_factory.mktemp("image-results")
    run = run_docker(REPO, "playbooks/preflight.yml", results, "run_image", DIGITS_1X2, timeout=1200)
    assert run.rc == 0, run.output[-3000:]


@pytest.fixture
def results(tmp_path: Path) -> Path:
    path = tmp_path / "results"
    path.mkdir()
    return path
