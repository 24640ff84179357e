"""library/case_launch.py, case_wait.py and case_finish.py: the module runs of a node's round (start in the
background with the first poll, long polls, finish), their argv, what they return and when they fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from module_harness import REPO

ARGS = {"project_dir": "/repo", "python": "/venv/bin/python", "config": "/run/c/resolved_config.json",
        "log_dir": "/run/c/round1/localhost_noderank0", "run_id": "run1", "timeout_s": 60}
LAUNCHER = {"pid": 4242, "start": 81234567, "pidns": 4026531836, "started_at": 1795376237.0}
STARTED = {"started": True, "launcher": LAUNCHER, "log": "/run/c/round1/localhost_noderank0/launcher.log",
           "reason": None}
SUCCESS = {"schema": "perfplay.node_result/1", "node_rank": 0, "status": "success", "reason": None,
           "ranks": {"0": {"exit_code": 0, "log": "rank0.out.log"}}, "duration_s": 1.5, "host": "h"}
WAIT = {"project_dir": "/repo", "python": "/venv/bin/python", "log_dir": "/run/c/round1/localhost_noderank0",
        "run_id": "run1", "launcher": LAUNCHER, "timeout_s": 60, "for_s": 30}


def ended(node_result):
    return {"finished": True, "status": node_result["status"], "reason": node_result["reason"],
            "node_result": node_result}


# -- case_launch: start --------------------------------------------------------------------------------------------

def test_missing_args(run_module):
    kind, result, cli = run_module("case_launch", {"project_dir": "/repo"})
    assert kind == "fail"
    assert "missing required arguments: config, log_dir, run_id" in result["msg"]
    assert cli.calls == []


def test_bad_type(run_module):
    kind, result, _ = run_module("case_launch", dict(ARGS, node_rank="first"))
    assert kind == "fail"
    assert "node_rank" in result["msg"]


def test_starts_the_launcher_in_the_background_and_returns_its_identity(run_module):
    kind, result, cli = run_module("case_launch", dict(ARGS, env={"NCCL_SOCKET_IFNAME": "ib0"}), {"launch": STARTED})
    assert kind == "exit"
    assert result["changed"] is True and result["started"] is True
    assert result["launcher"] == LAUNCHER
    (call,) = cli.calls
    assert call["argv"] == [
        "/venv/bin/python", "-m", "case_runners", "launch", "--config", "/run/c/resolved_config.json",
        "--log-dir", "/run/c/round1/localhost_noderank0", "--node-rank", "0", "--master-addr", "127.0.0.1",
        "--master-port", "0", "--timeout-s", "60.0", "--run-id", "run1", "--detach"]
    assert call["cwd"] == "/repo" and call["data"] is None
    assert call["environ_update"] == {"NCCL_SOCKET_IFNAME": "ib0"}


def test_with_wait_s_the_launch_returns_the_first_poll_as_case_wait_would(run_module):
    """The poll the launch makes (wait_s) comes back as case_wait's own result for the same answer, failed node
    included, which case_wait's first_poll then fails on; the launch task itself does not fail."""
    timeout = dict(SUCCESS, status="timeout", reason="no exit within 60 s")
    for answer in (ended(SUCCESS), ended(timeout)):
        kind, result, cli = run_module("case_launch", dict(ARGS, wait_s=30), {"launch": dict(STARTED, wait=answer)})
        assert kind == "exit" and result["started"] is True
        assert cli.calls[0]["argv"][-3:] == ["--detach", "--wait-s", "30.0"]
        _, waited, _ = run_module("case_wait", WAIT, {"wait": answer})
        assert result["wait"] == {k: v for k, v in waited.items() if k not in ("invocation", "cmd")}
    assert result["wait"]["failed"] is True and result["wait"]["msg"] == "node 0: timeout: no exit within 60 s"


def test_check_mode_launches_nothing(run_module):
    kind, result, cli = run_module("case_launch", ARGS, check_mode=True)
    assert kind == "exit"
    assert result["changed"] is True and result["launcher"] is None
    assert cli.calls == []


def test_a_remote_host_is_given_the_config_on_the_launch_s_stdin(run_module):
    """launch --config-stdin checks it and writes it (tests/unit/test_background_launch.py); the module writes
    nothing itself."""
    content = {"schema": "perfplay.resolved_config/1", "case": "digits_cnn"}
    kind, result, cli = run_module("case_launch", dict(ARGS, config_content=content), {"launch": STARTED})
    assert kind == "exit" and result["changed"] is True
    (call,) = cli.calls
    assert call["argv"][-3:] == ["run1", "--detach", "--config-stdin"]
    assert json.loads(call["data"]) == content


def test_a_config_the_launch_refuses_fails_the_task(run_module):
    refused = (2, "", "error: --config-stdin: key 'nproc': expected an integer, got \"two\"")
    kind, result, _ = run_module("case_launch", dict(ARGS, config_content={"nproc": "two"}), {"launch": refused})
    assert kind == "fail" and "without a JSON document" in result["msg"]
    assert result["stderr"] == refused[2]


def test_a_launcher_that_did_not_start_fails_the_task(run_module):
    kind, result, _ = run_module("case_launch", ARGS, {"launch": dict(STARTED, started=False, launcher=None,
                                                                      reason="the launcher exited at once")})
    assert kind == "fail"
    assert result["msg"] == "node 0: the launcher exited at once"


def test_no_answer_at_all(run_module):
    kind, result, _ = run_module("case_launch", ARGS, {"launch": (2, "", "error: key '--run-id': bad")})
    assert kind == "fail"
    assert "without a JSON document" in result["msg"]
    assert result["stderr"] == "error: key '--run-id': bad"


def test_multi_node_options_reach_the_launcher(run_module):
    args = dict(ARGS, node_rank=1, master_addr="10.231.77.11", master_port=29500, node_name="node2", nic="ib0",
                rdzv_timeout_s=60, heartbeat_timeout_s=5, monitors=False, monitor_interval_s=0.5)
    kind, _, cli = run_module("case_launch", args, {"launch": STARTED})
    assert kind == "exit"
    (call,) = cli.calls
    assert call["argv"][call["argv"].index("--node-rank"):] == [
        "--node-rank", "1", "--master-addr", "10.231.77.11", "--master-port", "29500", "--timeout-s", "60.0",
        "--run-id", "run1", "--node-name", "node2", "--nic", "ib0", "--rdzv-timeout-s", "60.0",
        "--heartbeat-timeout-s", "5.0", "--no-monitors", "--monitor-interval-s", "0.5", "--detach"]


def test_an_empty_nic_or_node_name_is_left_to_the_launcher(run_module):
    kind, _, cli = run_module("case_launch", dict(ARGS, nic="", node_name=""), {"launch": STARTED})
    assert kind == "exit"
    (call,) = cli.calls
    left_out = {"--nic", "--node-name", "--rdzv-timeout-s", "--heartbeat-timeout-s", "--monitor-interval-s"}
    assert not left_out & set(call["argv"]), "case_runners applies the defaults"


# -- case_wait: one long poll ------------------------------------------------------------------------------------

def test_a_poll_of_a_running_node_reports_progress_and_changes_nothing(run_module):
    running = {"finished": False, "status": "running", "reason": None, "node_result": None,
               "progress": {"phase": "training", "step": 120}, "line": "training: step 120; 45 s of 60 s"}
    kind, result, cli = run_module("case_wait", WAIT, {"wait": running})
    assert kind == "exit"
    assert result["changed"] is False and result["finished"] is False
    assert result["line"] == "training: step 120; 45 s of 60 s"
    (call,) = cli.calls
    assert call["argv"] == [
        "/venv/bin/python", "-m", "case_runners", "wait", "--log-dir", "/run/c/round1/localhost_noderank0",
        "--run-id", "run1", "--launcher", json.dumps(LAUNCHER), "--timeout-s", "60.0", "--for-s", "30.0"]


def test_a_poll_without_for_s_takes_case_runners_default_and_reports_it(run_module):
    running = {"finished": False, "status": "running", "reason": None, "node_result": None, "for_s": 30.0,
               "progress": {"phase": "training"}, "line": "training"}
    kind, result, cli = run_module("case_wait", {k: v for k, v in WAIT.items() if k != "for_s"}, {"wait": running})
    assert kind == "exit" and result["for_s"] == 30.0
    assert "--for-s" not in cli.calls[0]["argv"]


def test_a_node_that_succeeded_ends_the_wait(run_module):
    kind, result, _ = run_module("case_wait", WAIT, {"wait": ended(SUCCESS)})
    assert kind == "exit"
    assert result["finished"] is True and result["node_result"] == SUCCESS


def test_a_wait_with_inline_archive_asks_for_the_directory_and_returns_it(run_module):
    kind, result, cli = run_module("case_wait", dict(WAIT, inline_archive=1024),
                                   {"wait": {**ended(SUCCESS), "archive_b64": "H4sI"}})
    assert kind == "exit" and result["archive_b64"] == "H4sI"
    assert cli.calls[0]["argv"][-2:] == ["--inline-archive", "1024"]


def test_a_failed_node_fails_the_wait_and_keeps_its_result(run_module):
    timeout = dict(SUCCESS, status="timeout", reason="no exit within 60 s")
    kind, result, _ = run_module("case_wait", WAIT, {"wait": ended(timeout)})
    assert kind == "fail"
    assert result["msg"] == "node 0: timeout: no exit within 60 s"
    assert result["node_result"] == timeout


def test_a_stopped_node_fails_with_the_root_cause(run_module):
    stopped = dict(SUCCESS, status="failed",
                   reason="stopped: node 1 (node2) failed: rank 1 on node2 was killed by SIGKILL")
    kind, result, _ = run_module("case_wait", WAIT, {"wait": ended(stopped)})
    assert kind == "fail"
    assert result["msg"] == "node 0: failed: stopped: node 1 (node2) failed: rank 1 on node2 was killed by SIGKILL"


# -- case_finish -------------------------------------------------------------------------------------------------

FINISH = {"project_dir": "/repo", "python": "/venv/bin/python", "log_dir": "/run/c/round1/h_noderank0",
          "run_id": "run1", "launcher": LAUNCHER}


def finished(cleanup=None, archive=None):
    return {**ended(SUCCESS), "cleanup": cleanup, "archive": archive}


def test_finish_after_a_clean_end_changes_nothing(run_module):
    kind, result, cli = run_module("case_finish", FINISH, {"finish": finished()})
    assert kind == "exit" and result["changed"] is False
    (call,) = cli.calls
    assert call["argv"] == [
        "/venv/bin/python", "-m", "case_runners", "finish", "--log-dir", "/run/c/round1/h_noderank0",
        "--run-id", "run1", "--launcher", json.dumps(LAUNCHER)]


def test_finish_that_stopped_leftovers_or_packed_the_directory_is_a_change(run_module):
    kind, result, _ = run_module("case_finish", FINISH, {"finish": finished(cleanup={"terminated": [7]})})
    assert kind == "exit" and result["changed"] is True
    args = dict(FINISH, archive="/tmp/x/node.tar.gz", containers=True, round="c/round1")
    kind, result, cli = run_module("case_finish", args,
                                   {"finish": finished(archive={"path": "/tmp/x/node.tar.gz", "bytes": 10})})
    assert kind == "exit" and result["changed"] is True
    argv = cli.calls[0]["argv"]
    assert argv[argv.index("--containers"):] == ["--containers", "--round", "c/round1", "--archive",
                                                 "/tmp/x/node.tar.gz"]


def test_finish_without_a_launcher_leaves_the_flag_out(run_module):
    kind, _, cli = run_module("case_finish", {k: v for k, v in FINISH.items() if k != "launcher"},
                              {"finish": finished()})
    assert kind == "exit" and "--launcher" not in cli.calls[0]["argv"]


# -- case_wait's action: the launch's first poll ------------------------------------------------------------------

def wait_through_ansible(log_dir, first_poll):
    """case_wait run by Ansible for real (its action plugin), on a launcher that is long gone: a poll of its own
    finds no node result in the empty log_dir and fails."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    args = {"project_dir": str(REPO), "python": sys.executable, "log_dir": str(log_dir), "run_id": "run1abcd",
            "launcher": {"pid": 1, "start": 1, "pidns": None}, "label": "node 0", "first_poll": first_poll}
    done = subprocess.run([str(Path(sys.executable).parent / "ansible"), "localhost", "-m", "case_wait",
                           "-a", json.dumps(args)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    return done, json.loads(done.stdout[done.stdout.index("=> {") + 3:])


def test_the_wait_takes_the_launch_s_first_poll_for_its_own(tmp_path):
    ended_ok = dict(ended(SUCCESS), changed=False)
    done, result = wait_through_ansible(tmp_path, ended_ok)
    assert done.returncode == 0, done.stdout + done.stderr
    assert result["status"] == "success" and result["polls"] == 1, "the launch's poll, and no poll of its own"

    running = {"changed": False, "finished": False, "status": "running", "reason": None, "node_result": None,
               "line": "training: step 3", "for_s": 30.0}
    done, result = wait_through_ansible(tmp_path, running)
    assert "  node 0: training: step 3" in done.stdout, "the first poll's progress line"
    assert result["polls"] == 2 and result["reason"] == "the launcher ended without writing node_result.json"
