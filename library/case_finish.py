#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: end one node of a case round: stop what is left of it, hand its directory to the controller.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: case_finish
short_description: End one node of a perfplay case round and collect its directory
description:
  - Runs C(python -m case_runners finish) on the host, after M(case_wait), whatever the node's outcome.
  - When the launcher still runs or the node did not succeed, stops what is left of the round on this host, as
    M(run_cleanup) does, in O(log_dir) only (and, with O(containers), the round's containers).
  - With O(archive), packs the node directory into that C(.tar.gz) on the host. The action plugin of the same name
    does that for O(fetch_to) (a host that is not the controller); it packs into its remote temporary directory,
    fetches the archive, unpacks it into O(fetch_to) on the controller and removes it on both sides.
options:
  log_dir:
    description: The node directory.
    type: path
    required: true
  run_id:
    description: The run id of the launch.
    type: str
    required: true
  launcher:
    description: The launcher's identity, RV(case_launch.launcher); leave it out when the launch did not start.
    type: dict
  grace_s:
    description: Seconds between SIGTERM and SIGKILL when something is left to stop; default C(case_runners)' own.
    type: float
  containers:
    description: (docker runtime) Also remove the round's containers on this host.
    type: bool
    default: false
  round:
    description: With O(containers), the round C(<case_id>/round<N>) whose containers go.
    type: str
  archive:
    description: Pack the node directory into this file on the host.
    type: path
  fetch_to:
    description:
      - (action plugin) The round directory on the controller to unpack the node directory into; leave it out
        where the host writes into the results itself (the controller).
    type: path
extends_documentation_fragment:
  - perfplay_cli
  - perfplay_attributes
attributes:
  check_mode:
    support: none
  idempotent:
    support: partial
    details: Stops only what is left; a second run finds nothing to stop, but packs the directory again.
  action:
    support: full
    details: The action plugin of the same name fetches and unpacks the archive for O(fetch_to).
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Finish this node of the round (stop what is left, fetch its directory)
  case_finish:
    project_dir: /opt/perfplay
    python: /opt/perfplay/venv/bin/python
    log_dir: /var/tmp/perfplay/run20250101120000/digits_cnn_CPUx2x1/round1/node2_noderank1
    run_id: run20250101120000
    launcher: "{{ launch.launcher | default(omit) }}"
    fetch_to: /opt/perfplay/results/run20250101120000/digits_cnn_CPUx2x1/round1
"""

RETURN = r"""
status:
  description: Node status from its C(node_result.json); C(failed) when there is none.
  returned: always
  type: str
  sample: success
reason:
  description: Why the node did not succeed (null on success).
  returned: always
  type: str
node_result:
  description: Content of C(node_result.json), null when the launcher wrote none.
  returned: always
  type: dict
cleanup:
  description: What was stopped (as RV(run_cleanup.terminated) and the rest); null when nothing had to be.
  returned: always
  type: dict
archive:
  description: The archive written, C({path, bytes}); null without O(archive).
  returned: always
  type: dict
fetched:
  description: (action plugin) The node directory on the controller, after O(fetch_to).
  returned: with fetch_to
  type: str
"""

import json

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json

ARGUMENT_SPEC = dict(
    COMMON_ARGUMENT_SPEC,
    log_dir=dict(type="path", required=True),
    run_id=dict(type="str", required=True),
    launcher=dict(type="dict"),
    grace_s=dict(type="float"),
    containers=dict(type="bool", default=False),
    round=dict(type="str"),
    archive=dict(type="path"),
    fetch_to=dict(type="path"),
)
STOPPED = ("terminated", "killed", "stale_pid_files", "containers")


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC)
    params = module.params
    argv = cli_argv(params["python"], "finish", log_dir=params["log_dir"], run_id=params["run_id"],
                    launcher=json.dumps(params["launcher"]) if params["launcher"] else None,
                    grace_s=params["grace_s"], containers=params["containers"], round=params["round"],
                    archive=params["archive"])
    doc = run_json(module, argv, params["project_dir"], "case_runners finish", check_rc=True).doc
    cleanup = doc.get("cleanup")
    changed = bool(doc.get("archive")) or any((cleanup or {}).get(key) for key in STOPPED)
    module.exit_json(changed=changed, status=doc.get("status"), reason=doc.get("reason"),
                     node_result=doc.get("node_result"), cleanup=cleanup, archive=doc.get("archive"), cmd=argv)


if __name__ == "__main__":
    main()
