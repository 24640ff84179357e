"""What keeps the suite from hanging or passing falsely: every blocking call in tests/ has a timeout, a test that
hangs is failed by pytest-timeout (pyproject.toml) with its fixtures' teardown run, and in CI a skip is a failure."""

from __future__ import annotations

import ast
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from case_runners.core.paths import project_root
from process_helpers import SHORT_S

REPO = project_root()
TESTS = REPO / "tests"
# subprocess's calls that wait for the command, and the waits of a Popen (or anything else that waits).
RUNS = {"run", "call", "check_call", "check_output"}
WAITS = {"wait", "communicate"}


def unbounded_calls(source: str, name: str) -> list[str]:
    """'file:line: call' for each call in `source` that can wait for ever: subprocess.run & co. without a timeout,
    x.wait() / x.communicate() with no argument (os.wait(), the reaper of a namespace's init, is not one)."""
    tree = ast.parse(source, name)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        func, keywords = node.func, {kw.arg for kw in node.keywords}
        if "timeout" in keywords or None in keywords:  # None: **kwargs, which may carry it
            continue
        receiver = func.value.id if isinstance(func.value, ast.Name) else None
        if (receiver == "subprocess" and func.attr in RUNS) or (
                func.attr in WAITS and not node.args and receiver != "os"):
            found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_every_blocking_call_in_tests_has_a_timeout():
    found = [call for path in sorted(TESTS.rglob("*.py"))
             for call in unbounded_calls(path.read_text(), str(path.relative_to(REPO)))]
    assert found == [], "a call that can wait for ever (add timeout=, process_helpers' REAPED_S, SHORT_S, RUN_S):\n" \
        + "\n".join(found)


def test_the_scan_finds_each_kind_of_unbounded_call():
    source = textwrap.dedent("""\
        import os, subprocess
        subprocess.run(["true"], check=True)
        subprocess.check_output(["true"])
        proc = subprocess.Popen(["true"])
        proc.wait()
        proc.communicate()
        subprocess.run(["true"], timeout=5)
        proc.wait(timeout=5)
        proc.communicate(input="", timeout=5)
        proc.wait(5)
        os.wait()
        """)
    assert unbounded_calls(source, "t.py") == [
        "t.py:2: subprocess.run(['true'], check=True)", "t.py:3: subprocess.check_output(['true'])",
        "t.py:5: proc.wait()", "t.py:6: proc.communicate()"]


HANGS = """\
import subprocess, sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture
def child():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    (HERE / "child.pid").write_text(str(proc.pid))
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=60)
        (HERE / "stopped").write_text("the fixture's finally ran")


def test_hangs(child):
    child.wait()
"""


def test_a_hung_test_fails_on_its_timeout_and_its_fixture_stops_its_process(tmp_path: Path):
    """A test waiting for ever on its process, under this repository's pytest settings (the timeout shortened to
    2 s): it fails as timed out, and its fixture's teardown kills and reaps the process."""
    (tmp_path / "test_hangs.py").write_text(HANGS)
    done = subprocess.run([sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"), "--rootdir",
                           str(tmp_path), "-p", "no:cacheprovider", "-o", "timeout=2", str(tmp_path / "test_hangs.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=SHORT_S)
    pid = int((tmp_path / "child.pid").read_text())
    try:
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Failed: Timeout (>2.0s) from pytest-timeout." in done.stdout, done.stdout
        assert (tmp_path / "stopped").exists(), done.stdout
        assert not Path(f"/proc/{pid}").exists(), "the hung test's process outlived the test"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


SKIPS = {
    "test_skips.py": """\
import pytest


def test_skipped():
    pytest.skip("needs a thing")


@pytest.mark.skipif(True, reason="not on this host")
def test_marked():
    pass


@pytest.mark.xfail(reason="a known bug", strict=True)
def test_expected_failure():
    assert False


def test_runs():
    pass
""",
    "test_module_skip.py": """\
import pytest

pytest.importorskip("perfplay_no_such_module")


def test_never():
    pass
""",
}


def run_skips(tmp_path: Path, ci: str | None, *files: str) -> subprocess.CompletedProcess:
    """pytest on SKIPS' `files` with tests/conftest.py as its plugin (its hooks, as every suite here has them). Its
    temporary directory (tests/conftest.py's session fixtures make one) is its own: in the default place, pytest
    would delete the oldest of the host's earlier pytest directories first, minutes for a suite's real runs."""
    for name, text in SKIPS.items():
        (tmp_path / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": ci} if ci is not None else {})
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(REPO), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"), "--rootdir",
                           str(tmp_path), "--basetemp", str(tmp_path / "basetemp"), "-p", "no:cacheprovider",
                           "-p", "conftest", *files], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=SHORT_S)


def test_in_ci_every_skip_fails_the_suite_naming_its_reason(tmp_path: Path):
    tests = run_skips(tmp_path, "true", "test_skips.py")
    assert tests.returncode == 1, tests.stdout + tests.stderr
    # pytest.skip() fails the test; a skipif marker, applied in setup, is an error: either fails the suite
    assert "1 failed, 1 passed, 1 xfailed, 1 error in" in tests.stdout.splitlines()[-1], tests.stdout
    module = run_skips(tmp_path, "true", "test_module_skip.py")
    assert module.returncode == 2, module.stdout + module.stderr  # a collection error interrupts the session
    for reason, out in (("Skipped: needs a thing", tests.stdout), ("Skipped: not on this host", tests.stdout),
                        ("Skipped: could not import 'perfplay_no_such_module'", module.stdout)):
        assert f"skipped in CI (CI=true), which must run every test: {reason}" in out, out


def test_off_ci_a_skip_is_a_skip(tmp_path: Path):
    done = run_skips(tmp_path, None, *SKIPS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 3 skipped, 1 xfailed in" in done.stdout.splitlines()[-1], done.stdout
