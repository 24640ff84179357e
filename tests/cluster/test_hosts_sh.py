"""hosts.sh names each cluster by its checkout: two checkouts on one machine have two clusters (namespaces,
bridge, veths, subnet, state dir), and one going down leaves the other up."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from cluster import REPO
from process_helpers import require_root

FILES = ("tests/cluster/hosts.sh", "tests/cluster/ns_init.py", "tests/state_dir.sh", "requirements.txt",
         *(p.name for p in REPO.glob("requirements-*.txt")))  # same requirements: the same shared venv


def _checkout(root: Path) -> Path:
    for rel in FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)
    return root


def _hosts_sh(checkout: Path, *args: str) -> str:
    proc = subprocess.run(["bash", str(checkout / "tests/cluster/hosts.sh"), *args], capture_output=True,
                          text=True, timeout=900, check=False)
    assert proc.returncode == 0, f"hosts.sh {' '.join(args)} in {checkout}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _info(checkout: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in _hosts_sh(checkout, "info").splitlines())


def test_two_checkouts_run_two_clusters_that_leave_each_other_alone(tmp_path: Path):
    require_root("the cluster tests (network namespaces and sshd)")
    first, second = _checkout(tmp_path / "a"), _checkout(tmp_path / "b")
    names = [_info(first), _info(second)]
    for key in ("tag", "state", "net", "bridge", "netns_prefix"):
        assert names[0][key] != names[1][key], key
    try:
        _hosts_sh(first, "up", "1")
        _hosts_sh(second, "up", "1")  # before: took the first one down ("a cluster exists")
        for checkout in (first, second):
            assert _hosts_sh(checkout, "status").splitlines()[-1].split()[-1] == "up", checkout
        _hosts_sh(first, "down")
        assert _hosts_sh(second, "status").splitlines()[-1].split()[-1] == "up"
        netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30, check=True).stdout
        assert names[1]["netns_prefix"] + "1" in netns and names[0]["netns_prefix"] not in netns
    finally:
        for checkout in (first, second):
            _hosts_sh(checkout, "down", "--purge")
