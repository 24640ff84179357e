# perfplay: the action round_record (documented in library/round_record.py). A round's record is the controller's
# work: this runs `python -m case_runners record` on the controller itself, without a module process per round.

from __future__ import annotations

import importlib.util
import os
import subprocess
from collections.abc import Callable
from typing import Any

from ansible.plugins.action import ActionBase


def _load_cli() -> Any:
    """module_utils/_perfplay_cli.py (stdlib only): the argv and the answer of a subcommand, as the modules build
    and read them."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "module_utils",
                        "_perfplay_cli.py")
    spec = importlib.util.spec_from_file_location("perfplay_cli_helpers", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CLI = _load_cli()

ARGUMENT_SPEC = dict(
    CLI.COMMON_ARGUMENT_SPEC,
    round_dir=dict(type="path", required=True),
    config=dict(type="path", required=True),
    round=dict(type="int", required=True),
    run_id=dict(type="str"),
    errors=dict(type="list", elements="str", default=[]),
)


def record(args: dict[str, Any], check_mode: bool,
           run: Callable[..., subprocess.CompletedProcess] = subprocess.run) -> dict[str, Any]:
    """The task result: the record and its digest, as `case_runners record` prints them."""
    argv = CLI.cli_argv(args["python"], "record", round_dir=args["round_dir"], config=args["config"],
                        round=args["round"], run_id=args["run_id"], error=args["errors"])
    if check_mode:
        return dict(changed=True, record={}, compact={}, cmd=argv)
    done = run(argv, cwd=args["project_dir"], capture_output=True, text=True, check=False)
    answer = CLI.CliResult(argv, done.returncode, done.stdout, done.stderr)
    if answer.doc is None or answer.rc != 0:
        return dict(failed=True, changed=False, **answer.failure("case_runners record"))
    return dict(changed=True, record=answer.doc.get("record"), compact=answer.doc.get("compact"))


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False
    _requires_connection = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        result.update(record(args, self._task.check_mode))
        return result
