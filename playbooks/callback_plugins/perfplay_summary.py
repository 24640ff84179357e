# perfplay: print the run summary at the end of the playbook.

from __future__ import annotations

DOCUMENTATION = r"""
name: perfplay_summary
type: aggregate
short_description: Print a perfplay run's summary as a table at the end of the play
description:
  - Prints the summary table returned by the C(run_summary) task (which writes C(summary.json) and C(summary.md))
    once the play has ended, and as its last line the path of the run's HTML report (C(report.html), written by
    the C(run_summary) task with its C(report) option, or by a C(run_report) task).
  - Prints nothing when no round was reached (the run was rejected by preflight) or in check mode. A run
    directory in which no round was launched (the hosts' preflight failed) is removed, so a rejected run leaves
    nothing behind (C(python -m case_runners discard-run), run from the checkout).
  - Lives beside perfplay's playbooks (C(playbooks/callback_plugins/)) and needs no enabling, so Ansible loads it
    whatever C(ANSIBLE_CALLBACK_PLUGINS) and stdout callback are set, as C(ansible-runner) and AWX set theirs.
requirements:
  - The Python that runs Ansible can run C(python -m case_runners) from the repository root (two levels up)
options:
  show_table:
    description: Print the summary table to the display.
    type: bool
    default: true
    ini:
      - section: callback_perfplay_summary
        key: show_table
    env:
      - name: PERFPLAY_SUMMARY_SHOW_TABLE
"""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from ansible.plugins.callback import CallbackBase

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PLAN_ACTION = "case_plan"
SUMMARY_ACTION = "run_summary"
REPORT_ACTION = "run_report"
LAUNCH_ACTIONS = ("case_launch", "case_wait", "case_finish", "round_record")  # a round was reached


def _action_and_data(result: Any) -> tuple[str, dict[str, Any]]:
    """``(short action name, result dict)`` of a task result. ansible-core before 2.19 (which the play rejects
    with its first task) has only the private names: read them there, so that rejection is all it prints."""
    task = getattr(result, "task", None) or result._task
    data = getattr(result, "result", None)
    return (task.action or "").rsplit(".", 1)[-1], data if data is not None else result._result


class CallbackModule(CallbackBase):
    """Aggregate callback: the summary table of a perfplay run."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "perfplay_summary"
    CALLBACK_NEEDS_ENABLED = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.run_dir: str | None = None
        self.launched = False
        self.summary = None
        self.table = None
        self.written: list[str] = []
        self.report = None

    def _collect(self, result: Any) -> None:
        action, data = _action_and_data(result)
        if action == PLAN_ACTION and data.get("run_dir"):
            self.run_dir = data["run_dir"]
        self.launched = self.launched or action in LAUNCH_ACTIONS
        if action == SUMMARY_ACTION and data.get("summary") is not None:
            self.summary, self.written = data["summary"], data.get("written") or []
            self.table = data.get("table")
        # The report's answer: run_report's, or the one run_summary gives when it writes the report too.
        report = data.get("report") if action == SUMMARY_ACTION else data if action == REPORT_ACTION else None
        if isinstance(report, dict) and report.get("path") and not report.get("write_error") \
                and not data.get("failed"):
            self.report = report["path"]

    def v2_runner_on_ok(self, result: Any) -> None:
        self._collect(result)

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._collect(result)

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._collect(result)

    def v2_playbook_on_stats(self, stats: Any) -> None:
        if self.run_dir and not self.launched:
            self._discard_unstarted()
        if self.summary is None or not self.get_option("show_table"):
            return
        if not self.table:
            self._display.warning("perfplay_summary: no table for %s" % self.summary.get("run_dir"))
            return
        self._display.banner("PERFPLAY SUMMARY")
        self._display.display(self.table)
        if self.written:
            self._display.display("summary: %s" % ", ".join(self.written))
        if self.report:
            self._display.display("report: %s" % self.report)

    def _discard_unstarted(self) -> None:
        """The hosts' preflight failed before any round: remove the run directory the plan made."""
        assert self.run_dir is not None  # the caller's condition
        try:
            done = subprocess.run([sys.executable, "-m", "case_runners", "discard-run", self.run_dir],
                                  cwd=str(PROJECT_ROOT), capture_output=True, text=True, check=True, timeout=120)
            if json.loads(done.stdout).get("removed"):
                self._display.display("perfplay: no round was started; removed %s" % self.run_dir)
        except Exception as exc:  # pylint: disable=broad-except  # a report must never fail the run
            self._display.warning("perfplay_summary: could not remove %s: %s" % (self.run_dir, exc))
