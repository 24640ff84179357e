"""The wait returns as its launcher ends, not a poll later: with a pidfd, the exit is signalled and the process is a
zombie by the next look at /proc, so a round costs no 0.2 s sleep (POLL_S, the fallback without a pidfd)."""

from __future__ import annotations

import subprocess

from case_runners.core.processes import identify
from case_runners.launch import waiting
from case_runners.records.names import FAILED
from process_helpers import REAPED_S


def test_a_wait_sleeps_no_poll_once_the_launcher_has_ended(tmp_path, monkeypatch):
    slept: list[float] = []
    real_sleep = waiting.time.sleep
    monkeypatch.setattr(waiting.time, "sleep", lambda s: (slept.append(s), real_sleep(s)))
    launcher = subprocess.Popen(["sleep", "0.2"], start_new_session=True)
    try:
        ident = identify(launcher.pid)
        assert ident is not None
        answer = waiting.wait(tmp_path, "run-a", ident, for_s=60)
    finally:
        launcher.kill()
        launcher.wait(timeout=REAPED_S)
    assert answer["finished"] and answer["status"] == FAILED  # `sleep` writes no node result
    assert not [s for s in slept if s >= waiting.POLL_S], slept
