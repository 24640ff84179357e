"""A host saturated by other processes during a round (monitors/summary.py saturated_by_others): the host monitor
tells the run's own CPU time from the rest, and the run summary warns in its text, Markdown and JSON."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

from case_runners.core.run_ids import RUN_ID_ENV
from case_runners.monitors.host import HostMonitor
from case_runners.monitors.runner import take_sample
from case_runners.monitors.summary import summarize_monitor_log
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round_build import write_round_record
from case_runners.records.summary import RunSummary
from case_runners.views.report.data import read_run
from case_runners.views.report.sections import summary_section
from case_runners.views.summary.files import write_run_summary
from case_runners.views.summary.text import render_table
from record_helpers import node_result, rank_result, resolved, write_node

# One core, busy in the eval loop (a C loop such as any() would hold the GIL from the sleeper's own "ready")
BURN = ("import threading\ndef burn():\n    while True:\n        pass\n"
        "threading.Thread(target=burn, daemon=True).start()")
SAMPLES = 6


def round_dir(run: Path, number: int, host_samples: list[dict] | None = None) -> Path:
    """A round of digits_cnn on the cpu vendor whose node directory holds `host_samples` as its host monitor's log
    (one JSON object a line, as the monitor writes it)."""
    path = run / "digits_cnn_CPUx1x1" / f"round{number}"
    node = write_node(path / "localhost_noderank0", node_result("localhost"), [rank_result()])
    if host_samples is not None:
        (node / "host_monitor.jsonl").write_text("".join(json.dumps(s) + "\n" for s in host_samples))
    return path


def record(path: Path, number: int) -> None:
    write_round_record(path, ResolvedConfig.from_json(resolved("digits_cnn", "cpu")), number)


def test_neighbours_that_take_the_cpus_from_a_round_are_flagged(tmp_path, monkeypatch, sleepers):
    """Real samples: one process of the run busy on a core, others (no run id) busy on every core."""
    run_id = f"sat-{uuid.uuid4().hex[:8]}"
    sleepers(code=BURN, run_id=run_id)
    for _ in range(os.cpu_count() or 1):
        sleepers(code=BURN)
    monkeypatch.setenv(RUN_ID_ENV, run_id)  # as the round's monitor daemon has it
    monitor = HostMonitor()
    monitor.open()
    lines = []
    for _ in range(SAMPLES):
        time.sleep(0.5)
        lines.append(json.loads(take_sample(monitor)))
    path = round_dir(tmp_path / "run1", 1, lines)
    summary = summarize_monitor_log(path / "localhost_noderank0" / "host_monitor.jsonl")
    assert summary["samples"] == SAMPLES and summary["errors"] == 0
    assert sum(s["run_cpu_util"] for s in lines) > 0, "the run's own busy process counts as the run's"
    assert all(s["run_cpu_util"] <= s["cpu_util"] + 1 for s in lines[1:])
    assert summary["saturated_by_others"] >= 0.5 and summary["others_util_mean"] >= 25, summary

    record(path, 1)
    written, _ = write_run_summary(tmp_path / "run1")
    assert written.saturated_rounds and written.saturated_rounds[0].startswith("digits_cnn_CPUx1x1 round 1: ")
    assert "host CPU saturated by other processes" in render_table(written)
    assert "**Warning: host CPU saturated by other processes" in (tmp_path / "run1" / "summary.md").read_text()
    on_disk = RunSummary.from_json(json.loads((tmp_path / "run1" / "summary.json").read_text()))
    assert on_disk.saturated_rounds == written.saturated_rounds


def sample(ts: float, busy: float, run: float | None) -> dict:
    """A host monitor sample in the monitor's format; run None: a log from before run_cpu_util."""
    found = {"ts": ts, "cpu_util": busy, "mem_used_bytes": 1 << 30, "mem_total_bytes": 8 << 30, "power_w": None}
    return found if run is None else {**found, "run_cpu_util": run}


def test_a_round_that_had_the_host_to_itself_or_a_log_from_before_is_not_flagged(tmp_path):
    busy_round = [sample(t, 100.0, 96.0) for t in range(4)]  # the round itself kept the host busy
    neighbours = [sample(0, 100.0, 40.0), sample(1, 100.0, 45.0), sample(2, 100.0, 90.0), sample(3, 50.0, 10.0)]
    run = tmp_path / "run2"
    for number, samples in ((1, busy_round), (2, [sample(t, 100.0, None) for t in range(4)]), (3, neighbours)):
        record(round_dir(run, number, samples), number)
    written, _ = write_run_summary(run)
    # round 3: 2 of 4 samples at >= 90 % busy with >= 25 % taken by others (the last is not busy enough)
    assert written.saturated_rounds == [
        "digits_cnn_CPUx1x1 round 3: localhost_noderank0: 50% of the samples; other processes used 41.2 % of the "
        "host's CPUs on average"]
    text = render_table(written)
    assert "round 1:" not in text.split("warning:")[1] and "round 2:" not in text.split("warning:")[1]
    old = summarize_monitor_log(run / "digits_cnn_CPUx1x1" / "round2" / "localhost_noderank0" / "host_monitor.jsonl")
    assert (old["others_util_mean"], old["saturated_by_others"]) == (None, None)
    # the report's summary, the page `run` points at, warns as summary.md does
    page = summary_section([read_run(run)])
    assert '<p class="warn">Warning: host CPU saturated by other processes' in page
    assert "round 3: localhost_noderank0: 50% of the samples" in page and "round 1:" not in page


def test_a_quiet_run_s_report_has_no_warning(tmp_path):
    record(round_dir(tmp_path / "run4", 1, [sample(t, 60.0, 58.0) for t in range(3)]), 1)
    write_run_summary(tmp_path / "run4")
    assert "saturated" not in summary_section([read_run(tmp_path / "run4")])


def test_a_quiet_run_s_summary_has_no_warning(tmp_path):
    record(round_dir(tmp_path / "run3", 1, [sample(t, 60.0, 58.0) for t in range(3)]), 1)
    written, _ = write_run_summary(tmp_path / "run3")
    assert "saturated_rounds" not in written.to_json() and "warning" not in render_table(written)
