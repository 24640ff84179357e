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
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_cli, tail
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_cli, tail


def main() -> None:
    argument_spec = dict(COMMON_ARGUMENT_SPEC, run_dir=dict(type="path", required=True))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    argv = cli_argv(module.params["python"], "report", module.params["run_dir"], json=True, check=module.check_mode)
    result = run_cli(module, argv, module.params["project_dir"])
    if result.rc == 2:  # not a run directory: a bad input, named
        module.fail_json(**result.failure("case_runners report"))
    answer = result.doc if result.rc == 0 and result.doc is not None else None
    if answer is None:  # the report could not be rendered (a bug): said, and the run goes on
        write_error = (tail(result.stderr).strip().splitlines() or ["exit status %s" % result.rc])[-1]
        answer = dict(path=None, changed=False, write_error="not rendered: %s" % write_error)
    write_error = answer.get("write_error")
    if write_error:
        module.warn("report.html not written: %s" % write_error)
    changed = bool(answer.get("changed")) and not write_error
    module.exit_json(changed=changed, path=answer.get("path"), written=changed and not module.check_mode,
                     write_error=write_error)


if __name__ == "__main__":
    main()
