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
    does), and with O(report), writes the run's HTML report (as M(run_report) does); so the run's end is one task
    and one process, which saves the controller a worker process, a module payload and two Python starts for each.
  - An action plugin, run on the controller whatever host the task names; it starts no module process.
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
