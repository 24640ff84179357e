#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: the host preflight in one call (the venv's pins, python, devices, data dirs, master port).

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_check_info
short_description: Check a host can run its perfplay rounds
description:
  - Runs C(python -m case_runners host-check) on the host, one process for every check, and returns what
    it found and every problem as a sentence that names the key at fault.
  - First the venv's pinned requirements (O(requirements), stdlib only, no pip). While a file has a pin missing or at
    another version the other checks wait (they import what the pins install) and RV(unmet) names the files for
    C(ansible.builtin.pip) to install before a second call. A venv that does not exist yet has every file unmet.
  - Checks the Python of the perfplay venv, that the host has at least O(nproc) devices of the vendor,
    every case's data dir (format included), that O(results_dir) has O(min_free_bytes) free and is a directory
    this user may write in, that the host has the network interface O(nic), and, on a node 0 of multi-node
    rounds, the master port.
  - Imports torch to check that the vendor's device and backend work after its runtime hook ran; a C(cpu) device's
    check that passed is remembered in the venv and answered without torch until the Python, an installed
    distribution, the hook or the vendor's keys change.
  - Reports problems without failing, so the play can name every host's problems at once.
  - Warns (a module warning, the run goes on) about a case whose framework key names a torch version
    (C(pytorch_1.8)) other than the host's, compared on major.minor; with the docker runtime the image's torch counts,
    and nothing is compared here.
  - Read-only; never changes anything.
options:
  vendor:
    description: Vendor name, a directory C(vendor/<vendor>/).
    type: str
    required: true
  nproc:
    description: Most ranks a round of the run starts on this host; 0 skips the device check.
    type: int
    default: 0
  device_count:
    description: Device count to trust instead of discovery (host var C(perfplay_device_count)).
    type: int
  cases:
    description: Resolved configs (from C(case_plan)) of the cases this host takes part in.
    type: list
    elements: dict
    default: []
  master_port:
    description:
      - Rendezvous port this host listens on as node 0 of multi-node rounds; 0 picks a free one.
      - Left out when the host is node 0 of no multi-node round.
    type: int
  master_addr:
    description: Address the other nodes reach this host at; the port is checked there.
    type: str
    default: ""
  results_dir:
    description: Where the host writes its node directories (host var C(perfplay_host_results_dir)); left out
      on the controller, whose results dir the plan checked.
    type: path
  min_free_bytes:
    description: Bytes that must be free in O(results_dir) (run var C(perfplay_min_free_bytes)).
    type: int
    default: 0
  nic:
    description: The network interface of the collectives on this host (host var C(perfplay_nic)); empty skips the
      check.
    type: str
    default: ""
  requirements:
    description: Requirements files (relative to O(project_dir)) whose C(name==version) pins the venv must have.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - perfplay_cli
  - perfplay_attributes
  - perfplay_attributes.read_only
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Check the host
  host_check_info:
    project_dir: /opt/perfplay/src
    python: /opt/perfplay/venv/bin/python
    vendor: nvidia
    nproc: 8
    cases: "{{ perfplay_run.cases }}"
    master_port: 29500
    master_addr: 10.0.0.11
  register: host_check

- name: Fail on its problems
  ansible.builtin.assert:
    that: host_check.ok
    fail_msg: "{{ host_check.problems | join('; ') }}"
"""

RETURN = r"""
ok:
  description: True when there is no problem.
  returned: success
  type: bool
problems:
  description: Every problem found, each naming the key and value at fault.
  returned: success
  type: list
  elements: str
  sample: ["a round needs nproc=8 nvidia devices, the host has 4 (discovered)",
           "only 212.0 MiB free in /opt/perfplay/results, less than key 'perfplay_min_free_bytes' (1024.0 MiB): ..."]
python:
  description: Version of the venv's Python.
  returned: success
  type: str
  sample: 3.11.2
hostname:
  description: The host's own name.
  returned: success
  type: str
devices:
  description: Devices counted (count, devices, source), empty when nproc is 0.
  returned: success
  type: dict
  sample: {count: 8, source: discovered}
data:
  description: Per case, the problems with its data dir.
  returned: success
  type: list
  elements: dict
  sample: [{case_id: digits_cnn_CPUx2x2, errors: []}]
master_port:
  description: The master port checked or picked (null when not asked, or not free).
  returned: success
  type: int
  sample: 29500
unmet:
  description: The O(requirements) files to install (a pin missing or at another version, a line that is not a
    pin, or no venv yet), in order.
  returned: success
  type: list
  elements: str
  sample: [requirements.txt]
checked:
  description: False when the checks after the pins waited for them (a pin missing or at another version).
  returned: success
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import (
        HOST_CHECK_ARGUMENT_SPEC,
        host_check_command,
        host_check_result,
        host_check_without_venv,
        run_json,
    )
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import (
        HOST_CHECK_ARGUMENT_SPEC,
        host_check_command,
        host_check_result,
        host_check_without_venv,
        run_json,
    )


def main() -> None:
    module = AnsibleModule(argument_spec=HOST_CHECK_ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    answer = host_check_without_venv(params)
    if answer is not None:
        module.exit_json(**answer)
    with host_check_command(params) as argv:
        result = run_json(module, argv, params["project_dir"], "case_runners host-check", check_rc=True)
    answer, warnings = host_check_result(result.doc)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(**answer)


if __name__ == "__main__":
    main()
