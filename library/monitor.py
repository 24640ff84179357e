#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: start or stop a host or accelerator monitor daemon of one run.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: monitor
short_description: Start or stop perfplay monitor daemons (host and vendor accelerator monitors)
description:
  - Runs C(python -m case_runners monitor -o ensure-started|ensure-stopped) once for all monitors in O(names)
    of run O(run_id), so that a round pays for one module run and one process, not one per monitor.
  - That command checks each monitor's status and acts only where the state differs, so C(changed) means a
    daemon was really started or stopped.
  - Monitors start in the order given and stop in the reverse order.
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
  names:
    description: C(host) for the host monitor, and/or vendor names for their accelerator monitors
      (C(vendor/<name>/monitor.py)).
    type: list
    elements: str
    required: true
    aliases: [name]
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
    names: [host, cpu]
    run_id: run20250101120000
    log_dir: /opt/perfplay/results/run20250101120000/digits_cnn_CPUx1x1/round1/localhost_noderank0
    interval: 1.0

- name: Stop the NVIDIA monitor
  monitor:
    project_dir: /opt/perfplay
    names: [host, nvidia]
    run_id: run20250101120000
    log_dir: /opt/perfplay/results/run20250101120000/resnet50_A100x1x8/round1/gpu01_noderank0
    state: stopped
"""

RETURN = r"""
running:
  description: Whether the monitors run after the task (predicted in check mode).
  returned: success
  type: bool
  sample: true
changed_names:
  description: The monitors this task really started or stopped (would, in check mode).
  returned: success
  type: list
  elements: str
  sample: [host, cpu]
msg:
  description: What the monitor commands said, one line per monitor.
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


def main():
    argument_spec = dict(
        COMMON_ARGUMENT_SPEC,
        state=dict(type="str", choices=["started", "stopped"], default="started"),
        names=dict(type="list", elements="str", required=True, aliases=["name"]),
        run_id=dict(type="str", required=True),
        log_dir=dict(type="path", required=True),
        interval=dict(type="float", default=1.0),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    want_running = params["state"] == "started"
    operation = "ensure-started" if want_running else "ensure-stopped"
    # One process checks every monitor's status and acts only where it differs.
    argv = cli_argv(params["python"], "monitor", operation=operation, log_dir=params["log_dir"],
                    name=params["names"], run_id=params["run_id"],
                    interval=params["interval"] if want_running else None, check=module.check_mode)
    result = run_cli(module, argv, params["project_dir"])
    if result.rc != 0 or result.doc is None:
        failure = result.failure("case_runners monitor -o %s" % operation)
        failure["msg"] = "%s: %s" % (failure["msg"], result.stderr.strip() or result.stdout.strip())
        module.fail_json(**failure)
    changed = result.doc.get("changed", [])
    module.exit_json(changed=bool(changed), changed_names=changed, running=want_running,
                     msg="\n".join(result.doc.get("messages", [])))


if __name__ == "__main__":
    main()
