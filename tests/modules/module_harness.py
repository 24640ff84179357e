"""Harness for the modules in library/ (after ceph-ansible's tests/library/ca_test_common.py).

Modules are loaded from their files, exit_json/fail_json raise instead of exiting, and
AnsibleModule.run_command is replaced by a fake that answers per case_runners subcommand.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # the modules' fallback import: module_utils._perfplay_*
    sys.path.insert(0, str(REPO))


class AnsibleExitJson(Exception):
    """exit_json was called; args[0] is the result."""


class AnsibleFailJson(Exception):
    """fail_json was called; args[0] is the result."""


def exit_json(self, **kwargs):
    kwargs.setdefault("changed", False)
    raise AnsibleExitJson(kwargs)


def fail_json(self, msg, **kwargs):
    kwargs.update(msg=msg, failed=True)
    raise AnsibleFailJson(kwargs)


def load_module(name: str):
    """Import library/<name>.py under a private name (``monitor`` is too generic for sys.modules)."""
    spec = importlib.util.spec_from_file_location(f"perfplay_library_{name}", REPO / "library" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_action(name: str):
    """Import playbooks/action_plugins/<name>.py under a private name."""
    path = REPO / "playbooks" / "action_plugins" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"perfplay_action_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def module_ran(verbose_output: str, name: str) -> bool:
    """Whether ``ansible -vvv``'s output shows library/<name>.py run as a module: its "Using module file" line, which
    a pipelined run prints too (the AnsiballZ file name appears only without pipelining)."""
    return f"Using module file {REPO / 'library' / name}.py" in verbose_output


class FakeRun:
    """Stands in for subprocess.run in an action plugin: answers every call with (rc, stdout, stderr), a dict
    answer printed as JSON; every call is recorded in ``calls``."""

    def __init__(self, answer: Any, rc: int = 0, stderr: str = ""):
        self.answer = (rc, json.dumps(answer) if isinstance(answer, dict) else answer, stderr)
        self.calls: list[dict[str, Any]] = []

    def __call__(self, argv, **kwargs):
        assert isinstance(argv, list), "argv must be a list, never a shell string"
        self.calls.append(dict(kwargs, argv=argv))
        return subprocess.CompletedProcess(argv, *self.answer)


Answer = tuple[int, str, str]


class FakeCli:
    """Stands in for run_command: answers by subcommand (argv[3]).

    ``answers[key]`` is a tuple (rc, stdout, stderr), a dict (printed as JSON with rc 0), or a
    callable(argv) returning one of those. Every call is recorded in ``calls``.
    """

    def __init__(self, answers: dict[str, Any] | None = None):
        self.answers = answers or {}
        self.calls: list[dict[str, Any]] = []

    @staticmethod
    def key(argv: list[str]) -> str:
        return argv[3]

    def __call__(self, args, check_rc=False, cwd=None, environ_update=None, **kwargs) -> Answer:
        assert isinstance(args, list), "argv must be a list, never a shell string"
        self.calls.append({"argv": args, "cwd": cwd, "environ_update": environ_update, "data": kwargs.get("data")})
        answer = self.answers[self.key(args)]
        if callable(answer):
            answer = answer(args)
        if isinstance(answer, dict):
            return 0, json.dumps(answer), ""
        return answer

    def keys(self) -> list[str]:
        return [self.key(call["argv"]) for call in self.calls]
