# perfplay: the action run_summary (documented in library/run_summary.py). The run's end is the controller's work:
# this runs `python -m case_runners summary` (with the history index and the report) on the controller itself,
# without a module process, as round_record does for each round.

from __future__ import annotations

import importlib.util
import os
import subprocess
from collections.abc import Callable
from types import SimpleNamespace
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

ARGUMENT_SPEC = dict(
    CLI.COMMON_ARGUMENT_SPEC,
    run_dir=dict(type="path", required=True),
    history_db=dict(type="path"),
    report=dict(type="bool", default=False),
)


def summarise(args: dict[str, Any], check_mode: bool,
              run: Callable[..., subprocess.CompletedProcess] = subprocess.run) -> dict[str, Any]:
    """The task result: the summary and its table, with the index's and the report's answers (each as run_history
    and run_report answer it: a failed index or report is a warning) when asked for."""
    # With history_db and report, the same command indexes the run and writes its report after the summary.
    argv = CLI.cli_argv(args["python"], "summary", args["run_dir"], write=not check_mode,
                        history_db=args["history_db"], report=args["report"])
    done = run(argv, cwd=args["project_dir"], capture_output=True, text=True, check=False)
    answer = CLI.CliResult(argv, done.returncode, done.stdout, done.stderr)
    if answer.doc is None or answer.rc != 0:
        return dict(failed=True, changed=False, **answer.failure("case_runners summary"))
    summary = answer.doc
    warnings: list[str] = []
    said = SimpleNamespace(warn=warnings.append, check_mode=check_mode)  # what the answers use of a module
    table = summary.pop("table", None)
    written = summary.pop("written", [])
    write_error = summary.pop("write_error", None)
    history, report = summary.pop("history", None), summary.pop("report", None)
    if write_error:
        said.warn("summary.json and summary.md not written: %s" % write_error)
    ends = {}  # the run's end after its summary
    if args["history_db"]:
        history = history or {"index_error": "`summary` gave no history answer"}
        ends["history"] = CLI.history_answer(said, history, args["history_db"])
    if args["report"]:
        ends["report"] = CLI.report_answer(said, report or dict(path=None, write_error="`summary` gave no report"))
    result = dict(changed=bool(written) or any(end["changed"] for end in ends.values()), summary=summary,
                  table=table, failed_rounds=summary.get("failed_rounds", []), written=written, **ends)
    return dict(result, warnings=warnings) if warnings else result


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False
    _requires_connection = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        result.update(summarise(args, self._task.check_mode))
        return result
