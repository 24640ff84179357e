#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: start this node's ranks of one case round and wait for them.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: case_launch
short_description: Start one node of a perfplay case round in the background
description:
  - Starts C(python -m case_runners launch --detach) on the host; the node's launcher runs in a session of its
    own, detached from Ansible, and the module returns with its identity (RV(launcher)). With O(wait_s) the same
    module run then makes M(case_wait)'s first poll (RV(wait)), so that a round shorter than that takes one module
    run per host, not two; M(case_wait) polls on while the node runs, and M(case_finish) ends a node that did not
    succeed.
  - On the controller itself (a local connection, no become, no task environment) its action runs the same
    command from the controller, without a module process (C(playbooks/action_plugins/case_launch.py)), so that a
    round there costs no module run at all.
  - The launcher starts the node's ranks and waits for them (bounded by O(timeout_s)), then writes
    C(node_result.json) in O(log_dir); its own output goes to C(launcher.log) there.
  - With O(config_content) (a host that is not the controller), the resolved config goes to C(launch) on its
    standard input; C(launch) checks it and writes it to O(config) atomically before it starts the launcher.
    C(changed) either way, as a launch starts processes.
  - On a multi-node round (the config's C(nnodes) > 1) run it on every host of the round, one node each. The
    launchers first meet at node 0, which listens on O(master_addr):O(master_port) (the one port to open
    between the hosts) and then picks a free port for torch's TCPStore. A node that does not join within
    O(rdzv_timeout_s) fails the round on every node, naming the missing node or the unreachable address.
  - With the docker runtime (the config's C(runtime.kind) is C(docker)), the launcher runs in a container of
    the config's image, one per node per round, with the host's network; the process on the host creates
    it through the Docker SDK, waits for it, keeps its output in C(container.log) and removes it on every
    outcome (success, failure, timeout, a signal). C(node_result.json) then also names the C(container), the
    C(image) and the C(container_duration_s).
  - For the length of the round the launcher runs the host monitor and the vendor's accelerator monitor (when
    the vendor has one) in O(log_dir). They are owned by it and stop when it ends, even if it is killed. It holds
    a pid file there (C(launcher.<run_id>.pid)) and one per rank (C(rank<R>.<run_id>.pid)), which
    M(run_cleanup) trusts only while pid, start time and run id still match. Ranks die with their launcher.
  - Once started, the launchers exchange heartbeats. A rank that fails on any node, a node that times out or
    is interrupted, or a node silent for O(heartbeat_timeout_s) stops the ranks of every node, within seconds;
    the reason of every other node starts with C(stopped) and names the node, host and rank that failed first.
    A node that loses node 0 stops its own ranks.
options:
  config:
    description: Resolved config (JSON) of the case, on the host.
    type: path
    required: true
  config_content:
    description:
      - The resolved config, checked and written to O(config) (mode 0644, its directory created 0700 where
        missing) before the launch.
      - A config that is not a valid C(perfplay.resolved_config) fails the task before anything starts.
    type: dict
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
  timeout_s:
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
      - Network interface of the collectives, set as C(GLOO_SOCKET_IFNAME) and C(<BACKEND>_SOCKET_IFNAME) of
        the ranks unless the environment already sets them.
      - Default on a multi-node round, the interface that routes to O(master_addr); on a single node, none.
      - An empty string is the same as leaving it out.
    type: str
  rdzv_timeout_s:
    description:
      - Seconds the nodes of a multi-node round have to meet at node 0 (a wrong port or address fails after
        this long).
      - Default C(PERFPLAY_RDZV_TIMEOUT_S) from O(env) or the host's environment, else C(case_runners)' own.
    type: float
  heartbeat_timeout_s:
    description: Seconds of silence after which a node of a multi-node round counts as lost; default
      C(case_runners)' own.
    type: float
  monitors:
    description: Run the round's monitors (the host's and the vendor's) for the length of the round.
    type: bool
    default: true
  monitor_interval_s:
    description: Seconds between monitor samples; default C(case_runners)' own.
    type: float
  env:
    description: Extra environment for the launcher and its ranks (for example C(NCCL_SOCKET_IFNAME)).
    type: dict
    default: {}
  wait_s:
    description:
      - Once the launcher has started, wait up to this many seconds for it, as one poll of M(case_wait) with
        O(case_wait#module:for_s) does, and return that poll's result (RV(wait)) for M(case_wait)'s
        O(case_wait#module:first_poll). Unset, the module returns at once.
    type: float
extends_documentation_fragment:
  - perfplay_cli
  - perfplay_attributes
attributes:
  check_mode:
    support: full
    details: Launches nothing and predicts C(changed=true).
  idempotent:
    support: none
    details: Every call runs the case again.
author:
  - perfplay contributors
"""
EXAMPLES = r"""
- name: Start node 0 of round 1
  case_launch:
    project_dir: /opt/perfplay
    python: /opt/perfplay/venv/bin/python
    config: /opt/perfplay/results/run20250101120000/digits_cnn_CPUx1x1/resolved_config.json
    log_dir: /opt/perfplay/results/run20250101120000/digits_cnn_CPUx1x1/round1/localhost_noderank0
    run_id: run20250101120000
    timeout_s: 1800
  register: launch

- name: Start this host's node of a two-node round (on both hosts at once)
  case_launch:
    project_dir: /opt/perfplay
    python: /opt/perfplay/venv/bin/python
    config: /var/tmp/perfplay/run20250101120000/resnet50_A100x2x8/resolved_config.json
    config_content: "{{ lookup('ansible.builtin.file', case_dir ~ '/resolved_config.json') | from_json }}"
    log_dir: "/var/tmp/perfplay/run20250101120000/resnet50_A100x2x8/round1/{{ node_dir }}"
    run_id: run20250101120000
    node_rank: "{{ perfplay_node_rank }}"
    node_name: "{{ inventory_hostname }}"
    master_addr: 10.231.77.11
    master_port: 29500
    nic: ib0
    rdzv_timeout_s: 60
    heartbeat_timeout_s: 10
    timeout_s: 3600
"""

RETURN = r"""
started:
  description: Whether the launcher was started (false only when it could not even start).
  returned: always
  type: bool
  sample: true
launcher:
  description:
    - The launcher's identity, for M(case_wait) and M(case_finish); null in check mode or when it did not start.
    - C(started_at) is its start in seconds since the epoch.
  returned: always
  type: dict
  sample: {pid: 48211, start: 81234567, pidns: 4026531836, started_at: 1795376237.026}
log:
  description: The launcher's own output (C(launcher.log) in O(log_dir)).
  returned: when launched
  type: str
  sample: /opt/perfplay/results/run20250101120000/digits_cnn_CPUx1x1/round1/localhost_noderank0/launcher.log
wait:
  description:
    - With O(wait_s), the first poll's result, as M(case_wait) returns it (C(finished), C(status), C(reason),
      C(node_result); C(progress), C(line) and C(for_s) while the node runs; C(failed) and C(msg) when it ended
      without succeeding). The task itself does not fail on it; M(case_wait) does, given it as
      O(case_wait#module:first_poll).
  returned: with wait_s, when launched
  type: dict
  sample: {changed: false, finished: true, status: success, reason: null, node_result: {status: success}}
cmd:
  description: The argv that was run.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import (
        LAUNCH_ARGUMENT_SPEC,
        launch_argv,
        launch_input,
        launch_result,
        run_json,
    )
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import LAUNCH_ARGUMENT_SPEC, launch_argv, launch_input, launch_result, run_json


def main() -> None:
    module = AnsibleModule(argument_spec=LAUNCH_ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    argv = launch_argv(params)
    if module.check_mode:
        module.exit_json(changed=True, started=False, launcher=None, cmd=argv)
    env, stdin = launch_input(params)
    doc = run_json(module, argv, params["project_dir"], "case_runners launch --detach", environ_update=env,
                   data=stdin).doc
    result = launch_result(params, argv, doc)
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
