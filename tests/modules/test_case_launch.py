"""library/case_launch.py: the launcher's argv, node result returned, failed unless success."""

from __future__ import annotations

import json

ARGS = {"project_dir": "/repo", "python": "/venv/bin/python", "config": "/run/c/resolved_config.json",
        "log_dir": "/run/c/round1/localhost_noderank0", "run_id": "run1", "timeout": 60}
SUCCESS = {"schema": "perfplay.node_result/1", "node_rank": 0, "status": "success", "reason": None,
           "ranks": {"0": {"exit_code": 0, "log": "rank0.out.log"}}, "duration_s": 1.5, "host": "h"}


def test_missing_args(run_module):
    kind, result, cli = run_module("case_launch", {"project_dir": "/repo"})
    assert kind == "fail"
    assert "missing required arguments: config, log_dir, run_id" in result["msg"]
    assert cli.calls == []


def test_bad_type(run_module):
    kind, result, _ = run_module("case_launch", dict(ARGS, node_rank="first"))
    assert kind == "fail"
    assert "node_rank" in result["msg"]


def test_launches_with_the_documented_argv(run_module):
    kind, result, cli = run_module("case_launch", dict(ARGS, env={"NCCL_SOCKET_IFNAME": "ib0"}),
                                   {"launch": SUCCESS})
    assert kind == "exit"
    assert result["changed"] is True
    assert result["status"] == "success"
    assert result["node_result"] == SUCCESS
    (call,) = cli.calls
    assert call["argv"] == [
        "/venv/bin/python", "-m", "case_runners", "launch", "--config", "/run/c/resolved_config.json",
        "--log-dir", "/run/c/round1/localhost_noderank0", "--node-rank", "0", "--master-addr", "127.0.0.1",
        "--master-port", "0", "--timeout", "60.0", "--run-id", "run1", "--monitor-interval", "1.0"]
    assert call["cwd"] == "/repo"
    assert call["environ_update"] == {"NCCL_SOCKET_IFNAME": "ib0"}


def test_check_mode_launches_nothing(run_module):
    kind, result, cli = run_module("case_launch", ARGS, check_mode=True)
    assert kind == "exit"
    assert result["changed"] is True
    assert cli.calls == []


def test_a_failed_node_fails_the_task_and_keeps_its_result(run_module):
    timeout = dict(SUCCESS, status="timeout", reason="no exit within 60 s")
    kind, result, _ = run_module("case_launch", ARGS, {"launch": (124, json.dumps(timeout), "")})
    assert kind == "fail"
    assert result["msg"] == "node 0: timeout: no exit within 60 s"
    assert result["node_result"] == timeout
    assert result["rc"] == 124


def test_falls_back_on_node_result_json(run_module, tmp_path):
    (tmp_path / "node_result.json").write_text(json.dumps(SUCCESS))
    kind, result, _ = run_module("case_launch", dict(ARGS, log_dir=str(tmp_path)), {"launch": (0, "noise", "")})
    assert kind == "exit"
    assert result["status"] == "success"


def test_no_result_at_all(run_module, tmp_path):
    kind, result, _ = run_module("case_launch", dict(ARGS, log_dir=str(tmp_path)), {"launch": (1, "", "boom")})
    assert kind == "fail"
    assert result["status"] == "failed"
    assert "without a JSON document" in result["msg"]
    assert result["stderr"] == "boom"


def test_multi_node_options_reach_the_launcher(run_module):
    args = dict(ARGS, node_rank=1, master_addr="10.231.77.11", master_port=29500, node_name="node2", nic="ib0",
                rdzv_timeout=60, heartbeat_timeout=5)
    kind, _, cli = run_module("case_launch", args, {"launch": dict(SUCCESS, node_rank=1)})
    assert kind == "exit"
    (call,) = cli.calls
    assert call["argv"] == [
        "/venv/bin/python", "-m", "case_runners", "launch", "--config", "/run/c/resolved_config.json",
        "--log-dir", "/run/c/round1/localhost_noderank0", "--node-rank", "1", "--master-addr", "10.231.77.11",
        "--master-port", "29500", "--timeout", "60.0", "--run-id", "run1", "--node-name", "node2", "--nic", "ib0",
        "--rdzv-timeout", "60.0", "--heartbeat-timeout", "5.0", "--monitor-interval", "1.0"]


def test_monitors_and_the_async_job_reach_the_launcher(run_module):
    """Under Ansible's async the launcher is told where the job file is and who writes it, so that a cleanup
    can remove it when the controller did not live to."""
    def as_async_job(module):
        module.ansible_async_job = lambda: {"dir": "/home/u/.ansible_async", "writer": 4242}

    args = dict(ARGS, monitors=False, monitor_interval=0.5)
    kind, _, cli = run_module("case_launch", args, {"launch": SUCCESS}, patch=as_async_job)
    assert kind == "exit"
    argv = cli.calls[0]["argv"]
    assert argv[argv.index("--run-id"):] == [
        "--run-id", "run1", "--no-monitors", "--monitor-interval", "0.5",
        "--ansible-async-dir", "/home/u/.ansible_async", "--ansible-job-writer", "4242"]


def test_an_empty_nic_or_node_name_is_left_to_the_launcher(run_module):
    kind, _, cli = run_module("case_launch", dict(ARGS, nic="", node_name=""), {"launch": SUCCESS})
    assert kind == "exit"
    (call,) = cli.calls
    assert not {"--nic", "--node-name", "--rdzv-timeout", "--heartbeat-timeout"} & set(call["argv"])


def test_a_stopped_node_fails_with_the_root_cause(run_module):
    stopped = dict(SUCCESS, status="failed", node_rank=0,
                   reason="stopped: node 1 (node2) failed: rank 1 on node2 was killed by SIGKILL")
    kind, result, _ = run_module("case_launch", ARGS, {"launch": (1, json.dumps(stopped), "")})
    assert kind == "fail"
    assert result["msg"] == "node 0: failed: stopped: node 1 (node2) failed: rank 1 on node2 was killed by SIGKILL"
