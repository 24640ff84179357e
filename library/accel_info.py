#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: what accelerators of a vendor a host has.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: accel_info
short_description: Count a host's devices of a perfplay vendor
description:
  - Runs C(python -m case_runners devices --vendor VENDOR) on the host and returns its answer.
  - For the C(cpu) vendor a device is a CPU core; for C(nvidia) a GPU seen through NVML.
  - Read-only; never changes anything.
options:
  project_dir:
    description: perfplay checkout on the host.
    type: path
    required: true
  python:
    description: Python of the host's perfplay venv. Defaults to the module's own interpreter.
    type: str
  vendor:
    description: Vendor name, a directory C(vendor/<vendor>/).
    type: str
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
- name: Count the GPUs
  accel_info:
    project_dir: /opt/perfplay
    python: /opt/perfplay/venv/bin/python
    vendor: nvidia
  register: accel

- name: Check there are enough
  ansible.builtin.assert:
    that: accel.count >= 8
"""

RETURN = r"""
vendor:
  description: The vendor asked about.
  returned: success
  type: str
  sample: nvidia
kind:
  description: Device kind of the vendor (C(cpu), C(cuda)).
  returned: success
  type: str
  sample: cuda
count:
  description: Number of devices found.
  returned: success
  type: int
  sample: 8
devices:
  description: One item per device (index, name, and memory where known).
  returned: success
  type: list
  elements: dict
  sample: [{index: 0, name: NVIDIA A100-SXM4-80GB, memory_bytes: 85899345920}]
error:
  description: Why no device could be listed (for example no NVML), when that happened.
  returned: when the vendor's device library failed
  type: str
  sample: "NVML: Driver Not Loaded"
"""

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json
except ImportError:  # imported as a plain file (pytest, ansible-lint): use the checkout's module_utils/
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json


def main():
    argument_spec = dict(COMMON_ARGUMENT_SPEC, vendor=dict(type="str", required=True))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    argv = cli_argv(module.params["python"], "devices", vendor=module.params["vendor"])
    result = run_json(module, argv, module.params["project_dir"], "case_runners devices")
    if result.rc != 0:
        module.fail_json(**result.failure("case_runners devices"))
    module.exit_json(changed=False, **result.doc)


if __name__ == "__main__":
    main()
