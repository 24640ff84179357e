# perfplay: the action of case_wait. Repeats the module's long poll until the node ends, printing one progress line
# per host and poll; no `until:` loop, so a healthy wait never shows as "FAILED - RETRYING".

from __future__ import annotations

import time
from typing import Any

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

# An option of the action alone; the module accepts and ignores it.
DEFAULT_MARGIN_S = 120.0


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        timeout = args.get("timeout_s")
        margin = float(args.get("margin_s") or DEFAULT_MARGIN_S)
        # Unset: case_runners' default, which every poll of a running node reports.
        interval = float(args["for_s"]) if args.get("for_s") else None
        bound = float(timeout) + margin if timeout else None
        label = args.get("label") or self._task.get_name()
        began = time.monotonic()
        polls = 0
        while True:
            left = None if bound is None else bound - (time.monotonic() - began)
            if interval is not None:
                args["for_s"] = interval if left is None else max(1.0, min(interval, left))
            answer = self._execute_module(module_name="case_wait", module_args=args, task_vars=task_vars)
            polls += 1
            if answer.get("failed") or answer.get("unreachable") or answer.get("finished"):
                break
            interval = interval or float(answer.get("for_s") or 0) or None
            if left is not None and left <= (interval or 0):
                answer.update(failed=True, msg="the launcher still runs %g s after the case timeout of %g s"
                                                % (margin, float(timeout or 0)))
                break
            display.display("  %s: %s" % (label, answer.get("line")))
        result.update(answer)
        result["polls"] = polls
        return result
