# perfplay: the action of case_launch (documented in library/case_launch.py). A node on the controller itself (a
# local connection as the controller's user, no become, no task environment) is launched from here: the same
# `case_runners launch --detach` the module runs, without a module process, so that a round there costs no module
# run at all. Any other host runs the module.

from __future__ import annotations

import importlib.util
import os
import subprocess
from collections.abc import Callable
from typing import Any

from ansible.plugins.action import ActionBase


def _load_cli() -> Any:
    """module_utils/_perfplay_cli.py (stdlib only): the launch's argv, input and result, as the module has them."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "module_utils",
                        "_perfplay_cli.py")
    spec = importlib.util.spec_from_file_location("perfplay_cli_helpers", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CLI = _load_cli()


def launch(args: dict[str, Any], check_mode: bool,
           run: Callable[..., subprocess.CompletedProcess] = subprocess.run) -> dict[str, Any]:
    """The module's result for validated `args`, its command run here."""
    argv = CLI.launch_argv(args)
    if check_mode:
        return dict(changed=True, started=False, launcher=None, cmd=argv)
    env, stdin = CLI.launch_input(args)
    done = run(argv, cwd=args["project_dir"], input=stdin, env={**os.environ, **env}, capture_output=True, text=True,
               check=False)
    answer = CLI.CliResult(argv, done.returncode, done.stdout, done.stderr)
    if answer.doc is None:
        return dict(failed=True, changed=False, **answer.failure("case_runners launch --detach"))
    return CLI.launch_result(args, argv, answer.doc)


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        if not self._on_the_controller():
            result.update(self._execute_module(module_name="case_launch", module_args=self._task.args,
                                               task_vars=task_vars))
            return result
        _, args = self.validate_argument_spec(argument_spec=CLI.LAUNCH_ARGUMENT_SPEC)
        result.update(launch(args, self._task.check_mode))
        return result

    def _on_the_controller(self) -> bool:
        """The node is this machine, as this user, in this environment: what the module would run, this runs."""
        return CLI.runs_on_the_controller(self._connection.transport, self._play_context.become,
                                          self._task.environment)
