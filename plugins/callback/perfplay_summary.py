# -*- coding: utf-8 -*-
# perfplay: write and print the run summary at the end of the playbook.

from __future__ import annotations

DOCUMENTATION = r"""
name: perfplay_summary
type: aggregate
short_description: Write a perfplay run's summary and print it as a table at the end of the play
description:
  - Remembers the run directory returned by the C(case_plan) task and, at the end of the playbook,
    calls C(case_runners.results.summary.write_run_summary(run_dir)), which writes
    C(<run_dir>/summary.json) and C(<run_dir>/summary.md), then prints
    C(case_runners.results.summary.render_table(summary)).
  - Prints nothing when no round was reached (the run was rejected by preflight) or in check mode. A run
    directory in which no round was launched (the hosts' preflight failed) is removed, so a rejected run leaves
    nothing behind (C(case_runners.plan.run_plan.discard_unstarted_run)).
  - Works beside any stdout callback, including AWX's; the playbook also publishes the summary with
    C(ansible.builtin.set_stats) for AWX workflows.
requirements:
  - enable in ansible.cfg (C(callbacks_enabled = perfplay_summary)); C(case_runners) importable from the
    repository root (the directory two levels above this file)
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
  write_files:
    description: Write C(summary.json) and C(summary.md) into the run directory (else only print).
    type: bool
    default: true
    ini:
      - section: callback_perfplay_summary
        key: write_files
    env:
      - name: PERFPLAY_SUMMARY_WRITE_FILES
"""

import sys
from pathlib import Path

from ansible.plugins.callback import CallbackBase

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PLAN_ACTION = "case_plan"
ROUND_ACTION = "round_result"
LAUNCH_ACTIONS = ("case_launch", "async_status", "round_result")  # a round was reached


def _short_action(action):
    """``case_plan`` whether the task named it by short name or a full name."""
    return (action or "").rsplit(".", 1)[-1]


def _import_case_runners():
    if str(PROJECT_ROOT) not in sys.path:
        sys.path.insert(0, str(PROJECT_ROOT))


def _summary_api():
    """``(write_run_summary, summarize_run, render_table)`` from the checkout's case_runners."""
    _import_case_runners()
    from case_runners.results import summary  # pylint: disable=import-outside-toplevel

    return summary.write_run_summary, summary.summarize_run, summary.render_table


class CallbackModule(CallbackBase):
    """Aggregate callback: summary files and table for a perfplay run."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "perfplay_summary"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.run_dir = None
        self.rounds_seen = 0
        self.launched = False

    def _collect(self, result):
        action = _short_action(result.task.action)
        if action == PLAN_ACTION and result.result.get("run_dir"):
            self.run_dir = result.result["run_dir"]
        self.launched = self.launched or action in LAUNCH_ACTIONS
        if action == ROUND_ACTION:
            self.rounds_seen += 1

    def v2_runner_on_ok(self, result):
        self._collect(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._collect(result)

    def v2_runner_on_unreachable(self, result):
        self._collect(result)

    def v2_playbook_on_stats(self, stats):
        if self.run_dir and not self.launched:
            self._discard_unstarted()
        if not self.run_dir or not self.rounds_seen:
            return
        try:
            write_run_summary, summarize_run, render_table = _summary_api()
            run_dir = Path(self.run_dir)
            summary = write_run_summary(run_dir) if self.get_option("write_files") else summarize_run(run_dir)
            table = render_table(summary)
        except Exception as exc:  # pylint: disable=broad-except  # a report must never fail the run
            self._display.warning("perfplay_summary: no summary for %s: %s" % (self.run_dir, exc))
            return
        if summary.get("write_error"):
            self._display.warning("perfplay_summary: summary.json and summary.md not written: %s"
                                  % summary["write_error"])
        if self.get_option("show_table"):
            self._display.banner("PERFPLAY SUMMARY")
            self._display.display(table)
            if self.get_option("write_files") and not summary.get("write_error"):
                self._display.display("summary: %s, %s" % (run_dir / "summary.json", run_dir / "summary.md"))

    def _discard_unstarted(self):
        """The hosts' preflight failed before any round: remove the run directory the plan made."""
        try:
            _import_case_runners()
            from case_runners.plan.run_plan import discard_unstarted_run  # pylint: disable=import-outside-toplevel

            if discard_unstarted_run(Path(self.run_dir)):
                self._display.display("perfplay: no round was started; removed %s" % self.run_dir)
        except Exception as exc:  # pylint: disable=broad-except  # a report must never fail the run
            self._display.warning("perfplay_summary: could not remove %s: %s" % (self.run_dir, exc))
