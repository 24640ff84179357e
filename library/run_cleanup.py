#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: stop every process of one run on this host.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_cleanup
short_description: Stop every process of a perfplay run on a host
description:
  - Finds the processes of run O(run_id) by reading C(/proc/*/cmdline) and C(/proc/*/environ), those with
    an argv element equal to O(run_id) (launchers, workers, monitor daemons get C(--run-id RUN_ID)) or
    with C(PERFPLAY_RUN_ID=RUN_ID) in their environment (ranks).
  - Sends SIGTERM, then SIGKILL to those still alive after O(grace_period) seconds.
  - With O(containers=true) (docker runtime), first removes every container labelled with the run id
    (C(perfplay.run_id)), through C(python -m case_runners containers) and the Docker SDK.
  - Never signals its own process or its ancestors (so not the C(ansible-playbook) that runs it);
    argv is matched element by element, so C(-e perfplay_run_id=RUN_ID) does not match.
options:
  run_id:
    description: Run id, for example C(run20250101120000).
    type: str
    required: true
  grace_period:
    description: Seconds between SIGTERM and SIGKILL.
    type: float
    default: 10
  containers:
    description: Also remove the run's containers (needs O(project_dir) and the Docker SDK in O(python)).
    type: bool
    default: false
  project_dir:
    description: perfplay checkout on the host (with O(containers=true)).
    type: path
  python:
    description: Python of the host's perfplay venv (with O(containers=true)); default the module's own.
    type: str
attributes:
  check_mode:
    support: full
    details: Lists the processes it would stop and signals none.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: A second call finds nothing left to stop.
notes:
  - Linux only (reads C(/proc)). Processes of other users are seen only with enough privileges.
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Stop what is left of the run
  run_cleanup:
    run_id: run20250101120000
    grace_period: 5
  register: cleanup
"""

RETURN = r"""
containers:
  description: Names of the run's containers found (and removed unless in check mode).
  returned: success
  type: list
  elements: str
  sample: [perfplay-run20250101120000-digits_cnn_CPUx1x2-round1-n0]
processes:
  description: The processes of the run found (and signalled unless in check mode).
  returned: success
  type: list
  elements: dict
  sample: [{pid: 4242, argv: [/opt/perfplay/venv/bin/python, -m, case_runners, launch, --run-id, run20250101120000]}]
terminated:
  description: Pids that exited after SIGTERM.
  returned: success
  type: list
  elements: int
  sample: [4242]
killed:
  description: Pids that needed SIGKILL.
  returned: success
  type: list
  elements: int
  sample: []
"""

import re

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import cli_argv, run_json
    from ansible.module_utils._perfplay_procs import find_run_processes, terminate
except ImportError:  # imported as a plain file (pytest, ansible-lint): use the checkout's module_utils/
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from module_utils._perfplay_cli import cli_argv, run_json
    from module_utils._perfplay_procs import find_run_processes, terminate

SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def main():
    argument_spec = dict(
        run_id=dict(type="str", required=True),
        grace_period=dict(type="float", default=10),
        containers=dict(type="bool", default=False),
        project_dir=dict(type="path"),
        python=dict(type="str"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           required_if=[("containers", True, ("project_dir",))])
    run_id = module.params["run_id"]
    if not SAFE_ID.match(run_id):
        module.fail_json(msg="run_id %r is not a run id (letters, digits, '_', '.', '-')" % run_id)
    if module.params["grace_period"] < 0:
        module.fail_json(msg="grace_period must be >= 0")

    containers = []
    if module.params["containers"]:  # removing a container ends its processes too
        argv = cli_argv(module.params["python"], "containers", run_id=run_id, check=module.check_mode)
        containers = run_json(module, argv, module.params["project_dir"], "case_runners containers",
                              check_rc=True).doc["containers"]
    processes = find_run_processes(run_id)
    if module.check_mode or not processes:
        module.exit_json(changed=bool(processes or containers), containers=containers, processes=processes,
                         terminated=[], killed=[])
    terminated, killed = terminate([proc["pid"] for proc in processes], module.params["grace_period"])
    module.exit_json(changed=bool(terminated or killed or containers), containers=containers, processes=processes,
                     terminated=terminated, killed=killed)


if __name__ == "__main__":
    main()
