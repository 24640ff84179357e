"""Fixtures every suite shares (tests/process_helpers.py, tests/real_runs.py), in CI a skip is a failure
(tests/ci_skips.py), and the longest test files start first (tests/run_order.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # process_helpers, whatever pytest's import mode

from case_runners.core.paths import FLOPS_CACHE_ENV, FLOPS_CACHE_FILE  # noqa: E402
from ci_skips import pytest_make_collect_report, pytest_runtest_makereport  # noqa: E402, F401 - hooks
from process_helpers import Sleepers  # noqa: E402
from real_runs import DIGITS_5_STEPS, DIGITS_INFERENCE, RealRun, run_once  # noqa: E402
from run_order import pytest_collection_modifyitems, pytest_configure  # noqa: E402, F401 - hooks


@pytest.fixture(scope="session", autouse=True)
def flops_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The ranks the tests start count FLOPs into a cache of the session's, not the venv's (tasks/training/flops.py)."""
    os.environ[FLOPS_CACHE_ENV] = str(tmp_path_factory.mktemp("flops") / FLOPS_CACHE_FILE)


@pytest.fixture(autouse=True)
def environment_restored() -> Iterator[None]:
    """os.environ as it was before each test: code a test runs in-process (a rank's start sets OMP_NUM_THREADS)
    must not reach the processes of the tests after it, whichever pytest worker runs which file (make test: -n 2)."""
    before = dict(os.environ)
    yield
    if os.environ != before:
        os.environ.clear()
        os.environ.update(before)


@pytest.fixture
def sleepers() -> Iterator[Sleepers]:
    """sleepers(*argv, code=, run_id=, session=, env=) starts a plain process; all are killed at the end."""
    started = Sleepers()
    yield started
    started.kill_all()


# The real runs several modules only read (never write into: a test that edits a file copies it first), made once
# per session whichever worker asks first (real_runs.run_once).
@pytest.fixture(scope="session")
def digits_run(tmp_path_factory: pytest.TempPathFactory) -> RealRun:
    """digits_cnn, one round of 5 steps (1: not converged, a valid result)."""
    run = run_once(tmp_path_factory, "digits_run", *DIGITS_5_STEPS)
    assert run.done.returncode in (0, 1), run.done.stderr[-3000:]
    return run


@pytest.fixture(scope="session")
def digits_inference_run(tmp_path_factory: pytest.TempPathFactory) -> RealRun:
    """digits_cnn's inference case, every step, eager (compiler=null)."""
    run = run_once(tmp_path_factory, "digits_inference_run", *DIGITS_INFERENCE)
    assert run.done.returncode == 0, run.done.stderr[-3000:]
    return run
