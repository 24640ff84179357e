"""case_launch's action (playbooks/action_plugins/case_launch.py): a node on the controller itself is launched from
the controller's worker with the module's own argv, input and result, without a module process; any other host
(ssh, become, a task environment) runs the module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from module_harness import REPO, FakeRun, load_action, module_ran
from test_case_launch import ARGS, LAUNCHER, STARTED, SUCCESS, ended

FULL = {"config_content": None, "node_rank": 0, "master_addr": "127.0.0.1", "master_port": 0, "node_name": None,
        "nic": None, "rdzv_timeout_s": None, "heartbeat_timeout_s": None, "monitors": True,
        "monitor_interval_s": None, "env": {}, "wait_s": None, **ARGS}


def test_a_local_node_is_launched_with_the_module_s_argv_env_and_stdin():
    run = FakeRun(dict(STARTED, wait=ended(SUCCESS)))
    content = {"schema": "perfplay.resolved_config/1", "case": "digits_cnn"}
    args = dict(FULL, env={"NCCL_SOCKET_IFNAME": "ib0"}, wait_s=30.0, config_content=content)
    result = load_action("case_launch").launch(args, False, run)
    assert result["changed"] is True and result["started"] is True and result["launcher"] == LAUNCHER
    assert result["wait"]["finished"] is True and result["wait"]["status"] == "success"
    (call,) = run.calls
    assert call["argv"] == [
        "/venv/bin/python", "-m", "case_runners", "launch", "--config", "/run/c/resolved_config.json",
        "--log-dir", "/run/c/round1/localhost_noderank0", "--node-rank", "0", "--master-addr", "127.0.0.1",
        "--master-port", "0", "--timeout-s", "60", "--run-id", "run1", "--detach", "--config-stdin", "--wait-s",
        "30.0"]
    assert call["cwd"] == "/repo" and json.loads(call["input"]) == content
    assert call["env"]["NCCL_SOCKET_IFNAME"] == "ib0" and "PATH" in call["env"]


def test_a_local_launch_fails_as_the_module_does():
    plugin = load_action("case_launch")
    refused = plugin.launch(FULL, False, FakeRun("", rc=2, stderr="error: --config: no such file"))
    assert refused["failed"] is True and "without a JSON document" in refused["msg"]
    assert "no such file" in refused["msg"]
    not_started = plugin.launch(FULL, False, FakeRun(dict(STARTED, started=False, launcher=None,
                                                          reason="the launcher exited at once")))
    assert not_started["failed"] is True and not_started["msg"] == "node 0: the launcher exited at once"


def test_check_mode_launches_nothing_here_either():
    run = FakeRun("{}")
    result = load_action("case_launch").launch(FULL, True, run)
    assert result["changed"] is True and result["launcher"] is None and run.calls == []


@pytest.mark.parametrize("transport, become, environment, here", [
    ("local", False, None, True),
    ("ansible.builtin.local", False, [], True),
    ("local", False, [{}], True),  # what Ansible passes when no level sets an environment
    ("ssh", False, None, False),
    ("local", True, None, False),  # another user
    ("local", False, [{"HTTP_PROXY": "http://proxy:3128"}], False),  # the module would run with it
    ("community.docker.docker", False, None, False),
])
def test_only_a_node_on_the_controller_as_its_user_skips_the_module(transport, become, environment, here):
    plugin = load_action("case_launch").ActionModule
    action = plugin.__new__(plugin)
    action._connection = SimpleNamespace(transport=transport)
    action._play_context = SimpleNamespace(become=become)
    action._task = SimpleNamespace(environment=environment)
    assert action._on_the_controller() is here


def _ansible(host_args: list[str], task_args: dict, tmp_path) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path))
    return subprocess.run([str(Path(sys.executable).parent / "ansible"), *host_args, "-m", "case_launch", "--check",
                           "-vvv", "-a", json.dumps(task_args)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_through_ansible_the_controller_launches_without_a_module_and_another_host_gets_the_module(tmp_path):
    """Through Ansible for real, in check mode: localhost (a local connection) gets the launch's argv from the
    action with no module shipped; the same task on a host reached otherwise ships and runs the module."""
    args = dict(ARGS, python=sys.executable, project_dir=str(REPO))
    here = _ansible(["localhost"], args, tmp_path)
    assert here.returncode == 0, here.stdout + here.stderr
    assert not module_ran(here.stdout + here.stderr, "case_launch"), here.stdout
    assert '"--detach"' in here.stdout
    # become is the same machine as another user: the module's way, shipped and run
    there = _ansible(["localhost", "-b", "--become-method", "su", "--become-user", "root"], args, tmp_path)
    assert module_ran(there.stdout + there.stderr, "case_launch"), there.stdout + there.stderr
