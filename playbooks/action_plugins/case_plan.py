# perfplay: the action case_plan (documented in library/case_plan.py). Planning is the controller's work: this runs
# `python -m case_runners plan` on the controller itself, without a module process, as round_record does.

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

# Options that are keys of the plan request as they are (case_runners checks them and applies the defaults).
REQUEST_OPTIONS = ("vendor", "runtime", "image", "cases", "task", "results_dir", "history_db", "run_id",
                   "case_timeout_s", "hosts", "nic", "run_var_names", "host_var_names", "clear_caches",
                   "monitor_interval_s", "progress_interval_s", "rdzv_timeout_s", "heartbeat_timeout_s", "master_port",
                   "min_free_bytes", "bundle")
ARGUMENT_SPEC = dict(
    CLI.COMMON_ARGUMENT_SPEC,
    hosts=dict(type="list", elements="str", required=True),
    run_var_names=dict(type="list", elements="str"),
    host_var_names=dict(type="dict"),
    bundle=dict(type="bool", default=True),
    **{option: dict(type="raw") for option in REQUEST_OPTIONS
       if option not in ("hosts", "run_var_names", "host_var_names", "bundle")}
)
# What the task returns of the plan.
RETURNED = ("run_id", "run_dir", "bundle", "cases", "rounds", "images", "host_needs", "run_vars")


def plan_request(args: dict[str, Any]) -> dict[str, Any]:
    """The request document of ``case_runners plan``: every option set (an empty string is unset)."""
    return {key: args[key] for key in REQUEST_OPTIONS if args.get(key) not in (None, "")}


def plan(args: dict[str, Any], check_mode: bool,
         run: Callable[..., subprocess.CompletedProcess] = subprocess.run) -> dict[str, Any]:
    """The task result: the plan, or every problem of a rejected run in one failure."""
    with CLI.request_file(plan_request(args), "perfplay-plan-") as request_path:
        argv = CLI.cli_argv(args["python"], "plan", request=request_path, check=check_mode)
        done = run(argv, cwd=args["project_dir"], capture_output=True, text=True, check=False)
    answer = CLI.CliResult(argv, done.returncode, done.stdout, done.stderr)
    if answer.doc is None:
        return dict(failed=True, changed=False, **answer.failure("case_runners plan"))
    doc = answer.doc
    if not doc.get("ok"):
        errors = doc.get("errors") or ["case_runners plan failed without naming an error"]
        return dict(failed=True, changed=False, errors=errors, rc=answer.rc,
                    msg="perfplay: the run was rejected, %d problem(s):\n- %s" % (len(errors), "\n- ".join(errors)))
    warnings = ["%s: %s" % (case["case_id"], note[len("warning: "):])  # a key a vendor adds to an inference case
                for case in doc["cases"] for note in case.get("notes") or [] if note.startswith("warning: ")]
    result = dict(changed=not check_mode, **{key: doc[key] for key in RETURNED})
    return dict(result, warnings=warnings) if warnings else result


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False
    _requires_connection = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        result.update(plan(args, self._task.check_mode))
        return result
