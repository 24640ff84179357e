# -*- coding: utf-8 -*-
# perfplay: the options every module in library/ has (module_utils/_perfplay_cli.py COMMON_ARGUMENT_SPEC),
# documented once. A module says `extends_documentation_fragment: [perfplay_cli]`; one that documents a python
# of its own, `perfplay_cli.project_dir`; one that reads a finished run, `perfplay_cli.run_dir` as well.
# ansible.cfg's doc_fragment_plugins points here.

from __future__ import annotations


class ModuleDocFragment:
    PROJECT_DIR = r"""
options:
  project_dir:
    description:
      - perfplay checkout on the host the module runs on (the folder holding C(case_runners/) and C(vendor/));
        the C(python -m case_runners) subcommand runs there.
    type: path
    required: true
"""

    DOCUMENTATION = PROJECT_DIR + r"""
  python:
    description:
      - Python that runs C(python -m case_runners), the host's perfplay venv.
      - Defaults to the module's own interpreter.
    type: str
"""

    RUN_DIR = r"""
options:
  run_dir:
    description: The run directory, C(<results_dir>/<run_id>).
    type: path
    required: true
"""
