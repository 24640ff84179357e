# perfplay: the action of case_wait. Repeats the module's long poll until the node ends, printing one progress line
# per host and poll; no `until:` loop, so a healthy wait never shows as "FAILED - RETRYING".

# first_poll: the poll case_launch made (wait_s) stands for the first one, unless the node succeeded and fetch_to
# still needs its directory: a round on the controller shorter than a poll then takes one module run, the launch.

# With fetch_to, the wait's last answer of a node that succeeded brings its directory too (inline_archive), unpacked
# into fetch_to here: a remote node then needs no case_finish (two module runs a round, not three). A directory
# too big for the answer is packed into a file by case_finish and fetched, from here.

from __future__ import annotations

import base64
import binascii
import sys
import time
from types import ModuleType
from typing import Any

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import action_loader
from ansible.utils.display import Display

display = Display()

# Options of the action alone (margin_s, fetch_to); the module accepts and ignores them.
DEFAULT_MARGIN_S = 120.0
# A node directory that packs into more than this comes back through case_finish's file and a fetch instead.
INLINE_ARCHIVE_MAX_BYTES = 8 << 20


# What case_finish needs of the wait's arguments, to fetch a directory too big for the answer.
FINISH_ARGS = ("project_dir", "python", "log_dir", "run_id", "launcher")


def finish_plugin() -> ModuleType:
    """case_finish's action plugin module: one unpacking (and its checks) for every way a node directory comes
    back."""
    return sys.modules[action_loader.get("case_finish", class_only=True).__module__]


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        fetch_to = args.pop("fetch_to", None)
        first = args.pop("first_poll", None)
        if first and first.get("finished") and not first.get("failed") and fetch_to:
            first = None  # the directory of a node that succeeded comes with a poll's answer
        if fetch_to:
            args["inline_archive"] = INLINE_ARCHIVE_MAX_BYTES
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
            if first:
                answer, first = dict(first), None
            else:
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
        archive = answer.pop("archive_b64", None)
        result.update(answer)
        result["polls"] = polls
        if not fetch_to or result.get("failed") or result.get("unreachable") or not result.get("finished"):
            return result
        if archive is None:  # too big for the answer: packed into a file and fetched
            fetched = finish_plugin().finish_and_fetch(self, {k: args[k] for k in FINISH_ARGS if k in args},
                                                       fetch_to, task_vars)
            if fetched.get("failed") or fetched.get("unreachable"):
                result.update(failed=True, msg=fetched.get("msg"), unreachable=fetched.get("unreachable", False))
            result.update(fetched=fetched.get("fetched"), changed=True)
            return result
        try:
            result["fetched"] = finish_plugin().unpack_inline(base64.b64decode(archive, validate=True), fetch_to,
                                                              args["log_dir"])
            result["changed"] = True
        except (AnsibleError, binascii.Error, OSError) as exc:
            result.update(failed=True, msg="collecting the node directory %s: %s" % (args["log_dir"], exc))
        return result
