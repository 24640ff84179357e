#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: does a host's perfplay venv already have every pinned requirement?

from __future__ import annotations

DOCUMENTATION = r"""
---
module: python_requirements_info
short_description: Check a perfplay venv has every pinned requirement
description:
  - Runs C(python -m case_runners requirements) with the venv's Python, which compares each C(name==version)
    line of a requirements file with the installed distributions (importlib.metadata, no pip, about 0.1 s).
  - Lets the play skip C(pip) on a host whose venv is already right, which costs seconds per host.
  - A venv that does not exist yet is reported as not satisfied. Read-only.
options:
  python:
    description: Python of the venv to check.
    type: path
    required: true
  requirements:
    description: The requirements file; default C(<project_dir>/requirements.txt).
    type: path
extends_documentation_fragment:
  - perfplay_cli.project_dir
  - perfplay_attributes
  - perfplay_attributes.read_only
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Check the venv
  python_requirements_info:
    project_dir: /opt/perfplay/src
    python: /opt/perfplay/venv/bin/python
  register: venv_check

- name: Install only when something is missing
  ansible.builtin.pip:
    requirements: /opt/perfplay/src/requirements.txt
    virtualenv: /opt/perfplay/venv
  when: not venv_check.satisfied
"""

RETURN = r"""
satisfied:
  description: True when every pinned requirement is installed at its version.
  returned: success
  type: bool
missing:
  description: Requirements not installed (or the venv is missing).
  returned: success
  type: list
  elements: str
  sample: ["torch==2.13.0"]
mismatched:
  description: Requirements installed at another version.
  returned: success
  type: list
  elements: str
  sample: ["numpy==2.4.6 (installed 2.3.0)"]
unpinned:
  description: Lines that are not a C(name==version) pin; they cannot be checked without pip.
  returned: success
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            project_dir=COMMON_ARGUMENT_SPEC["project_dir"],
            python=dict(type="path", required=True),  # required: the venv checked, which runs the check
            requirements=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    requirements = params["requirements"] or os.path.join(params["project_dir"], "requirements.txt")
    if not os.path.exists(params["python"]):
        module.exit_json(changed=False, satisfied=False, missing=["the venv (%s does not exist)" % params["python"]],
                         mismatched=[], unpinned=[])
    argv = cli_argv(params["python"], "requirements", requirements=requirements)
    result = run_json(module, argv, params["project_dir"], "case_runners requirements", check_rc=True)
    doc = result.doc
    module.exit_json(changed=False, satisfied=bool(doc.get("satisfied")), missing=doc.get("missing") or [],
                     mismatched=doc.get("mismatched") or [], unpinned=doc.get("unpinned") or [])


if __name__ == "__main__":
    main()
