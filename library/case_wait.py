#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: wait for the background launcher of one node of a case round.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: case_wait
short_description: Wait for one node of a perfplay case round, with a progress line per interval
description:
  - Waits for the launcher that M(case_launch) started on the host, by long polls of C(python -m case_runners
    wait), each returning when the launcher ends or after O(for_s) seconds; never a module process per second.
  - "Its action plugin (playbooks/action_plugins/case_wait.py) repeats the poll until the node ends and prints one
    line per host and poll, such as C(node 0 on node1, digits_cnn_CPUx1x1 round 1: training: epoch 2, step 120,
    loss 0.31, 812.4 samples/s (rank 0); 45 s of 1800 s). A host that stops answering is unreachable at once."
  - Fails when the node's status is not C(success) (C(failed), C(timeout) or C(interrupted)), and when the
    launcher still runs O(margin_s) seconds after O(timeout_s); the node result is returned either way.
options:
  log_dir:
    description: The node directory the launcher writes.
    type: path
    required: true
  run_id:
    description: The run id of the launch.
    type: str
    required: true
  launcher:
    description: The launcher's identity, RV(case_launch.launcher).
    type: dict
    required: true
  for_s:
    description:
      - Seconds one poll waits before it reports progress (run var C(perfplay_progress_interval_s)); default
        C(case_runners)' own, which each poll returns (RV(for_s)).
    type: float
  timeout_s:
    description: The case timeout in seconds (the launcher stops the ranks then); shown in the progress line.
    type: float
  margin_s:
    description:
      - (action plugin) Seconds after O(timeout_s) before the wait gives up on a launcher that has not ended;
        default the action plugin's C(DEFAULT_MARGIN_S), 120.
    type: float
  label:
    description: (action plugin) What the progress line names first, for example the node, host, case and round.
    type: str
  inline_archive:
    description:
      - Once the node has succeeded, also answer its directory as a base64 C(.tar.gz) (RV(archive_b64)) when it
        packs into at most this many bytes.
    type: int
  first_poll:
    description:
      - (action plugin) The result of a first poll already made, RV(case_launch.wait) (M(case_launch) with
        O(case_launch#module:wait_s)). The wait takes it instead of a poll of its own, unless the node succeeded
        and O(fetch_to) needs its directory (then one poll brings it).
    type: dict
  fetch_to:
    description:
      - (action plugin) The round directory on the controller to unpack a succeeded node's directory into, from the
        wait's last answer (O(inline_archive) set by the action), so that a remote node that succeeded needs no
        M(case_finish); leave it out where the host writes into the results itself (the controller).
    type: path
extends_documentation_fragment:
  - perfplay_cli
  - perfplay_attributes
attributes:
  check_mode:
    support: full
    details: Reads only.
  idempotent:
    support: full
    details: Waits and reads; changes nothing.
  action:
    support: full
    details: The action plugin of the same name repeats the poll and prints the progress lines.
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Wait for this node of the round
  case_wait:
    project_dir: /opt/perfplay
    python: /opt/perfplay/venv/bin/python
    log_dir: /opt/perfplay/results/run20250101120000/digits_cnn_CPUx1x1/round1/localhost_noderank0
    run_id: run20250101120000
    launcher: "{{ launch.launcher }}"
    timeout_s: 1800
    label: node 0 on localhost, digits_cnn_CPUx1x1 round 1
"""

RETURN = r"""
finished:
  description: Whether the launcher has ended.
  returned: always
  type: bool
  sample: true
status:
  description: Node status (C(running) while it runs).
  returned: always
  type: str
  sample: success
reason:
  description: Why the node did not succeed (null on success).
  returned: always
  type: str
  sample: "stopped: node 1 (node2) failed: rank 3 on node2 was killed by SIGKILL"
node_result:
  description: Content of C(node_result.json) (schema C(perfplay.node_result/1)); null while running.
  returned: always
  type: dict
progress:
  description: Where the round stands while it runs (phase, epoch, step, loss, samples_per_s, metric, elapsed_s).
  returned: while running
  type: dict
  sample: {phase: training, rank: 0, epoch: 2, step: 120, loss: 0.31, samples_per_s: 812.4, elapsed_s: 45.0}
for_s:
  description: The seconds the poll waited at most.
  returned: while running
  type: float
  sample: 30.0
line:
  description: The progress as one line.
  returned: while running
  type: str
  sample: "training: epoch 2, step 120, loss 0.31, 812.4 samples/s (rank 0); 45 s of 1800 s"
archive_b64:
  description:
    - With O(inline_archive), once the node succeeded, its directory as a base64 C(.tar.gz); null when it is over
      O(inline_archive) bytes. The action plugin removes it from the result after unpacking it.
  returned: with inline_archive, when the node succeeded
  type: str
fetched:
  description: (action plugin) The node directory on the controller, after O(fetch_to).
  returned: with fetch_to, when the node succeeded and its directory came with the answer
  type: str
polls:
  description: (action plugin) How many polls the wait took.
  returned: always
  type: int
  sample: 3
"""

import json

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json, wait_outcome
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, run_json, wait_outcome

ARGUMENT_SPEC = dict(
    COMMON_ARGUMENT_SPEC,
    log_dir=dict(type="path", required=True),
    run_id=dict(type="str", required=True),
    launcher=dict(type="dict", required=True),
    for_s=dict(type="float"),
    timeout_s=dict(type="float"),
    margin_s=dict(type="float"),
    label=dict(type="str"),
    inline_archive=dict(type="int"),
    fetch_to=dict(type="path"),
    first_poll=dict(type="dict"),
)


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    argv = cli_argv(params["python"], "wait", log_dir=params["log_dir"], run_id=params["run_id"],
                    launcher=json.dumps(params["launcher"]), timeout_s=params["timeout_s"], for_s=params["for_s"],
                    inline_archive=params["inline_archive"])
    outcome = wait_outcome(run_json(module, argv, params["project_dir"], "case_runners wait").doc)
    if outcome.get("failed"):
        module.fail_json(**outcome)
    module.exit_json(**outcome)

if __name__ == "__main__":
    main()
