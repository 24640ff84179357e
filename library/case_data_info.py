#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: is a case's data dir on this host present and in the right format.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: case_data_info
short_description: Check a perfplay case's data directory on a host
description:
  - Writes O(config) to a temporary file and runs C(python -m case_runners check-data --config FILE)
    on the host (standard library only, no torch).
  - Returns C(ok) and the list of problems, each naming the path and the expected format; it does not
    fail on them, so the caller decides (the C(host_preflight) role asserts C(ok)).
  - A case in synthetic mode needs no data and is always C(ok).
options:
  project_dir:
    description: perfplay checkout on the host.
    type: path
    required: true
  python:
    description: Python of the host's perfplay venv. Defaults to the module's own interpreter.
    type: str
  config:
    description: The case's resolved config, as returned in C(cases) by M(case_plan).
    type: dict
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
- name: Check the data dir of every case
  case_data_info:
    project_dir: /opt/perfplay
    python: /opt/perfplay/venv/bin/python
    config: "{{ item }}"
  loop: "{{ plan.cases }}"
  register: data_checks
"""

RETURN = r"""
ok:
  description: Whether the data dir is usable (or not needed).
  returned: success
  type: bool
  sample: false
errors:
  description: Every problem found, each naming the path and the expected format.
  returned: success
  type: list
  elements: str
  sample: ["data_dir /data/digits: missing train.npz (expected numpy .npz with images and labels)"]
case_id:
  description: The case checked.
  returned: success
  type: str
  sample: digits_cnn_CPUx1x1
data_dir:
  description: The data dir checked (null when the case has none).
  returned: success
  type: str
"""

import json
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json
except ImportError:  # imported as a plain file (pytest, ansible-lint): use the checkout's module_utils/
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json


def main():
    argument_spec = dict(COMMON_ARGUMENT_SPEC, config=dict(type="dict", required=True))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    config = module.params["config"]
    fd, config_path = tempfile.mkstemp(prefix="perfplay-config-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(config, handle)
        argv = cli_argv(module.params["python"], "check-data", config=config_path)
        result = run_json(module, argv, module.params["project_dir"], "case_runners check-data")
    finally:
        os.unlink(config_path)
    errors = list(result.doc.get("errors") or [])
    module.exit_json(changed=False, ok=bool(result.doc.get("ok")) and not errors, errors=errors,
                     case_id=config.get("case_id"), data_dir=config.get("data_dir"))


if __name__ == "__main__":
    main()
