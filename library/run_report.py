#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: the HTML report of a run directory, written beside its summary.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_report
short_description: Write a perfplay run's HTML report, report.html, into its run directory
description:
  - Runs C(python -m case_runners report RUN_DIR --json) on the controller, which renders one self-contained HTML
    page (the summary tables, throughput, scaling efficiency, MFU, loss curves, monitor series, environment, failed
    rounds; figures embedded, no network) and writes it to C(<run_dir>/report.html) only when its content changed.
  - A report that cannot be written (a full disk), or not rendered, is a warning, never a failure of the run; a
    C(run_dir) that is not a run directory fails the task.
  - The C(perfplay_summary) callback prints the report's path after the summary table.
extends_documentation_fragment:
  - perfplay_cli
  - perfplay_cli.run_dir
  - perfplay_attributes
attributes:
  check_mode:
    support: full
    details: Renders the report and writes nothing; C(changed) says whether the file would change.
  idempotent:
    support: full
    details: A second call renders the same page, finds the file up to date and reports no change.
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Write the run's report
  run_report:
    project_dir: "{{ playbook_dir | dirname }}"
    python: "{{ ansible_playbook_python }}"
    run_dir: /opt/perfplay/results/run20250101120000
  register: run_report
"""

RETURN = r"""
path:
  description: Where the report is (or, in check mode, would be) written; null when it could not be rendered.
  returned: success
  type: str
  sample: /opt/perfplay/results/run20250101120000/report.html
written:
  description: Whether this call wrote the file; false when it held the report already, in check mode, and when the
    write failed.
  returned: success
  type: bool
write_error:
  description: Why the report could not be written (also given as a warning); null when it was.
  returned: success
  type: str
  sample: "/opt/perfplay/results/run20250101120000/report.html: no space left on device"
"""

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, report_outcome, run_cli
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, report_outcome, run_cli


def main() -> None:
    argument_spec = dict(COMMON_ARGUMENT_SPEC, run_dir=dict(type="path", required=True))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    argv = cli_argv(params["python"], "report", params["run_dir"], json=True, check=module.check_mode)
    result = run_cli(module, argv, params["project_dir"])
    module.exit_json(**report_outcome(module, result))


if __name__ == "__main__":
    main()
