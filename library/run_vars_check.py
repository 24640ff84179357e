#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: bound the size of the run vars before any task templates them.
# Documentation only: the action plugin playbooks/action_plugins/run_vars_check.py does the work on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_vars_check
short_description: Refuse run vars too large or too deep to template (a YAML alias bomb)
description:
  - Walks the vars whose names match O(pattern) as Ansible loaded them (no templating), counting every value
    and every character reached, aliases as often as they are used, and stops at the first limit passed.
  - A YAML alias bomb passed with C(-e @file) (a few hundred bytes, billions of values once expanded) is
    refused within a second, naming the var and the limits, instead of expanding for minutes and gigabytes
    when a later task templates it.
  - An action plugin, run on the controller; it starts no module process and changes nothing.
options:
  pattern:
    description: Regular expression (Python C(re.match)) of the names of the vars to check.
    type: str
    required: true
  max_values:
    description: Most values (mappings, lists and scalars, keys included) one var may hold.
    type: int
    default: 10000
  max_depth:
    description: Most levels of nesting one var may have.
    type: int
    default: 20
  max_chars:
    description: Most characters of text (strings and keys) one var may hold.
    type: int
    default: 1048576
extends_documentation_fragment:
  - perfplay_attributes
  - perfplay_attributes.controller
attributes:
  check_mode:
    support: full
    details: Checks the same way; it never changes anything.
  idempotent:
    support: full
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Check the size of the run vars
  run_vars_check:
    pattern: '^(perfplay_|[A-Z][A-Z0-9_]*$)'
"""

RETURN = r"""
checked:
  description: The names of the vars checked.
  returned: always
  type: list
  elements: str
  sample: [perfplay_cases, perfplay_vendor]
"""
