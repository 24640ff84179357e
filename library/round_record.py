#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: build the record of one case round from what its nodes left behind.
# Documentation only: the action plugin playbooks/action_plugins/round_record.py does the work on the controller
# (like ansible.builtin.set_fact), running `case_runners record` without starting a module process.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: round_record
short_description: Build and write the record of one perfplay case round
description:
  - Runs C(python -m case_runners record) on the controller, which reads every node directory of the
    round and writes C(<round_dir>/round_record.json) (schema C(perfplay.round_record/1)).
  - An action plugin, run on the controller whatever host the task names; it starts no module process.
  - A failed round is a valid record (C(status) says why); the module fails only when no record could
    be built. A record that cannot be written (a full disk) is returned with C(status=failed), the reason
    naming the cause and the path, and the play goes on to the next round.
  - Also returns C(compact), a small digest of the record for C(ansible.builtin.set_stats) (AWX artifacts), as
    C(case_runners record) builds it; for an inference round (C(task=inference)) its four throughputs and two
    accuracies instead of the training figures, for a base round (C(task=base)) its benchmark and headlines.
options:
  round_dir:
    description: Round directory, C(<run_dir>/<case_id>/round<N>), holding the node directories.
    type: path
    required: true
  config:
    description: Resolved config (JSON) of the case.
    type: path
    required: true
  round:
    description: Round number, from 1.
    type: int
    required: true
  run_id:
    description: Run id recorded in the record.
    type: str
  errors:
    description:
      - Problems Ansible met in this round (for example a host that failed a task). They fail the round, whose
        C(status) becomes C(failed) and whose C(reason) names them; also in C(compact).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - perfplay_cli
  - perfplay_attributes
  - perfplay_attributes.controller
attributes:
  check_mode:
    support: full
    details: Writes nothing and predicts C(changed=true); C(record) and C(compact) are empty.
  idempotent:
    support: none
    details: Rewrites C(round_record.json) from the node directories every time.
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Record round 1
  round_record:
    project_dir: "{{ playbook_dir | dirname }}"
    python: "{{ ansible_playbook_python }}"
    round_dir: /opt/perfplay/results/run20250101120000/digits_cnn_CPUx1x1/round1
    config: /opt/perfplay/results/run20250101120000/digits_cnn_CPUx1x1/resolved_config.json
    round: 1
    run_id: run20250101120000
  register: round_record
"""

RETURN = r"""
record:
  description: The round record (schema C(perfplay.round_record/1)); empty in check mode.
  returned: success
  type: dict
compact:
  description: >-
    Digest of the record for C(set_stats); C(standard) is false, with the keys that changed the workload in
    C(non_standard), when the round did not run the case's standard workload. Empty in check mode.
  returned: success
  type: dict
  sample:
    case_id: digits_cnn_CPUx1x1
    round: 1
    status: success
    reason: null
    standard: true
    non_standard: []
    p_whole: 2310.5
    p_train: 2542.0
    p_core: 3120.7
    e2e_time: 41.2
    final_metric: 0.963
    converged: true
    mfu: null
    errors: []
"""
