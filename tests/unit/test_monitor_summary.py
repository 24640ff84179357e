"""summarize_monitor_log over known JSONL files: exact figures, error lines tolerated."""

from __future__ import annotations

import json
from pathlib import Path

from case_runners.monitors.summary import summarize_monitor_log

HOST_LOG = """\
{"ts": 100.0, "cpu_util": 10.0, "mem_used_bytes": 100, "mem_total_bytes": 1000, "power_w": 50.0}
{"ts": 101.0, "cpu_util": 30.0, "mem_used_bytes": 300, "mem_total_bytes": 1000, "power_w": 70.0}
{"ts": 102.0, "error": "OSError: boom"}

{"ts": 103.0, "cpu_util": 20.0, "mem_used_bytes": 200, "mem_total_bytes": 1000, "power_w": null}
{"ts": 104.0, "cpu_util": 50.0, "mem_used_bytes": 150, "mem_total_bytes": 1000, "power_w": 90.0}
{"ts": 105.0, "cpu_ut
"""


def device(index: int, util, mem, power, temp, energy) -> dict:
    return {"index": index, "util": util, "mem_used_bytes": mem, "mem_total_bytes": 8000,
            "power_w": power, "temp_c": temp, "energy_j": energy}


ACCEL_RECORDS = [
    {"ts": 10.0, "devices": [device(0, 50, 1000, 100.0, 40, 5000.0), device(1, 0, 500, 60.0, 35, None)]},
    {"ts": 11.0, "devices": [device(0, 100, 3000, 200.0, 50, 5150.0), device(1, 20, 700, 80.0, 36, None)]},
    {"ts": 12.0, "error": "NVMLError_GpuIsLost: GPU is lost"},
    {"ts": 13.0, "devices": [device(0, 90, 2000, 150.0, 45, 5500.0), device(1, 40, 600, None, None, None)]},
]


def test_host_log(tmp_path: Path) -> None:
    path = tmp_path / "host_monitor.jsonl"
    path.write_text(HOST_LOG)
    summary = summarize_monitor_log(path)
    assert summary == {
        "schema": "perfplay.monitor_summary/1", "path": str(path), "missing": False, "kind": "host",
        "samples": 4, "errors": 2, "first_error": "OSError: boom", "interval_s": 1.0, "duration_s": 4.0,
        "util_mean": 27.5, "util_max": 50.0, "mem_used_max_bytes": 300, "mem_total_bytes": 1000,
        "power_mean_w": 70.0, "power_max_w": 90.0,
        "energy_j": 300.0,  # (50+70)/2 * 1 s + (70+90)/2 * 3 s: the null reading is skipped
        "energy_source": "integrated", "temp_max_c": None,
        "others_util_mean": None, "saturated_by_others": None,  # samples without run_cpu_util (a log from before)
        "devices": [],
    }


def test_accelerator_log(tmp_path: Path) -> None:
    path = tmp_path / "nvidia_monitor.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ACCEL_RECORDS))
    summary = summarize_monitor_log(path)
    assert summary["kind"] == "accelerator" and summary["samples"] == 3 and summary["errors"] == 1
    assert summary["first_error"] == "NVMLError_GpuIsLost: GPU is lost"
    assert summary["devices"] == [
        {"index": 0, "util_mean": 80.0, "util_max": 100, "mem_used_max_bytes": 3000, "mem_total_bytes": 8000,
         "power_mean_w": 150.0, "power_max_w": 200.0, "energy_j": 500.0, "energy_source": "counter",
         "temp_max_c": 50},
        {"index": 1, "util_mean": 20.0, "util_max": 40, "mem_used_max_bytes": 700, "mem_total_bytes": 8000,
         "power_mean_w": 70.0, "power_max_w": 80.0, "energy_j": 70.0, "energy_source": "integrated",
         "temp_max_c": 36},
    ]
    # node: util/mem/temp per device; power and energy summed over devices
    assert {k: summary[k] for k in ("util_mean", "util_max", "mem_used_max_bytes", "mem_total_bytes",
                                     "power_mean_w", "power_max_w", "energy_j", "energy_source",
                                     "temp_max_c", "interval_s", "duration_s")} == {
        "util_mean": 50.0, "util_max": 100, "mem_used_max_bytes": 3000, "mem_total_bytes": 8000,
        "power_mean_w": 196.667, "power_max_w": 280.0, "energy_j": 570.0, "energy_source": "mixed",
        "temp_max_c": 50, "interval_s": 1.5, "duration_s": 3.0}


def test_empty_and_missing_logs(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    for path, missing in ((empty, False), (tmp_path / "absent.jsonl", True)):
        summary = summarize_monitor_log(path)
        assert summary["missing"] is missing
        assert summary["samples"] == 0 and summary["errors"] == 0 and summary["kind"] is None
        assert summary["util_mean"] is None and summary["energy_j"] is None and summary["interval_s"] is None


def test_only_error_lines(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"ts": 1.0, "error": "x"}\n[1, 2]\nnot json\n')
    summary = summarize_monitor_log(path)
    assert summary["samples"] == 0 and summary["errors"] == 3 and summary["first_error"] == "x"
