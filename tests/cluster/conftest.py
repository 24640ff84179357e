"""Fixtures of the cluster tests: hosts.sh's namespace cluster, brought up once per size and login user.

Needs root (namespaces, sshd). Off CI a machine without root skips these tests; in CI (CI=true) that is a
failure, as is any missing package hosts.sh cannot install.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # cluster, whatever pytest's import mode

from cluster import Cluster, hosts_sh, stop_started  # noqa: E402
from process_helpers import require_root  # noqa: E402

_current: list[Cluster] = []


def _bring_up(size: int, user: str) -> Cluster:
    require_root("the cluster tests (network namespaces and sshd)")
    if _current and (_current[0].size, _current[0].user) == (size, user):
        return _current[0]
    hosts_sh("up", str(size), "--user", user)
    _current[:] = [Cluster(size, user)]
    return _current[0]


@pytest.fixture(scope="session", autouse=True)
def _cluster_down_at_the_end():
    yield
    if _current:
        hosts_sh("down")


@pytest.fixture(autouse=True)
def _no_playbook_left_running():
    yield
    stop_started()


@pytest.fixture
def cluster() -> Cluster:
    """Two hosts, logged into as root."""
    return _bring_up(2, "root")


@pytest.fixture
def user_cluster() -> Cluster:
    """Two hosts, logged into as the unprivileged user perfplay."""
    return _bring_up(2, "perfplay")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    path = tmp_path / "results"
    path.mkdir()
    return path
