"""engine.sh's holders: two checkouts' docker suites (or a suite and the container bench) on one machine share one
dockerd, and one letting go does not stop it under the other; a holder that ended without letting go is forgotten."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from docker_env import engine, engine_answers
from process_helpers import SHORT_S

HOLDERS = Path(os.environ.get("PERFPLAY_DOCKER_DIR", "/tmp/perfplay-docker")) / "holders"  # engine.sh's STATE


def test_another_holder_letting_go_leaves_the_engine_running(docker_engine):
    other = subprocess.Popen(["sleep", "600"])
    try:
        engine("up", holder=other.pid)  # another checkout's session, on the engine this session holds
        assert (HOLDERS / str(other.pid)).is_file()
        engine("down", holder=other.pid)
        assert engine_answers(), "the other session's down stopped the engine under this one"
        assert not (HOLDERS / str(other.pid)).exists()

        engine("up", holder=other.pid)
        other.kill()
        other.wait(timeout=SHORT_S)  # it ended without letting go
        third = subprocess.Popen(["sleep", "600"])
        try:
            engine("down", holder=third.pid)  # a down by a process that never held it
        finally:
            third.kill()
            third.wait(timeout=SHORT_S)
        assert engine_answers() and not (HOLDERS / str(other.pid)).exists(), "the ended holder is forgotten"
    finally:
        other.kill()
        other.wait(timeout=SHORT_S)
