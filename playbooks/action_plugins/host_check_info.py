# perfplay: the action of host_check_info (documented in library/host_check_info.py). A host that is the controller
# itself (a local connection as the controller's user, no become, no task environment) is checked from here: the
# same `case_runners host-check` the module runs, without a module process. Any other host runs the module.

from __future__ import annotations

import importlib.util
import os
import subprocess
from collections.abc import Callable
from typing import Any

from ansible.plugins.action import ActionBase


def _sibling(name: str) -> Any:
    """Another of perfplay's action plugins, loaded from its file beside this one."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    spec = importlib.util.spec_from_file_location("perfplay_action_" + name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CLI = _sibling("round_record").CLI  # module_utils/_perfplay_cli.py, as round_record loads it


def host_check(args: dict[str, Any],
               run: Callable[..., subprocess.CompletedProcess] = subprocess.run) -> dict[str, Any]:
    """The module's result for validated `args`, its command run here (read-only, so check mode runs it too)."""
    answer = CLI.host_check_without_venv(args)
    if answer is not None:
        return answer
    with CLI.host_check_command(args) as argv:
        done = run(argv, cwd=args["project_dir"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                   check=False)
    result = CLI.CliResult(argv, done.returncode, done.stdout, done.stderr)
    if result.doc is None or result.rc != 0:
        return dict(failed=True, changed=False, **result.failure("case_runners host-check"))
    answer, warnings = CLI.host_check_result(result.doc)
    return dict(answer, warnings=warnings) if warnings else answer


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        if not CLI.runs_on_the_controller(self._connection.transport, self._play_context.become,
                                          self._task.environment):
            result.update(self._execute_module(module_name="host_check_info", module_args=self._task.args,
                                               task_vars=task_vars))
            return result
        _, args = self.validate_argument_spec(argument_spec=CLI.HOST_CHECK_ARGUMENT_SPEC)
        result.update(host_check(args))
        return result
