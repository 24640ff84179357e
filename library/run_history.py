#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: index a finished run into the history database.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_history
short_description: Index a perfplay run directory into the history database, one row per round
description:
  - Runs C(python -m case_runners history add RUN_DIR --db DB --json) on the controller, which reads the run's
    round records and replaces the run's rows in the SQLite database O(db) (created when missing, migrated from an
    older schema), in one transaction.
  - A round whose record (C(round_record.json), or C(result.json) in a run from before) cannot be read is
    indexed with the status C(unreadable) and named in a warning.
  - An index that fails (a database of a newer perfplay, a full disk) is a warning, never a failure of the run;
    the run directory stays the source of truth, and C(case_runners history reindex) rebuilds the database from it.
options:
  db:
    description: The history database (run var C(perfplay_history_db), as the plan resolved it).
    type: path
    required: true
extends_documentation_fragment:
  - perfplay_cli
  - perfplay_cli.run_dir
  - perfplay_attributes
attributes:
  check_mode:
    support: full
    details: Writes nothing; says whether the run's rows would change.
  idempotent:
    support: full
    details: A second call finds the run's rows as they are and reports no change.
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Index the run into the history
  run_history:
    project_dir: "{{ playbook_dir | dirname }}"
    python: "{{ ansible_playbook_python }}"
    run_dir: /opt/perfplay/results/run20250101120000-0a1b2c
    db: /opt/perfplay/results/perfplay.sqlite
"""

RETURN = r"""
db:
  description: The history database.
  returned: always
  type: str
  sample: /opt/perfplay/results/perfplay.sqlite
rounds:
  description: The rows the run has in the database (one per round); 0 when the index failed.
  returned: always
  type: int
  sample: 3
problems:
  description: The rounds whose record could not be read, each by file and reason (indexed as C(unreadable)).
  returned: always
  type: list
  elements: str
  sample: ["/opt/perfplay/results/run1/digits_cnn_CPUx1x1/round2/round_record.json: is not JSON (Expecting value)"]
index_error:
  description: Why the run could not be indexed, when it could not (also a warning).
  returned: when the index failed
  type: str
  sample: "/opt/perfplay/results/perfplay.sqlite: written by a newer perfplay (history schema version 3; ...)"
"""

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, history_outcome, run_cli
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, history_outcome, run_cli


def main() -> None:
    argument_spec = dict(COMMON_ARGUMENT_SPEC, run_dir=dict(type="path", required=True),
                         db=dict(type="path", required=True))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    argv = cli_argv(params["python"], "history", "add", params["run_dir"], db=params["db"], json=True,
                    check=module.check_mode)
    result = run_cli(module, argv, params["project_dir"])
    module.exit_json(**history_outcome(module, result, params["db"]))


if __name__ == "__main__":
    main()
