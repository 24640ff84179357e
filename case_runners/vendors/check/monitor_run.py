"""The vendor's monitor run as FlagPerf runs one: `python vendor/<v>/monitor.py -o start|status|stop -l DIR`, and
what it wrote: one JSON line per sample with a timestamp and, per device, the fields of the plugin API
(case_runners/monitors/base.py); utilisation and memory used are required."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from case_runners.core.paths import display_path
from case_runners.monitors.base import DEVICE_FIELDS
from case_runners.vendors.check.findings import Finding, error, ok
from case_runners.vendors.layout import MONITOR_FILE, vendor_dir

REQUIRED_FIELDS = ("util", "mem_used_bytes")
INTERVAL_S = 0.2
SAMPLING_S = 1.5
STATUS_NOT_RUNNING = 3  # case_runners.monitors.cli


def _call(script: Path, operation: str, log_dir: Path, root: Path) -> subprocess.CompletedProcess:
    """The script as a vendor runs it, with the checked checkout's case_runners importable."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, str(script), "-o", operation, "-l", str(log_dir), "--interval",
                           str(INTERVAL_S)], cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120, check=False)


def _said(done: subprocess.CompletedProcess) -> str:
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit code {done.returncode}"


def check_monitor(name: str, root: Path) -> list[Finding]:
    script = vendor_dir(root, name) / MONITOR_FILE
    shown = display_path(script, root)
    if not script.is_file():
        return []  # structure.py names the missing file
    with tempfile.TemporaryDirectory(prefix="perfplay-check-monitor-") as tmp:
        log_dir = Path(tmp)
        try:
            started = _call(script, "start", log_dir, root)
            if started.returncode:
                return [error(shown, f"-o start failed (exit code {started.returncode}): {_said(started)}")]
            time.sleep(SAMPLING_S)
            status = _call(script, "status", log_dir, root)
        finally:
            stopped = _call(script, "stop", log_dir, root)
        found = []
        if status.returncode:
            found.append(error(shown, f"-o status says it is not running (exit code {status.returncode})"))
        if stopped.returncode:
            found.append(error(shown, f"-o stop failed (exit code {stopped.returncode}): {_said(stopped)}"))
        after = _call(script, "status", log_dir, root)
        if after.returncode != STATUS_NOT_RUNNING:
            found.append(error(shown, f"-o status after -o stop exits {after.returncode}, not {STATUS_NOT_RUNNING}"))
        return found + _samples(sorted(log_dir.glob("*_monitor.jsonl")), shown)


def _samples(logs: list[Path], shown: str) -> list[Finding]:
    lines = [line for log in logs for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines:
        return [error(shown, "wrote no sample (<name>_monitor.jsonl) while it ran")]
    devices, problems = [], []
    for number, line in enumerate(lines, 1):
        try:
            sample = json.loads(line)
        except ValueError:
            problems.append(error(shown, f"sample {number} is not JSON: {line[:80]}"))
            continue
        if not isinstance(sample.get("ts"), (int, float)):
            problems.append(error(shown, f"sample {number} has no timestamp ts"))
        if "error" in sample:
            problems.append(error(shown, f"sample {number}: {sample['error']}"))
        devices += [d for d in sample.get("devices") or [] if isinstance(d, dict)]
    if not devices:
        problems.append(error(shown, "its samples list no device"))
    for field in DEVICE_FIELDS:
        if devices and any(field not in d for d in devices):
            problems.append(error(shown, f"a device sample lacks the field '{field}' (None where not available)"))
    for field in REQUIRED_FIELDS:
        if devices and all(d.get(field) is None for d in devices):
            problems.append(error(shown, f"reports no {field} (a vendor monitor must report utilisation and "
                                         f"memory used; perfplay adds the timestamp)"))
    return problems or [ok(shown, f"start, status and stop work; {len(lines)} samples with "
                                  f"{', '.join(DEVICE_FIELDS)}")]
