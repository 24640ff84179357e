#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: resolve a run's cases on the controller before any host is touched.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: case_plan
short_description: Resolve and check every case and run var of a perfplay run, and create its run directory
description:
  - Runs C(python -m case_runners plan --request REQUEST.json) once in O(project_dir) on the controller (with
    C(--check) in check mode), which checks every run var and resolves every selected case, and returns the
    resolved configs, the rounds the playbook loops over, what each host needs and the run vars, checked and with
    their defaults.
  - A bad run is rejected with all its problems at once, each naming the run var or file, the key and the allowed
    values; a rejected run creates no run directory.
  - An action plugin, run on the controller whatever host the task names; it starts no module process.
  - Options are the run vars C(perfplay_<option>), passed as given (an AWX survey or C(-e key=value) gives strings);
    C(case_runners) converts them and applies the defaults that docs/run-vars.md lists. Left out, the default
    applies.
options:
  vendor:
    description: Vendor name, a directory C(vendor/<vendor>/) (run var C(perfplay_vendor)).
    type: raw
  runtime:
    description:
      - Where the cases run (run var C(perfplay_runtime)).
      - C(host), the host's perfplay venv; C(docker), one container per node per round from the image of
        C(vendor/<vendor>/docker_image/<framework>/).
    type: raw
  image:
    description:
      - With O(runtime=docker), how the images are built (run var C(perfplay_image)), over the vendor's
        C(container.build) defaults; an empty value drops a default.
      - "Keys: C(base_image), C(pip_index_url), C(pip_extra_index_url), C(pip_find_links) (a URL or a folder
        on the host, copied into the build), C(pip_trusted_host), C(ca_bundle) (a file on the host)."
    type: raw
  cases:
    description:
      - The selection (run var C(perfplay_cases)), checked by C(case_runners) (which also reports it missing).
      - "A list of mappings C({case, task, hardware, nnodes, nproc, repeat, data_dir, overrides, timeout_s,
        functional}), a FlagPerf mapping C({'case:framework:HW:nnodes:nproc:repeat': data_dir}), or case name strings."
      - Or any of these written as JSON or YAML text (an AWX survey's text field), read by C(case_runners).
    type: raw
  task:
    description:
      - The task of selections that do not name theirs (run var C(perfplay_task)).
      - C(training) runs the training case; C(inference) the case's inference pipeline (steps a-g, framework
        validation, ONNX export and the vendor's engine C(vendor/<vendor>/engines/<compiler>.py)), one process on
        one device; C(base) a hardware benchmark (gemm, memory_bandwidth, memory_capacity, h2d, d2h, allreduce,
        allgather, p2p), against the vendor's peaks; C(generate) an LLM case's generation latency (time to first
        token, time per output token, tokens/s; C(llama)).
      - With no O(cases), C(base) runs the vendor's base suite (C(vendor/<vendor>/base.yaml)), any other task the
        default case.
    type: raw
  results_dir:
    description: Results root on the controller (run var C(perfplay_results_dir)); default C(<project_dir>/results).
    type: raw
  history_db:
    description: The history database the run is indexed into at its end (run var C(perfplay_history_db)); default
      C(<results_dir>/perfplay.sqlite). Refused when it is a directory, another program's database or a newer
      perfplay's.
    type: raw
  run_id:
    description: Name of the run directory (run var C(perfplay_run_id)); default C(run<YYYYmmddHHMMSS>-<hex>).
    type: raw
  case_timeout_s:
    description: Timeout in seconds for every case's round (run var C(perfplay_case_timeout_s)); default the case's own.
    type: raw
  hosts:
    description: Inventory hosts of the run in node order (run var C(perfplay_host_pattern)); a case with
      C(nnodes=N) runs on the first N.
    type: list
    elements: str
    required: true
  nic:
    description:
      - "The network interface of the collectives per host, C({host: name}) for the hosts that set the host var
        C(perfplay_nic), or one name for every host; checked to be an interface name (that the host has it, by
        the host preflight)."
    type: raw
  run_var_names:
    description:
      - Names of the vars set for the controller that are perfplay's or upper-case (C(query('ansible.builtin.varnames',
        ...)) with the pattern C(QUERIED_NAMES) of C(case_runners/plan/run_vars.py)), so that none is ignored.
      - A renamed run var is an error naming its new name, another unknown C(perfplay_*) name an error naming the
        closest run var, and a FlagPerf setting (C(VENDOR), C(CASES), C(HOSTS), ...) an error pointing to
        C(python -m case_runners import-flagperf).
    type: list
    elements: str
  host_var_names:
    description:
      - "The same names set for each host of the run (its inventory host and group vars), C({host: [names]}): an
        unknown one on a remote host is an error naming the var and the host."
    type: dict
  clear_caches:
    description: Drop the page cache before each round (run var C(perfplay_clear_caches)); a boolean.
    type: raw
  monitor_interval_s:
    description: Seconds between monitor samples (run var C(perfplay_monitor_interval_s)).
    type: raw
  progress_interval_s:
    description:
      - Seconds between two progress lines of a running round, per host (run var C(perfplay_progress_interval_s)).
        Each line costs one module run on the host.
    type: raw
  rdzv_timeout_s:
    description:
      - Seconds the nodes of a multi-node round have to meet at node 0 (run var C(perfplay_rdzv_timeout_s)).
      - Unset, the launcher's default applies (C(PERFPLAY_RDZV_TIMEOUT_S) in the host's environment, else its own).
    type: raw
  heartbeat_timeout_s:
    description:
      - Seconds of silence after which a node of a multi-node round counts as lost (run var
        C(perfplay_heartbeat_timeout_s)).
    type: raw
  master_port:
    description:
      - Rendezvous port on the first node of multi-node cases (run var C(perfplay_master_port)).
      - 0 lets that node pick a free port at preflight, so concurrent runs do not collide; a fixed port (for a
        firewall) is checked free at preflight.
      - Single-node cases use a free port chosen by the launcher.
    type: raw
  min_free_bytes:
    description:
      - Bytes that must be free in the results dir (run var C(perfplay_min_free_bytes)), checked here on the
        controller and by the host preflight on every host; a run with less does not start.
    type: raw
  bundle:
    description:
      - Write C(perfplay-src.tar) into the run directory, the checkout (C(case_runners/), C(vendor/),
        C(requirements.txt)) that remote hosts unpack and run; it stays with the results as a record of what ran.
    type: bool
    default: true
extends_documentation_fragment:
  - perfplay_cli
  - perfplay_attributes
attributes:
  check_mode:
    support: full
    details: Runs the plan with C(--check), which validates everything and writes nothing.
  idempotent:
    support: none
    details: Every successful run creates a new run directory.
notes:
  - Runs on the controller (C(localhost)).
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Resolve every case of the run
  case_plan:
    project_dir: "{{ playbook_dir | dirname }}"
    python: "{{ ansible_playbook_python }}"
    vendor: cpu
    cases:
      - case: digits_cnn
        hardware: CPU
        nproc: 2
        repeat: 3
    hosts: "{{ groups['perfplay_hosts'] }}"
  register: plan

- name: Run the resnet50 inference case (ONNX export, the cpu vendor's ONNX Runtime engine)
  case_plan:
    project_dir: /opt/perfplay
    vendor: cpu
    task: inference
    cases: [resnet50]
    hosts: [localhost]

- name: Run the cpu vendor's base suite (GEMM, memory, transfers, collectives)
  case_plan:
    project_dir: /opt/perfplay
    vendor: cpu
    task: base
    hosts: [localhost]

- name: Select a case the FlagPerf way
  case_plan:
    project_dir: /opt/perfplay
    vendor: nvidia
    cases:
      "resnet50:pytorch:A100:1:8:3": /data/imagenet
    hosts: [gpu01]
"""

RETURN = r"""
run_id:
  description: Name of the run directory (null in check mode).
  returned: success
  type: str
  sample: run20250101120000
run_dir:
  description: Absolute path of the run directory on the controller (null in check mode).
  returned: success
  type: str
  sample: /opt/perfplay/results/run20250101120000
cases:
  description:
    - Resolved config of every case (schema C(perfplay.resolved_config/1)).
    - An inference case has C(task=inference), its C(inference) configurations and parameters, and the C(notes) its
      overrides produced (a key a vendor file adds is also a module warning).
    - A base benchmark has C(task=base) and its C(params) (sizes, precisions, iterations).
  returned: success
  type: list
  elements: dict
rounds:
  description: One item per case and round, in run order.
  returned: success
  type: list
  elements: dict
  contains:
    case_id: {description: Case id, e.g. C(digits_cnn_CPUx1x1)., type: str}
    case: {description: Case name., type: str}
    round: {description: Round number, from 1., type: int}
    nnodes: {description: Nodes of the case., type: int}
    nproc: {description: Processes per node., type: int}
    timeout_s: {description: Case timeout in seconds., type: int}
    config: {description: Resolved config path on the controller (null in check mode)., type: str}
    rel_dir: {description: Round directory relative to the run directory, C(<case_id>/round<N>)., type: str}
    hosts: {description: The hosts of this round, node rank = index., type: list}
    master_port: {description: "Rendezvous port; 0: picked by node 0 at preflight (multi-node) or by the launcher.",
                  type: int}
  sample:
    - case_id: digits_cnn_CPUx1x1
      case: digits_cnn
      round: 1
      nnodes: 1
      nproc: 1
      timeout_s: 1800
      config: /opt/perfplay/results/run20250101120000/digits_cnn_CPUx1x1/resolved_config.json
      rel_dir: digits_cnn_CPUx1x1/round1
      hosts: [localhost]
      master_port: 0
bundle:
  description: The checkout bundle (path on the controller, sha256); null in check mode or without O(bundle).
  returned: success
  type: dict
  sample: {path: /opt/perfplay/results/run20250101120000/perfplay-src.tar, sha256: 9f2c...}
images:
  description:
    - With O(runtime=docker), the image of each framework of the run, C(ref) being C(<name>:<tag>), the tag a
      hash of its inputs; empty with O(runtime=host).
  returned: success
  type: list
  elements: dict
  sample:
    - ref: perfplay-cpu-pytorch:21354e1214a921b4
      name: perfplay-cpu-pytorch
      tag: 21354e1214a921b4
      vendor: cpu
      framework: pytorch
      context: vendor/cpu/docker_image/pytorch
      settings: {base_image: "python:3.11-slim-bookworm"}
host_needs:
  description:
    - Per host of the run, the most processes a round puts on it, the cases it takes part in, whether it
      is node 0 of a multi-node round (it then hosts the rendezvous on the master port), the images
      (refs) its rounds run in, the vendor cases' requirements files (relative to the checkout) its rounds
      need, and (no_deps) those of them pip installs without their packages' dependencies (a stack's pins that
      list all it imports).
  returned: success
  type: dict
  sample: {localhost: {nproc: 2, case_ids: [digits_cnn_CPUx1x2], master: false, images: [], requirements: [],
                       no_deps: []}}
run_vars:
  description:
    - The run vars, checked, converted to their types and with their defaults (C(case_runners/plan/run_vars.py)).
    - C(case_timeout_s) null, each case's own timeout; C(rdzv_timeout_s) null, the launcher's default. C(nic) maps
      the hosts that set C(perfplay_nic) to it. C(history_db) is the history database's absolute path.
  returned: success
  type: dict
  sample: {vendor: cpu, runtime: host, task: training, case_timeout_s: null, clear_caches: false,
           monitor_interval_s: 1.0, progress_interval_s: 30.0, rdzv_timeout_s: null, heartbeat_timeout_s: 10.0,
           master_port: 0, min_free_bytes: 1073741824, hosts: [localhost], nic: {},
           history_db: /opt/perfplay/results/perfplay.sqlite}
errors:
  description: Every problem found, each naming the run var or file, the key and the allowed values.
  returned: failure
  type: list
  elements: str
  sample: ["key 'perfplay_vendor': unknown vendor 'acme' (allowed: cpu, nvidia)"]
"""
