# -*- coding: utf-8 -*-
# perfplay: the attributes the modules in library/ share, documented once. Every module says
# `extends_documentation_fragment: [perfplay_attributes]`; a read-only one adds `perfplay_attributes.read_only`,
# one that runs on the controller only (an action plugin, no module process) `perfplay_attributes.controller`.
# A module's own `attributes:` add to these (ansible-doc merges them); ansible.cfg's doc_fragment_plugins points here.

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  diff_mode:
    support: none
  platform:
    support: full
    platforms: posix
"""

    READ_ONLY = r"""
attributes:
  check_mode:
    support: full
    details: Read-only, runs in check mode too.
  idempotent:
    support: full
    details: Reads only; changes nothing.
"""

    CONTROLLER = r"""
attributes:
  action:
    support: full
    details: Runs on the controller, without a module process.
"""
