#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: start or stop a host or accelerator monitor daemon of one run.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: monitor
short_description: Start or stop a perfplay monitor daemon (host or vendor accelerator monitor)
description:
  - Drives C(python -m case_runners monitor -o status|start|stop) for the monitor O(name) of run O(run_id).
  - Asks for the monitor's status first and acts only when the state differs, so C(changed) means a
    daemon was really started or stopped.
  - The daemon samples every O(interval) seconds into C(<log_dir>/<name>_monitor.jsonl); its pid file is
    C(<log_dir>/<name>_monitor.<run_id>.pid).
options:
  project_dir:
    description: perfplay checkout on the host.
    type: path
    required: true
  python:
    description: Python of the host's perfplay venv. Defaults to the module's own interpreter.
    type: str
  state:
    description: Whether the monitor should be running.
    type: str
    choices: [started, stopped]
    default: started
  name:
    description: C(host) for the host monitor, or a vendor name for its accelerator monitor (C(vendor/<name>/monitor.py)).
    type: str
    required: true
  run_id:
    description: Run id; keeps the daemons of concurrent runs apart and is carried in the daemon's argv.
    type: str
    required: true
  log_dir:
    description: Directory for samples, pid file and C(sys_info.json).
    type: path
    required: true
  interval:
    description: Seconds between samples (used when starting).
    type: float
    default: 1.0
  vendor:
    description: Vendor whose monitor plugin to load when it differs from O(name).
    type: str
attributes:
  check_mode:
    support: full
    details: Reads the status and predicts whether a start or stop would happen.
  diff_mode:
    support: none
  idempotent:
    support: full
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Start the host monitor of the round
  monitor:
    project_dir: /opt/perfplay
    python: /opt/perfplay/venv/bin/python
    name: host
    run_id: run20250101120000
    log_dir: /opt/perfplay/results/run20250101120000/digits_cnn_CPUx1x1/round1/localhost_noderank0
    interval: 1.0

- name: Stop the NVIDIA monitor
  monitor:
    project_dir: /opt/perfplay
    name: nvidia
    run_id: run20250101120000
    log_dir: /opt/perfplay/results/run20250101120000/resnet50_A100x1x8/round1/gpu01_noderank0
    state: stopped
"""

RETURN = r"""
running:
  description: Whether the monitor runs after the task (predicted in check mode).
  returned: success
  type: bool
  sample: true
msg:
  description: What the monitor command said.
  returned: always
  type: str
  sample: "host monitor (run run20250101120000) started (pid 4242), samples in .../host_monitor.jsonl"
"""

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_cli
except ImportError:  # imported as a plain file (pytest, ansible-lint): use the checkout's module_utils/
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_cli

# Exit codes of `case_runners monitor` (LSB init-script style).
RC_OK = 0
RC_NOT_RUNNING = 3


def monitor_argv(params, operation):
    return cli_argv(
        params["python"], "monitor",
        operation=operation,
        log_dir=params["log_dir"],
        name=params["name"],
        run_id=params["run_id"],
        interval=params["interval"] if operation == "start" else None,
        vendor=params["vendor"],
    )


def run_monitor(module, operation, ok_codes=(RC_OK,)):
    argv = monitor_argv(module.params, operation)
    result = run_cli(module, argv, module.params["project_dir"])
    message = (result.stdout.strip() or result.stderr.strip()).splitlines()
    if result.rc not in ok_codes:
        failure = result.failure("case_runners monitor -o %s" % operation)
        failure["msg"] = "%s: %s" % (failure["msg"], result.stderr.strip() or result.stdout.strip())
        module.fail_json(**failure)
    return result.rc, message[-1] if message else ""


def main():
    argument_spec = dict(
        COMMON_ARGUMENT_SPEC,
        state=dict(type="str", choices=["started", "stopped"], default="started"),
        name=dict(type="str", required=True),
        run_id=dict(type="str", required=True),
        log_dir=dict(type="path", required=True),
        interval=dict(type="float", default=1.0),
        vendor=dict(type="str"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    want_running = module.params["state"] == "started"

    rc, message = run_monitor(module, "status", ok_codes=(RC_OK, RC_NOT_RUNNING))
    if (rc == RC_OK) == want_running:
        module.exit_json(changed=False, running=want_running, msg=message)
    if module.check_mode:
        module.exit_json(changed=True, running=want_running, msg="check mode: would %s %s monitor" % (
            "start" if want_running else "stop", module.params["name"]))

    rc, message = run_monitor(module, "start" if want_running else "stop")
    module.exit_json(changed=True, running=want_running, msg=message)


if __name__ == "__main__":
    main()
