# perfplay: Ansible's worker processes end with the controller that forked them.

from __future__ import annotations

DOCUMENTATION = r"""
name: perfplay_workers
type: aggregate
short_description: End Ansible's worker processes when their controller is gone
description:
  - A worker of a controller that was killed (SIGKILL, a lost session) has nobody to report to. One that polls
    a long round (C(async_status) with C(until)) keeps polling, and once the pipe to the dead controller is full
    it blocks for ever, a process nobody owns and no cleanup can find.
  - This plugin makes every process the controller forks (its workers) watch its parent, and exit once the
    parent has gone. It prints nothing and changes no result.
requirements:
  - enable in ansible.cfg (C(callbacks_enabled = perfplay_workers)); Linux or any POSIX system with C(os.fork)
"""

import os
import threading
import time
from typing import Any

from ansible.plugins.callback import CallbackBase

WATCH_S = 1.0
_registered: list[bool] = []


def _watch_parent() -> None:
    """In a freshly forked worker: exit once the process that forked it has gone."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_S)
        os._exit(1)

    threading.Thread(target=watch, name="perfplay-parent-watch", daemon=True).start()


class CallbackModule(CallbackBase):
    """Registers the watch for every process the controller forks from now on."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "perfplay_workers"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not _registered:  # once per controller process, however often the plugin is loaded
            os.register_at_fork(after_in_child=_watch_parent)
            _registered.append(True)
