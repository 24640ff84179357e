"""The cluster logged into as an unprivileged user: no root is needed to run a multi-host case."""

from __future__ import annotations

import pwd
from pathlib import Path

from cluster import Cluster, cases_arg, leftovers, round_record, run_on

DIGITS = {"case": "digits_cnn", "hardware": "CPU", "repeat": 1}


def test_an_unprivileged_login_runs_a_two_host_case(user_cluster: Cluster, results: Path):
    run = run_on(user_cluster, results, "run_user", "-e", cases_arg(dict(DIGITS, nnodes=2, nproc=1)))
    assert run.rc == 0, run.output[-5000:]
    assert round_record(results, "run_user", "digits_cnn_CPUx2x1", 1)["status"] == "success"
    node_dir = user_cluster.host_results("node2") / "run_user" / "digits_cnn_CPUx2x1" / "round1" / "node2_noderank1"
    assert node_dir.stat().st_uid == pwd.getpwnam("perfplay").pw_uid
    assert leftovers("run_user") == []
