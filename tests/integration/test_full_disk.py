"""A results dir on a small tmpfs that fills up in the middle of a round: the round fails naming the full disk,
the play goes on to the next case, and no file is left empty or cut short. Needs root (mount); CI runs it."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from case_runners.rank.driver import dllogger
from playbook_run import REPO, run_playbook
from process_helpers import SHORT_S, kill_run, require_root, run_pids

FULL = "no space left on device"
FIRST = {"case": "digits_cnn", "nproc": 1, "timeout_s": 300,
         "overrides": {"synthetic": True, "max_epochs": 10000, "time_budget_s": 240}}
SECOND = {"case": "digits_cnn", "nproc": 2}


@pytest.fixture
def small_disk(tmp_path: Path):
    require_root("mounting a tmpfs")
    mount = tmp_path / "results"
    mount.mkdir(mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs", str(mount)], check=True,
                   timeout=SHORT_S)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False, timeout=SHORT_S)


def fill(disk: Path) -> Path:
    """Take every free byte of the disk."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for chunk in (1 << 20, 4096, 1):  # the last few kilobytes, and bytes
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * chunk):
                    pass
    finally:
        os.close(fd)
    return filler


def fill_during_the_first_round(disk: Path, run_id: str, free_after: bool, stop: threading.Event) -> None:
    """Fill the disk once the first case trains; with free_after, free it once that round's processes are gone."""
    events = disk / run_id / "digits_cnn_CPUx1x1" / "round1" / "localhost_noderank0" / "rank0.events.jsonl"
    while not stop.wait(0.1):
        if events.exists() and "STEP_END" in events.read_text(errors="replace"):
            break
    else:
        return
    filler = fill(disk)
    while free_after and not stop.wait(0.05):
        if not run_pids(run_id):
            filler.unlink()
            return


def empty_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.stat().st_size == 0)


@pytest.mark.parametrize("free_after", [True, False], ids=["space-freed-after-the-round", "disk-stays-full"])
def test_a_disk_that_fills_mid_round_costs_that_round_only(small_disk: Path, free_after: bool):
    run_id = "run-full-disk-" + ("freed" if free_after else "full")
    stop = threading.Event()
    filler = threading.Thread(target=fill_during_the_first_round, args=(small_disk, run_id, free_after, stop))
    filler.start()
    try:
        run = run_playbook(REPO, "run_case.yml", "-e", f"perfplay_results_dir={small_disk}",
                           "-e", f"perfplay_run_id={run_id}", "-e", "perfplay_min_free_bytes=1048576",
                           "-e", json.dumps({"perfplay_cases": [FIRST, SECOND]}), timeout=900)
    finally:
        stop.set()
        filler.join()
        kill_run(run_id)
    assert run.rc != 0, "the play fails at the end: a round failed"
    assert "digits_cnn_CPUx1x2 round 1" in run.output, "the second case was still run"
    assert FULL in run.output
    assert empty_files(small_disk) == [], "a file was left empty"
    for path in small_disk.rglob("*.json"):
        if not path.name.endswith(dllogger.SUFFIX):  # a stream of DLLL lines, as events.jsonl is of lines
            json.loads(path.read_text())  # whole, never cut short
    assert not list(small_disk.rglob(".*.tmp")), "a temporary file was left"
    run_dir = small_disk / run_id
    if free_after:
        summary = json.loads((run_dir / "summary.json").read_text())
        first, second = (case["rounds"][0] for case in summary["cases"])
        assert first["status"] == "failed" and FULL in first["reason"], first
        assert second["status"] == "success", second
    else:
        assert "summary.json and summary.md not written: no space left on device" in run.output
        assert not (run_dir / "summary.json").exists()
        with pytest.raises(OSError) as full:
            (small_disk / "probe").write_text("x")
        assert full.value.errno == errno.ENOSPC
