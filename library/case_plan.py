#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: resolve a run's cases on the controller before any host is touched.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: case_plan
short_description: Resolve and check every case of a perfplay run, and create its run directory
description:
  - Runs C(python -m case_runners plan --request REQUEST.json) in O(project_dir) on the controller
    (with C(--check) in check mode) and returns the resolved configs of every selected case.
  - Validates the run vars that do not reach the plan request (O(clear_caches), O(monitor_interval),
    O(progress_interval), O(rdzv_timeout), O(heartbeat_timeout),
    O(master_port), O(hosts)) and reports them together with every error of the plan, so a bad run is
    rejected with all its problems at once, each naming the run var or file, the key and the allowed values.
  - Options mirror the run vars C(perfplay_<option>) (O(case_timeout) is C(perfplay_case_timeout));
    error messages name the run var.
  - Expands the plan into RV(rounds), one item per case and round, which the playbook loops over.
options:
  vendor:
    description: Vendor name, a directory C(vendor/<vendor>/) (run var C(perfplay_vendor)).
    type: raw
    default: cpu
  runtime:
    description:
      - Where the cases run (run var C(perfplay_runtime)).
      - C(host), the host's perfplay venv; C(docker), one container per node per round from the image of
        C(vendor/<vendor>/docker_image/<framework>/).
    type: raw
    default: host
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
      - "A list of mappings C({case, task, hardware, nnodes, nproc, repeat, data_dir, overrides, timeout_s}),
        a FlagPerf mapping C({'case:framework:HW:nnodes:nproc:repeat': data_dir}), or case name strings."
      - Or any of these written as JSON or YAML text (an AWX survey's text field), read by C(case_runners).
    type: raw
  task:
    description:
      - The task of selections that do not name theirs (run var C(perfplay_task)).
      - C(training) runs the training case; C(inference) the case's inference pipeline (seed 002, steps a-g,
        framework validation, ONNX export and the vendor's engine C(vendor/<vendor>/engines/<compiler>.py)),
        one process on one device.
    type: raw
    default: training
  results_dir:
    description: Results root on the controller (run var C(perfplay_results_dir)); default C(<project_dir>/results).
    type: raw
  run_id:
    description: Name of the run directory (run var C(perfplay_run_id)); default C(run<YYYYmmddHHMMSS>).
    type: raw
  case_timeout:
    description: Timeout in seconds for every case's round (run var C(perfplay_case_timeout)); default the case's own.
    type: raw
  hosts:
    description: Inventory hosts of the run in node order; a case with C(nnodes=N) runs on the first N.
    type: list
    elements: str
    required: true
  clear_caches:
    description: Drop the page cache before each round (run var C(perfplay_clear_caches)); a bool or C(true)/C(false).
    type: raw
    default: false
  monitor_interval:
    description: Seconds between monitor samples (run var C(perfplay_monitor_interval)); a number > 0.
    type: raw
    default: 1.0
  progress_interval:
    description:
      - Seconds between two progress lines of a running round, per host (run var C(perfplay_progress_interval));
        1-3600. Each line costs one module run on the host.
    type: raw
    default: 30.0
  rdzv_timeout:
    description:
      - Seconds the nodes of a multi-node round have to meet at node 0 (run var C(perfplay_rdzv_timeout)), 1-86400.
      - Unset, the launcher's default applies (C(PERFPLAY_RDZV_TIMEOUT_S) in the host's environment, else 30).
    type: raw
  heartbeat_timeout:
    description:
      - Seconds of silence after which a node of a multi-node round counts as lost (run var
        C(perfplay_heartbeat_timeout)), 1-3600; unset, 10.
    type: raw
  master_port:
    description:
      - Rendezvous port on the first node of multi-node cases (run var C(perfplay_master_port)), 0-65535.
      - 0 (the default) lets that node pick a free port at preflight, so concurrent runs do not collide; a
        fixed port (for a firewall) is checked free at preflight.
      - Single-node cases use a free port chosen by the launcher.
    type: raw
    default: 0
  min_free_bytes:
    description:
      - Bytes that must be free in the results dir (run var C(perfplay_min_free_bytes)), checked here on the
        controller and by the host preflight on every host; a run with less does not start. Default 1 GiB.
    type: raw
  bundle:
    description:
      - Write C(perfplay-src.tar) into the run directory, the checkout (C(case_runners/), C(vendor/),
        C(requirements.txt)) that remote hosts unpack and run; it stays with the results as a record of what ran.
    type: bool
    default: true
extends_documentation_fragment:
  - perfplay_cli
attributes:
  check_mode:
    support: full
    details: Runs the plan with C(--check), which validates everything and writes nothing.
  diff_mode:
    support: none
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
      (refs) its rounds run in, and the vendor cases' requirements files (relative to the checkout) its rounds
      need.
  returned: success
  type: dict
  sample: {localhost: {nproc: 2, case_ids: [digits_cnn_CPUx1x2], master: false, images: [], requirements: []}}
run_vars:
  description: The run vars after validation, with their types fixed.
  returned: success
  type: dict
  sample: {vendor: cpu, runtime: host, clear_caches: false, monitor_interval: 1.0, progress_interval: 30.0,
           rdzv_timeout: null, heartbeat_timeout: null, master_port: 0,
           hosts: [localhost], min_free_bytes: 1073741824}
errors:
  description: Every problem found, each naming the run var or file, the key and the allowed values.
  returned: failure
  type: list
  elements: str
  sample: ["key 'perfplay_vendor': unknown vendor 'acme' (allowed: cpu, nvidia)"]
"""

import os

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, request_file, run_json
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, request_file, run_json

RUN_VARS = "run vars"
TRUE_WORDS = ("true",)
FALSE_WORDS = ("false",)


def _error(option, message, allowed=None):
    """Same shape as case_runners' ConfigError: "<file>: key '<key>': <message> (allowed: ...)"."""
    text = "%s: key 'perfplay_%s': %s" % (RUN_VARS, option, message)
    return text + (" (allowed: %s)" % allowed if allowed else "")


def as_bool(option, value, errors):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS + FALSE_WORDS:
        return value.strip().lower() in TRUE_WORDS
    errors.append(_error(option, "expected a boolean, got %r" % (value,), "true, false"))
    return None


def as_number(option, value, errors, kind, minimum, maximum=None):
    """An int or float from a number or a numeric string (``-e key=value`` gives strings)."""
    number = None
    if not isinstance(value, bool):
        try:
            number = kind(value.strip() if isinstance(value, str) else value)
        except (TypeError, ValueError):
            number = None
        if kind is int and isinstance(value, float) and value != int(value):
            number = None
    bounds = ">= %s" % minimum if maximum is None else "%s..%s" % (minimum, maximum)
    if number is None:
        errors.append(_error(option, "expected %s %s, got %r" % (
            "an integer" if kind is int else "a number", bounds, value)))
    elif number < minimum or (maximum is not None and number > maximum):
        errors.append(_error(option, "%s is out of range (%s)" % (number, bounds)))
        number = None
    return number


def optional(check, option, value, errors, *bounds):
    """None when the run var is not set (the launcher's default applies), else check(...)."""
    return None if value in (None, "") else check(option, value, errors, *bounds)


def check_run_vars(params):
    """Validate the run vars this module owns; return (normalised values, errors)."""
    errors = []
    run_vars = dict(
        vendor=params["vendor"],
        runtime=params["runtime"],
        clear_caches=as_bool("clear_caches", params["clear_caches"], errors),
        monitor_interval=as_number("monitor_interval", params["monitor_interval"], errors, float, 0.01, 3600),
        progress_interval=as_number("progress_interval", params["progress_interval"], errors, float, 1, 3600),
        rdzv_timeout=optional(as_number, "rdzv_timeout", params["rdzv_timeout"], errors, float, 1, 86400),
        heartbeat_timeout=optional(as_number, "heartbeat_timeout", params["heartbeat_timeout"], errors, float, 1, 3600),
        master_port=as_number("master_port", params["master_port"], errors, int, 0, 65535),
        hosts=list(params["hosts"]),
    )
    if not run_vars["hosts"]:
        errors.append("%s: key 'perfplay_host_pattern': matches no inventory host "
                      "(add hosts to the inventory group perfplay_hosts)" % RUN_VARS)
    return run_vars, errors


def plan_request(params):
    """The request document of ``case_runners plan`` (keys it does not know are errors there)."""
    request = dict(vendor=params["vendor"], runtime=params["runtime"], cases=params["cases"], task=params["task"],
                   bundle=params["bundle"])
    if params["image"] not in (None, ""):
        request["image"] = params["image"]
    for key, option in (("results_dir", "results_dir"), ("run_id", "run_id"), ("timeout_s", "case_timeout"),
                        ("min_free_bytes", "min_free_bytes")):
        if params[option] not in (None, ""):
            request[key] = params[option]
    return request


def missing_hosts(cases, hosts):
    """The errors of cases that need more hosts than the run has."""
    return ["case %s: key 'nnodes': needs %d hosts, the run has %d (%s)" % (
        case["case_id"], case["nnodes"], len(hosts), ", ".join(hosts) or "none")
        for case in cases if case["nnodes"] > len(hosts)]


def expand_rounds(cases, run_dir, hosts, master_port):
    """One item per case and round, for an accepted plan (case_runners bounds repeat, so the list stays small)."""
    rounds = []
    for case in cases:
        nnodes = case["nnodes"]
        config = case.get("config_path") or (
            os.path.join(run_dir, case["case_id"], "resolved_config.json") if run_dir else None)
        for number in range(1, case["repeat"] + 1):
            rounds.append(dict(
                case_id=case["case_id"],
                case=case["case"],
                round=number,
                nnodes=nnodes,
                nproc=case["nproc"],
                timeout_s=case["timeout_s"],
                config=config,
                rel_dir="%s/round%d" % (case["case_id"], number),
                hosts=hosts[:nnodes],
                master_port=master_port if nnodes > 1 else 0,
            ))
    return rounds


def host_needs(rounds, hosts, cases):
    """Per host: the most processes a round puts on it, the cases it takes part in, their images and their
    requirements files."""
    needs = dict((host, dict(nproc=0, case_ids=[], master=False, images=[], requirements=[])) for host in hosts)
    requirements = dict((case["case_id"], case.get("requirements") or []) for case in cases)
    images = dict((case["case_id"], (case.get("runtime") or {}).get("image")) for case in cases)
    for item in rounds:
        if item["nnodes"] > 1:
            needs[item["hosts"][0]]["master"] = True
        for host in item["hosts"]:
            need = needs[host]
            need["nproc"] = max(need["nproc"], item["nproc"])
            if item["case_id"] not in need["case_ids"]:
                need["case_ids"].append(item["case_id"])
            image = images.get(item["case_id"])
            if image and image not in need["images"]:
                need["images"].append(image)
            need["requirements"] += [r for r in requirements[item["case_id"]] if r not in need["requirements"]]
    return needs


def fail_with_errors(module, errors, **extra):
    """Fail listing every problem, one per line."""
    module.fail_json(
        msg="perfplay: the run was rejected, %d problem(s):\n- %s" % (len(errors), "\n- ".join(errors)),
        errors=errors, **extra)


def run_plan(module, check):
    """Run ``case_runners plan`` on this module's request; return (plan document, rc)."""
    params = module.params
    with request_file(plan_request(params), "perfplay-plan-") as request_path:
        argv = cli_argv(params["python"], "plan", request=request_path, check=check)
        result = run_json(module, argv, params["project_dir"], "case_runners plan")
    return result.doc, result.rc


def main():
    argument_spec = dict(
        COMMON_ARGUMENT_SPEC,
        vendor=dict(type="raw", default="cpu"),
        runtime=dict(type="raw", default="host"),
        image=dict(type="raw"),
        cases=dict(type="raw"),
        task=dict(type="raw", default="training"),
        results_dir=dict(type="raw"),
        run_id=dict(type="raw"),
        case_timeout=dict(type="raw"),
        hosts=dict(type="list", elements="str", required=True),
        clear_caches=dict(type="raw", default=False),
        monitor_interval=dict(type="raw", default=1.0),
        progress_interval=dict(type="raw", default=30.0),
        rdzv_timeout=dict(type="raw"),
        heartbeat_timeout=dict(type="raw"),
        master_port=dict(type="raw", default=0),
        min_free_bytes=dict(type="raw"),
        bundle=dict(type="bool", default=True),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    run_vars, errors = check_run_vars(params)

    # Validate first (``plan --check`` writes nothing), so a rejected run leaves no run directory
    # behind, then create the run: 2 x ~0.1 s.
    plan, rc = run_plan(module, check=True)
    errors = list(plan.get("errors") or []) + errors + missing_hosts(plan.get("cases") or [], run_vars["hosts"])
    if errors or not plan.get("ok"):
        fail_with_errors(module, errors or ["case_runners plan failed without naming an error"], rc=rc)
    if not module.check_mode:
        plan, rc = run_plan(module, check=False)
        if not plan.get("ok"):
            fail_with_errors(module, plan.get("errors") or ["case_runners plan failed without naming an error"],
                             rc=rc)
    rounds = expand_rounds(plan["cases"], plan.get("run_dir"), run_vars["hosts"], run_vars["master_port"])

    run_vars["min_free_bytes"] = plan.get("min_free_bytes")
    for case in plan.get("cases") or []:  # seed 002: a key a vendor adds to an inference case is a warning
        for note in case.get("notes") or []:
            if note.startswith("warning: "):
                module.warn("%s: %s" % (case["case_id"], note[len("warning: "):]))
    module.exit_json(
        changed=not module.check_mode,
        run_id=plan.get("run_id"),
        run_dir=plan.get("run_dir"),
        bundle=plan.get("bundle"),
        cases=plan.get("cases") or [],
        rounds=rounds,
        images=plan.get("images") or [],
        host_needs=host_needs(rounds, run_vars["hosts"], plan.get("cases") or []),
        run_vars=run_vars,
    )


if __name__ == "__main__":
    main()
