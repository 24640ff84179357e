"""host_check_info's action (playbooks/action_plugins/host_check_info.py): a host that is the controller itself is
checked from the controller's worker with the module's own request, argv and result, without a module process; any
other host (ssh, become, a task environment) runs the module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from module_harness import REPO, FakeRun, load_action, module_ran
from test_info_modules import COMMON, CONFIG, HOST_CHECK

FULL = {"vendor": "cpu", "nproc": 0, "device_count": None, "cases": [], "master_port": None, "master_addr": "",
        "results_dir": None, "min_free_bytes": 0, "nic": "", "requirements": [], **COMMON}


class ReadRequest(FakeRun):
    """A FakeRun that also keeps the request file's content, which is gone once the check returns."""

    def __init__(self, answer, **kwargs):
        super().__init__(answer, **kwargs)
        self.requests: list[dict] = []

    def __call__(self, argv, **kwargs):
        with open(argv[argv.index("--request") + 1]) as handle:
            self.requests.append(json.load(handle))
        return super().__call__(argv, **kwargs)


def test_the_controller_is_checked_with_the_module_s_request_and_result():
    run = ReadRequest(dict(HOST_CHECK, warnings=["no NIC named ib0"]))
    args = dict(FULL, nproc=2, cases=[CONFIG], master_port=0, master_addr="10.0.0.1", nic="ib0")
    result = load_action("host_check_info").host_check(args, run)
    assert (result["changed"], result["ok"], result["master_port"]) == (False, True, 41234)
    assert result["warnings"] == ["node1: no NIC named ib0"]
    (call,) = run.calls
    assert call["argv"][:4] == ["/venv/bin/python", "-m", "case_runners", "host-check"]
    assert call["cwd"] == "/repo" and call["stdin"] == subprocess.DEVNULL
    assert run.requests == [{key: args[key] for key in ("vendor", "nproc", "device_count", "cases", "master_port",
                                                        "master_addr", "results_dir", "min_free_bytes", "nic",
                                                        "requirements")}]
    assert not os.path.exists(call["argv"][call["argv"].index("--request") + 1])


def test_a_refused_check_fails_as_the_module_does():
    run = FakeRun("", rc=2, stderr="error: key 'vendor': unknown vendor 'acme' (allowed: cpu, nvidia)\n")
    result = load_action("host_check_info").host_check(dict(FULL, vendor="acme"), run)
    assert result["failed"] is True and "unknown vendor 'acme'" in result["msg"]


def test_without_a_venv_every_requirement_is_unmet_and_nothing_runs(tmp_path):
    run = FakeRun("{}")
    args = dict(FULL, python=str(tmp_path / "venv/bin/python"), requirements=["requirements.txt", "requirements.txt"])
    result = load_action("host_check_info").host_check(args, run)
    assert (result["ok"], result["unmet"], result["checked"]) == (False, ["requirements.txt"], False)
    assert run.calls == []


def _ansible(host_args: list[str], tmp_path) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path))
    args = dict(python=sys.executable, project_dir=str(REPO), vendor="cpu", nproc=1)
    return subprocess.run([str(Path(sys.executable).parent / "ansible"), *host_args, "-m", "host_check_info",
                           "-vvv", "-a", json.dumps(args)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_through_ansible_the_controller_checks_itself_without_a_module_and_become_ships_it(tmp_path):
    """Through Ansible for real: localhost's check answers from the action, with no module shipped; the same task as
    another user ships and runs the module."""
    here = _ansible(["localhost"], tmp_path)
    assert here.returncode == 0, here.stdout + here.stderr
    assert not module_ran(here.stdout + here.stderr, "host_check_info"), here.stdout
    assert '"ok": true' in here.stdout and '"source": "discovered"' in here.stdout
    there = _ansible(["localhost", "-b", "--become-method", "su", "--become-user", "root"], tmp_path)
    assert module_ran(there.stdout + there.stderr, "host_check_info"), there.stdout + there.stderr
