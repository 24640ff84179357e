#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: the summary of a run directory, over all its rounds.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_summary_info
short_description: Summarise a perfplay run directory
description:
  - Runs C(python -m case_runners summarize RUN_DIR) on the controller and returns the summary
    (schema C(perfplay.run_summary/1)), per case the mean and standard deviation over its rounds.
  - Read-only; the C(perfplay_summary) callback writes C(summary.json) and C(summary.md).
options:
  project_dir:
    description: perfplay checkout on the controller.
    type: path
    required: true
  python:
    description: Python that can import C(case_runners). Defaults to the module's own interpreter.
    type: str
  run_dir:
    description: The run directory, C(<results_dir>/run<YYYYmmddHHMMSS>).
    type: path
    required: true
attributes:
  check_mode:
    support: full
    details: Read-only, runs in check mode too.
  diff_mode:
    support: none
  idempotent:
    support: full
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Summarise the run
  run_summary_info:
    project_dir: "{{ playbook_dir | dirname }}"
    python: "{{ ansible_playbook_python }}"
    run_dir: /opt/perfplay/results/run20250101120000
  register: run_summary

- name: Publish it for AWX
  ansible.builtin.set_stats:
    data:
      perfplay_summary: "{{ run_summary.summary }}"
"""

RETURN = r"""
summary:
  description: The run summary (schema C(perfplay.run_summary/1)).
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
"""

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json


def main():
    argument_spec = dict(COMMON_ARGUMENT_SPEC, run_dir=dict(type="path", required=True))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    argv = cli_argv(module.params["python"], "summarize", module.params["run_dir"])
    result = run_json(module, argv, module.params["project_dir"], "case_runners summarize", check_rc=True)
    module.exit_json(changed=False, summary=result.doc, failed_rounds=result.doc.get("failed_rounds", []))


if __name__ == "__main__":
    main()
