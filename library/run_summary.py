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
"""

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json


def main() -> None:
    argument_spec = dict(COMMON_ARGUMENT_SPEC, run_dir=dict(type="path", required=True))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    argv = cli_argv(module.params["python"], "summary", module.params["run_dir"], write=not module.check_mode)
    summary = run_json(module, argv, module.params["project_dir"], "case_runners summary", check_rc=True).doc
    table = summary.pop("table", None)
    written = summary.pop("written", [])
    write_error = summary.pop("write_error", None)
    if write_error:
        module.warn("summary.json and summary.md not written: %s" % write_error)
    module.exit_json(changed=bool(written), summary=summary, table=table,
                     failed_rounds=summary.get("failed_rounds", []), written=written)


if __name__ == "__main__":
    main()
