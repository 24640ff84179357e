#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: stop what is left of one run on a host.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_cleanup
short_description: Stop what is left of a perfplay run on a host, and nothing else
description:
  - Runs C(python -m case_runners cleanup) on the host.
  - Stops the processes named by the run's pid files under O(dir), C(<role>.<run_id>.pid) of launchers, ranks
    and monitor daemons, each only while it still is that process (same pid, start time and pid namespace, with
    C(PERFPLAY_RUN_ID=<run_id>) in its environment), with the members of its session that carry the run id
    (a rank's data-loader workers). Never matches on a command line.
  - Sends SIGTERM, then SIGKILL to those still alive after O(grace_s) seconds.
  - Removes stale pid files.
  - With O(containers=true) (docker runtime), first removes the run's containers (label C(perfplay.run_id)), or
    only those of O(round).
options:
  run_id:
    description: Run id, for example C(run20250101120000-a1b2c3).
    type: str
    required: true
  dir:
    description:
      - Where the run's pid files are, searched recursively; the host's run directory for a whole run, one node
        directory of a round for the sweep after a failed round (then only that round's processes are touched).
      - A directory that does not exist holds no process of the run.
      - Default C(<project_dir>/results/<run_id>), where a run with the default results root keeps them.
    type: path
  grace_s:
    description: Seconds between SIGTERM and SIGKILL; default C(case_runners)' own.
    type: float
  containers:
    description: Also remove the run's containers (needs the Docker SDK in O(python)).
    type: bool
    default: false
  round:
    description: With O(containers=true), only the containers of this round, C(<case_id>/round<N>).
    type: str
extends_documentation_fragment:
  - perfplay_cli
  - perfplay_attributes
attributes:
  check_mode:
    support: full
    details: Lists what it would stop and remove; changes nothing.
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
    project_dir: /opt/perfplay
    python: /opt/perfplay/venv/bin/python
    run_id: run20250101120000-a1b2c3
    dir: /opt/perfplay/results/run20250101120000-a1b2c3
    grace_s: 5
  register: cleanup
"""

RETURN = r"""
processes:
  description: The live processes of the run found (and signalled unless in check mode).
  returned: success
  type: list
  elements: dict
  sample: [{pid: 4242, start: 81234567, pidns: 4026531836, role: launcher,
            pid_file: "/opt/perfplay/results/run20250101120000-a1b2c3/digits_cnn_CPUx1x1/round1/node1_noderank0/\
              launcher.run20250101120000-a1b2c3.pid",
            argv: [/opt/perfplay/venv/bin/python, -m, case_runners, launch]}]
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
stale_pid_files:
  description: Pid files of the run that name no live process of it (removed unless in check mode).
  returned: success
  type: list
  elements: str
containers:
  description: Names of the run's containers found (and removed unless in check mode).
  returned: success
  type: list
  elements: str
  sample: [perfplay-run20250101120000-a1b2c3-digits_cnn_CPUx1x2-round1-n0]
"""

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json

CHANGES = ("terminated", "killed", "stale_pid_files", "containers")


def main() -> None:
    argument_spec = dict(
        COMMON_ARGUMENT_SPEC,
        run_id=dict(type="str", required=True),
        dir=dict(type="path"),
        grace_s=dict(type="float"),
        containers=dict(type="bool", default=False),
        round=dict(type="str"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    if params["grace_s"] is not None and params["grace_s"] < 0:
        module.fail_json(msg="grace_s must be >= 0")
    argv = cli_argv(params["python"], "cleanup", run_id=params["run_id"], dir=params["dir"],
                    grace_s=params["grace_s"], containers=params["containers"], round=params["round"],
                    check=module.check_mode)
    doc = run_json(module, argv, params["project_dir"], "case_runners cleanup", check_rc=True).doc
    # In check mode nothing is signalled: every process found is a change it would make.
    changed = any(doc.get(key) for key in CHANGES + (("processes",) if module.check_mode else ()))
    module.exit_json(changed=changed, **doc)


if __name__ == "__main__":
    main()
