#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: the summary of a run directory, over all its rounds, written beside them.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_summary
short_description: Summarise a perfplay run directory and write summary.json and summary.md into it
description:
  - Runs C(python -m case_runners summary RUN_DIR --write) on the controller and returns the summary
    (schema C(perfplay.run_summary/1)), per case the mean and standard deviation over its rounds.
  - Writes C(<run_dir>/summary.json) and C(<run_dir>/summary.md), each only when its content changed, whatever
    callbacks Ansible runs with (C(ansible-playbook), C(ansible-runner), AWX). A summary that cannot be written
    (a full disk) is a warning, never a failure of the run.
  - The C(perfplay_summary) callback prints the returned summary as a table at the end of the play.
  - With O(history_db), the same command then indexes the run into the history database (as M(run_history)
    does), and with O(report), writes the run's HTML report (as M(run_report) does); so the run's end is one module
    run and one process, which saves the controller a worker process, a module payload and two Python starts for
    each.
options:
  history_db:
    description:
      - The history database to index the run into after the summary (run var C(perfplay_history_db), as the
        plan resolved it); the answer is in RV(history). Unset, the run is not indexed.
      - An index that fails is a warning, never a failure of the run.
    type: path
  report:
    description:
      - Write the run's HTML report, C(<run_dir>/report.html), after the summary; the answer is in RV(report).
      - A report that cannot be written is a warning, never a failure of the run.
    type: bool
    default: false
extends_documentation_fragment:
  - perfplay_cli
  - perfplay_cli.run_dir
  - perfplay_attributes
attributes:
  check_mode:
    support: partial
    details: Returns the summary and writes nothing; does not predict whether the files would change.
  idempotent:
    support: full
    details: A second call finds both files up to date and reports no change.
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Summarise the run
  run_summary:
    project_dir: "{{ playbook_dir | dirname }}"
    python: "{{ ansible_playbook_python }}"
    run_dir: /opt/perfplay/results/run20250101120000
    history_db: /opt/perfplay/results/perfplay.sqlite
    report: true
  register: run_summary

- name: Publish it for AWX
  ansible.builtin.set_stats:
    data:
      perfplay_summary: "{{ run_summary.summary }}"
"""

RETURN = r"""
table:
  description: The summary as the table the C(perfplay_summary) callback prints.
  returned: always
  type: str
summary:
  description: The run summary (schema C(perfplay.run_summary/1)), as written to C(summary.json).
  returned: success
  type: dict
  sample:
    schema: perfplay.run_summary/1
    run_id: run20250101120000
    ok: true
    cases: [{case_id: digits_cnn_CPUx1x1, status: success, succeeded: 1, rounds: []}]
failed_rounds:
  description: >-
    Rounds that produced no valid result (status other than C(success) or C(not_converged)), one line each;
    missing the target is a valid result.
  returned: success
  type: list
  elements: str
  sample: ["digits_cnn_CPUx1x2 round 2: timeout: localhost (node 0): no exit within 600 s"]
written:
  description: The files written by this call; empty when they held the summary already, and in check mode.
  returned: success
  type: list
  elements: str
  sample: [/opt/perfplay/results/run20250101120000/summary.json, /opt/perfplay/results/run20250101120000/summary.md]
history:
  description: >-
    What M(run_history) returns for the run: C(changed), C(db), C(rounds), C(problems), and C(index_error) when
    the index failed.
  returned: when O(history_db) is set
  type: dict
  sample: {changed: true, db: /opt/perfplay/results/perfplay.sqlite, rounds: 1, problems: []}
report:
  description: >-
    What M(run_report) returns for the run: C(changed), C(path), C(written) and C(write_error).
  returned: when O(report) is true
  type: dict
  sample: {changed: true, path: /opt/perfplay/results/run20250101120000/report.html, written: true, write_error: null}
"""

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import (
        COMMON_ARGUMENT_SPEC,
        cli_argv,
        history_answer,
        report_answer,
        run_json,
    )
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import (
        COMMON_ARGUMENT_SPEC,
        cli_argv,
        history_answer,
        report_answer,
        run_json,
    )


def main() -> None:
    argument_spec = dict(COMMON_ARGUMENT_SPEC, run_dir=dict(type="path", required=True),
                         history_db=dict(type="path"), report=dict(type="bool", default=False))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    # With history_db and report, the same command indexes the run and writes its report after the summary.
    argv = cli_argv(params["python"], "summary", params["run_dir"], write=not module.check_mode,
                    history_db=params["history_db"], report=params["report"])
    summary = run_json(module, argv, params["project_dir"], "case_runners summary", check_rc=True).doc
    table = summary.pop("table", None)
    written = summary.pop("written", [])
    write_error = summary.pop("write_error", None)
    history, report = summary.pop("history", None), summary.pop("report", None)
    if write_error:
        module.warn("summary.json and summary.md not written: %s" % write_error)
    ends = {}  # the run's end after its summary, each answered as its own module answers it
    if params["history_db"]:
        history = history or {"index_error": "`summary` gave no history answer"}
        ends["history"] = history_answer(module, history, params["history_db"])
    if params["report"]:
        ends["report"] = report_answer(module, report or dict(path=None, write_error="`summary` gave no report"))
    module.exit_json(changed=bool(written) or any(end["changed"] for end in ends.values()), summary=summary,
                     table=table, failed_rounds=summary.get("failed_rounds", []), written=written, **ends)

if __name__ == "__main__":
    main()
