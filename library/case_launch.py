#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: start this node's ranks of one case round and wait for them.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: case_launch
short_description: Run one node of a perfplay case round and return its node result
description:
  - Runs C(python -m case_runners launch) on the host, which starts the node's ranks, waits for them
    (bounded by O(timeout)) and writes C(node_result.json) in O(log_dir).
  - Fails when the node's status is not C(success) (C(failed), C(timeout) or C(interrupted)); the node
    result is returned either way, so the round can still be recorded.
  - Use it with C(async) (case timeout plus a margin) and C(poll), as a round outlives the SSH timeout. On a
    multi-node round the margin must also cover O(rdzv_timeout), as the case timeout starts with the ranks.
  - On a multi-node round (the config's C(nnodes) > 1) run it on every host at once, one node each. The
    launchers first meet at node 0, which listens on O(master_addr):O(master_port) (the one port to open
    between the hosts) and then picks a free port for torch's TCPStore. A node that does not join within
    O(rdzv_timeout) fails the round on every node, naming the missing node or the unreachable address.
  - With the docker runtime (the config's C(runtime.kind) is C(docker)), the launcher runs in a container of
    the config's image, one per node per round, with the host's network; the process on the host creates
    it through the Docker SDK, waits for it, keeps its output in C(container.log) and removes it on every
    outcome (success, failure, timeout, a signal). C(node_result.json) then also names the C(container), the
    C(image) and the C(container_duration_s).
  - For the length of the round the launcher runs the host monitor and the vendor's accelerator monitor (when
    the vendor has one) in O(log_dir). They are owned by it and stop when it ends, even if it is killed. It holds
    a pid file there (C(launcher.<run_id>.pid)) and one per rank (C(rank<R>.<run_id>.pid)), which
    M(run_cleanup) trusts only while pid, start time and run id still match. Ranks die with their launcher.
  - Under C(async), the launcher also records where Ansible keeps this job's file, so that M(run_cleanup) can
    remove it when the controller did not live to do so.
  - Once started, the launchers exchange heartbeats. A rank that fails on any node, a node that times out or
    is interrupted, or a node silent for O(heartbeat_timeout) stops the ranks of every node, within seconds;
    the reason of every other node starts with C(stopped) and names the node, host and rank that failed
    first (see RV(reason)). A node that loses node 0 stops its own ranks.
options:
  project_dir:
    description: perfplay checkout on the host.
    type: path
    required: true
  python:
    description: Python of the host's perfplay venv. Defaults to the module's own interpreter.
    type: str
  config:
    description: Resolved config (JSON) of the case, on the host.
    type: path
    required: true
  log_dir:
    description: Node directory C(<run_dir>/<case_id>/round<N>/<host>_noderank<X>); created if missing.
    type: path
    required: true
  node_rank:
    description: Rank of this node, 0 on the node that hosts the rendezvous.
    type: int
    default: 0
  master_addr:
    description: Address of node 0 that every node can reach; node 0 binds the rendezvous port on it.
    type: str
    default: 127.0.0.1
  master_port:
    description:
      - Rendezvous port on node 0 (run var C(perfplay_master_port)); required on a multi-node round.
      - C(0) lets a single-node launcher pick a free port.
    type: int
    default: 0
  timeout:
    description: Seconds before the launcher stops the ranks; default the case's C(timeout_s).
    type: float
  run_id:
    description:
      - Run id, carried in every process's argv or environment so a cleanup can find them.
      - Node 0 rejects a node that joins with another run id.
    type: str
    required: true
  node_name:
    description:
      - This node's name in failure reasons and in C(node_result.json) (C(host), C(node_name)), for example
        the inventory hostname.
      - Defaults to the host's hostname.
    type: str
  nic:
    description:
      - Network interface of the collectives, set as C(GLOO_SOCKET_IFNAME) and C(NCCL_SOCKET_IFNAME) of the
        ranks unless the environment already sets them.
      - Default on a multi-node round, the interface that routes to O(master_addr); on a single node, none.
      - An empty string is the same as leaving it out.
    type: str
  rdzv_timeout:
    description:
      - Seconds the nodes of a multi-node round have to meet at node 0 (a wrong port or address fails after
        this long).
      - Default C(PERFPLAY_RDZV_TIMEOUT_S) from O(env) or the host's environment, else 30.
    type: float
  heartbeat_timeout:
    description: Seconds of silence after which a node of a multi-node round counts as lost; default 10.
    type: float
  monitors:
    description: Run the round's monitors (the host's and the vendor's) for the length of the round.
    type: bool
    default: true
  monitor_interval:
    description: Seconds between monitor samples.
    type: float
    default: 1.0
  env:
    description: Extra environment for the launcher and its ranks (for example C(NCCL_SOCKET_IFNAME)).
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    details: Launches nothing and predicts C(changed=true).
  diff_mode:
    support: none
  idempotent:
    support: none
    details: Every call runs the case again.
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Run node 0 of round 1
  case_launch:
    project_dir: /opt/perfplay
    python: /opt/perfplay/venv/bin/python
    config: /opt/perfplay/results/run20250101120000/digits_cnn_CPUx1x1/resolved_config.json
    log_dir: /opt/perfplay/results/run20250101120000/digits_cnn_CPUx1x1/round1/localhost_noderank0
    run_id: run20250101120000
    timeout: 1800
  async: 1920
  poll: 1

- name: Run this host's node of a two-node round (on both hosts at once)
  case_launch:
    project_dir: /opt/perfplay
    python: /opt/perfplay/venv/bin/python
    config: /opt/perfplay/results/run20250101120000/resnet50_A100x2x8/resolved_config.json
    log_dir: "{{ round_dir }}/{{ inventory_hostname }}_noderank{{ perfplay_node_rank }}"
    run_id: run20250101120000
    node_rank: "{{ perfplay_node_rank }}"
    node_name: "{{ inventory_hostname }}"
    master_addr: 10.231.77.11
    master_port: 29500
    nic: ib0
    rdzv_timeout: 60
    heartbeat_timeout: 10
    timeout: 3600
  vars:
    round_dir: /opt/perfplay/results/run20250101120000/resnet50_A100x2x8/round1
  async: 3780
  poll: 1
"""

RETURN = r"""
status:
  description: Node status.
  returned: always
  type: str
  sample: success
reason:
  description: Why the node did not succeed (null on success).
  returned: always
  type: str
  sample: "stopped: node 1 (node2) failed: rank 3 on node2 was killed by SIGKILL"
node_result:
  description:
    - Content of C(node_result.json) (schema C(perfplay.node_result/1)); empty in check mode.
    - C(host) and C(node_name) are O(node_name), C(hostname) the host's own name, C(master) node 0's
      rendezvous address and port, C(torch_port) the C(MASTER_PORT) the ranks used (node 0's pick on a
      multi-node round), C(nic) the interface of the collectives (null where none was chosen).
  returned: always
  type: dict
  sample:
    schema: perfplay.node_result/1
    node_rank: 0
    status: success
    reason: null
    ranks: {"0": {exit_code: 0, log: rank0.out.log}}
    duration_s: 42.1
    host: node01
    node_name: node01
    hostname: node01.example.com
    master: "10.231.77.11:29500"
    torch_port: 41873
    nic: ib0
cmd:
  description: The argv that was run.
  returned: always
  type: list
  elements: str
rc:
  description: Exit code of the launcher (0 success, 1 failed, 124 timeout, 130 interrupted).
  returned: when launched
  type: int
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, ansible_async_job, cli_argv, run_cli, tail
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, ansible_async_job, cli_argv, run_cli, tail

NODE_RESULT = "node_result.json"


def launch_argv(params, job=None):
    job = job or {}
    return cli_argv(
        params["python"], "launch",
        config=params["config"],
        log_dir=params["log_dir"],
        node_rank=params["node_rank"],
        master_addr=params["master_addr"],
        master_port=params["master_port"],
        timeout=params["timeout"],
        run_id=params["run_id"],
        node_name=params["node_name"] or None,
        nic=params["nic"] or None,
        rdzv_timeout=params["rdzv_timeout"],
        heartbeat_timeout=params["heartbeat_timeout"],
        no_monitors=not params["monitors"],
        monitor_interval=params["monitor_interval"],
        ansible_async_dir=job.get("dir"),
        ansible_job_writer=job.get("writer"),
    )


def read_node_result(log_dir):
    try:
        with open(os.path.join(log_dir, NODE_RESULT)) as handle:
            doc = json.load(handle)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def main():
    argument_spec = dict(
        COMMON_ARGUMENT_SPEC,
        config=dict(type="path", required=True),
        log_dir=dict(type="path", required=True),
        node_rank=dict(type="int", default=0),
        master_addr=dict(type="str", default="127.0.0.1"),
        master_port=dict(type="int", default=0),
        timeout=dict(type="float"),
        run_id=dict(type="str", required=True),
        node_name=dict(type="str"),
        nic=dict(type="str"),
        rdzv_timeout=dict(type="float"),
        heartbeat_timeout=dict(type="float"),
        monitors=dict(type="bool", default=True),
        monitor_interval=dict(type="float", default=1.0),
        env=dict(type="dict", default={}),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    argv = launch_argv(params, ansible_async_job())
    if module.check_mode:
        module.exit_json(changed=True, status="skipped", reason="check mode", node_result={}, cmd=argv)

    env = {str(key): str(value) for key, value in params["env"].items()}
    result = run_cli(module, argv, params["project_dir"], environ_update=env)
    node_result = result.doc or read_node_result(params["log_dir"])
    if node_result is None:
        module.fail_json(node_result={}, status="failed", reason="the launcher wrote no node result",
                         **result.failure("case_runners launch"))

    status = node_result.get("status")
    reason = node_result.get("reason")
    outcome = dict(changed=True, status=status, reason=reason, node_result=node_result, cmd=argv, rc=result.rc)
    if status != "success":
        module.fail_json(msg="node %s: %s: %s" % (params["node_rank"], status, reason),
                         stderr=tail(result.stderr), **outcome)
    module.exit_json(**outcome)


if __name__ == "__main__":
    main()
