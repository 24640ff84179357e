"""The test tooling's fixed state dirs (tests/state_dir.sh, used by tests/cluster/hosts.sh and
tests/docker/engine.sh for root's SSH key, authorized_keys, the hosts' venv and dockerd's pid file) are used only
when no other user could have made or changed them first."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from process_helpers import require_root

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "state_dir.sh"


def state_dir(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", f'source "{SCRIPT}"; state_dir "$1"', "state_dir", str(path)],
                          capture_output=True, text=True, timeout=60)


def test_a_missing_state_dir_is_made_by_this_user(tmp_path):
    assert state_dir(tmp_path / "state").returncode == 0
    info = (tmp_path / "state").stat()
    assert info.st_uid == os.geteuid() and info.st_mode & 0o777 == 0o755


@pytest.mark.parametrize("kind, message", [
    ("symlink", "is a symlink"),
    ("group-writable", "writable by group or others (mode 775)"),
    ("a file", "is not a directory"),
])
def test_a_state_dir_someone_could_have_prepared_is_refused(tmp_path, kind, message):
    path = tmp_path / "state"
    if kind == "symlink":
        (tmp_path / "elsewhere").mkdir()
        path.symlink_to(tmp_path / "elsewhere")
    elif kind == "group-writable":
        path.mkdir()
        path.chmod(0o775)
    else:
        path.write_text("")
    done = state_dir(path)
    assert done.returncode == 1 and message in done.stderr


def test_a_state_dir_of_another_user_is_refused(tmp_path):
    require_root("making a directory another user owns")
    path = tmp_path / "state"
    path.mkdir(mode=0o755)
    os.chown(path, 65534, 65534)
    done = state_dir(path)
    assert done.returncode == 1 and "belongs to uid 65534" in done.stderr


@pytest.mark.parametrize("script, variable", [("tests/cluster/hosts.sh", "STATE"), ("tests/docker/engine.sh", "STATE")])
def test_the_tooling_checks_its_state_dir_before_using_it(script, variable):
    text = (REPO / script).read_text()
    assert "state_dir.sh" in text and f'state_dir "${variable}"' in text
