"""Fixtures of the module tests: run a module in-process with a fake case_runners CLI."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ansible.module_utils import _internal, basic
from ansible.module_utils.testing import patch_module_args

sys.path.insert(0, str(Path(__file__).resolve().parent))  # module_harness, whatever pytest's import mode

from module_harness import AnsibleExitJson, AnsibleFailJson, FakeCli, exit_json, fail_json, load_module  # noqa: E402


@pytest.fixture
def run_module(monkeypatch) -> Callable[..., tuple[str, dict[str, Any], FakeCli]]:
    """run_module(name, args, answers=None, check_mode=False, patch=None) -> ("exit"|"fail", result, fake_cli).

    ``patch(module)`` may replace attributes of the freshly loaded module before it runs.
    """
    # As on a target: once a test has loaded controller plugins, module warnings would go to the display instead
    # of the result's "warnings" (get_warning_messages), and a test's outcome would depend on the order.
    monkeypatch.setattr(_internal, "is_controller", False)
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)

    def run(name: str, args: dict[str, Any], answers: dict[str, Any] | None = None, check_mode: bool = False,
            patch: Callable[[Any], None] | None = None):
        module = load_module(name)
        if patch:
            patch(module)
        cli = FakeCli(answers)
        monkeypatch.setattr(basic.AnsibleModule, "run_command", cli)
        module_args = dict(args, _ansible_check_mode=check_mode)
        with patch_module_args(module_args):
            try:
                module.main()
            except AnsibleExitJson as done:
                return "exit", done.args[0], cli
            except AnsibleFailJson as failed:
                return "fail", failed.args[0], cli
        raise AssertionError("the module returned without exit_json or fail_json")

    return run
