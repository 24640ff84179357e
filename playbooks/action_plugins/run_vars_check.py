# perfplay: the action run_vars_check (documented in library/run_vars_check.py). The vars are walked as Ansible
# loaded them, before any task templates them: templating a YAML alias bomb expands every alias.

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible.plugins.action import ActionBase

ARGUMENT_SPEC = dict(
    pattern=dict(type="str", required=True),
    max_values=dict(type="int", default=10000),
    max_depth=dict(type="int", default=20),
    max_chars=dict(type="int", default=1048576),
)


def size_problem(value: Any, max_values: int, max_depth: int, max_chars: int) -> str | None:
    """Why `value` passes a limit (aliases counted as often as they are used), or None; stops at the first."""
    values = chars = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        values += 1
        if values > max_values:
            return "more than %d values" % max_values
        if depth > max_depth:
            return "more than %d levels deep" % max_depth
        if isinstance(item, str):
            chars += len(item)
        elif isinstance(item, Mapping):
            for key, child in item.items():
                chars += len(key) if isinstance(key, str) else 0
                stack.append((child, depth + 1))
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend((child, depth + 1) for child in item)
        if chars > max_chars:
            return "more than %d characters" % max_chars
    return None


def check(task_vars: Mapping[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """The task result: failed, naming each var past a limit and the limits, when any is."""
    names = sorted(name for name in task_vars if re.match(args["pattern"], name))
    limits = (args["max_values"], args["max_depth"], args["max_chars"])
    problems = []
    for name in names:
        problem = size_problem(task_vars[name], *limits)
        if problem:
            problems.append("run vars: key '%s': %s (a YAML alias bomb?): perfplay does not expand it (allowed: at "
                            "most %d values, %d levels, %d characters)" % ((name, problem) + limits))
    if problems:
        return dict(failed=True, changed=False, checked=names, msg="perfplay: " + "; ".join(problems))
    return dict(changed=False, checked=names)


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False
    _requires_connection = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        result.update(check(task_vars or {}, args))
        return result
