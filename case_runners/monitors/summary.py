"""Summarise a monitor's JSONL log: utilisation, peak memory, power, energy, temperature.

Host logs give node figures. Accelerator logs give per-device figures plus node figures, where
util_* / mem_* / temp_max_c are per device (mean over devices, max over devices) and power_* /
energy_j are totals over the devices. Energy comes from the devices' energy counters where every
sample has one, else from integrating power over time (trapezoids between successive readings).
Error lines and unparsable lines are counted, never fatal; an empty or missing file gives samples 0.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

SCHEMA = "perfplay.monitor_summary/1"
# A host sample is saturated by others when the host's CPUs were this busy and processes outside the round (not
# carrying its run id) took at least this share of them; a round's host was saturated when such samples are at least
# SATURATED_SHARE of those that could tell (its figures then depend on the neighbours more than on the round).
SATURATED_BUSY_PCT, SATURATED_OTHERS_PCT, SATURATED_SHARE = 90.0, 25.0, 0.5


def summarize_monitor_log(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    samples, errors, first_error = read_samples(path)
    times = sorted(s["ts"] for s in samples)
    summary: dict[str, Any] = {
        "schema": SCHEMA, "path": str(path), "missing": not path.exists(),
        "kind": _kind(samples), "samples": len(samples), "errors": errors, "first_error": first_error,
        "interval_s": _round(statistics.median(b - a for a, b in zip(times, times[1:])))
        if len(times) > 1 else None,
        "duration_s": _round(times[-1] - times[0]) if times else None,
    }
    if summary["kind"] == "accelerator":
        devices = _device_series(samples)
        summary.update(_node_of_devices(samples, devices))
        summary["devices"] = [{"index": index, **_figures(series)} for index, series in sorted(devices.items())]
    else:
        summary.update(_figures({"ts": [s["ts"] for s in samples],
                                 "util": [s.get("cpu_util") for s in samples],
                                 "mem_used_bytes": [s.get("mem_used_bytes") for s in samples],
                                 "mem_total_bytes": [s.get("mem_total_bytes") for s in samples],
                                 "power_w": [s.get("power_w") for s in samples],
                                 "temp_c": [s.get("temp_c") for s in samples],
                                 "energy_j": [None] * len(samples)}))
        summary.update(_others(samples))
        summary["devices"] = []
    return summary


def read_samples(path: Path) -> tuple[list[dict[str, Any]], int, str | None]:
    """A monitor log's valid samples (with a numeric ts), the number of bad lines and the first error message."""
    samples: list[dict[str, Any]] = []
    errors, first_error = 0, None
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return [], 0, None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = {"error": f"line {number}: not JSON (truncated write?)"}
        if not isinstance(record, dict) or "error" in record or not isinstance(record.get("ts"), (int, float)):
            errors += 1
            first_error = first_error or str(record.get("error") if isinstance(record, dict) else record)
            continue
        samples.append(record)
    return samples, errors, first_error


def _kind(samples: list[dict[str, Any]]) -> str | None:
    if any("devices" in s for s in samples):
        return "accelerator"
    return "host" if samples else None


def _others(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The host's CPU used by processes outside the round (cpu_util - run_cpu_util): its mean, in percent of all CPUs,
    and the share of samples saturated by them; null where no sample has both (a log from before, no run id)."""
    pairs = [(s["cpu_util"], s["run_cpu_util"]) for s in samples
             if _numbers([s.get("cpu_util")]) and _numbers([s.get("run_cpu_util")])]
    if not pairs:
        return {"others_util_mean": None, "saturated_by_others": None}
    others = [(busy, max(busy - run, 0.0)) for busy, run in pairs]
    saturated = sum(1 for busy, other in others if busy >= SATURATED_BUSY_PCT and other >= SATURATED_OTHERS_PCT)
    return {"others_util_mean": _round(statistics.fmean(o for _, o in others)),
            "saturated_by_others": _round(saturated / len(pairs))}


def saturated_by_others(summary: dict[str, Any]) -> bool:
    """Whether a host monitor's summary says other processes saturated the host's CPUs for most of the round."""
    share = summary.get("saturated_by_others")
    return isinstance(share, (int, float)) and share >= SATURATED_SHARE


def _device_series(samples: list[dict[str, Any]]) -> dict[int, dict[str, list[Any]]]:
    """Per device index: aligned lists of ts and each field (None where absent)."""
    fields = ("util", "mem_used_bytes", "mem_total_bytes", "power_w", "temp_c", "energy_j")
    devices: dict[int, dict[str, list[Any]]] = {}
    for sample in samples:
        for position, device in enumerate(sample.get("devices") or []):
            series = devices.setdefault(device.get("index", position), {"ts": [], **{f: [] for f in fields}})
            series["ts"].append(sample["ts"])
            for field in fields:
                series[field].append(device.get(field))
    return devices


def _figures(series: dict[str, list[Any]]) -> dict[str, Any]:
    util = _numbers(series["util"])
    power = _numbers(series["power_w"])
    temps = _numbers(series["temp_c"])
    energy, source = _energy(series["ts"], series["power_w"], series["energy_j"])
    return {
        "util_mean": _round(statistics.fmean(util)) if util else None,
        "util_max": max(util) if util else None,
        "mem_used_max_bytes": _max(series["mem_used_bytes"]),
        "mem_total_bytes": _max(series["mem_total_bytes"]),
        "power_mean_w": _round(statistics.fmean(power)) if power else None,
        "power_max_w": max(power) if power else None,
        "energy_j": energy, "energy_source": source,
        "temp_max_c": max(temps) if temps else None,
    }


def _node_of_devices(samples: list[dict[str, Any]], devices: dict[int, dict[str, list[Any]]]) -> dict[str, Any]:
    per_device = [_figures(series) for series in devices.values()]
    utils = [f["util_mean"] for f in per_device if f["util_mean"] is not None]
    total_power = []  # per sample: sum over the devices that reported power
    for sample in samples:
        watts = _numbers(d.get("power_w") for d in sample.get("devices") or [])
        if watts:
            total_power.append(sum(watts))
    energies = [f["energy_j"] for f in per_device if f["energy_j"] is not None]
    sources = {f["energy_source"] for f in per_device if f["energy_source"]}
    return {
        "util_mean": _round(statistics.fmean(utils)) if utils else None,
        "util_max": _max(f["util_max"] for f in per_device),
        "mem_used_max_bytes": _max(f["mem_used_max_bytes"] for f in per_device),
        "mem_total_bytes": _max(f["mem_total_bytes"] for f in per_device),
        "power_mean_w": _round(statistics.fmean(total_power)) if total_power else None,
        "power_max_w": _round(max(total_power)) if total_power else None,
        "energy_j": _round(sum(energies)) if energies else None,
        "energy_source": (sources.pop() if len(sources) == 1 else "mixed") if sources else None,
        "temp_max_c": _max(f["temp_max_c"] for f in per_device),
    }


def _energy(ts: list[float], power: list[Any], counter: list[Any]) -> tuple[float | None, str | None]:
    """Joules from the cumulative counter (sum of its increases) or, failing that, integrated power."""
    if len(counter) > 1 and all(isinstance(c, (int, float)) for c in counter):
        return _round(sum(max(b - a, 0.0) for a, b in zip(counter, counter[1:]))), "counter"
    points = [(t, p) for t, p in zip(ts, power) if isinstance(p, (int, float))]
    if len(points) < 2:
        return None, None
    joules = sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(points, points[1:]))
    return _round(joules), "integrated"


def _numbers(values: Any) -> list[float]:
    return [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _max(values: Any) -> Any:
    numbers = _numbers(values)
    return max(numbers) if numbers else None


def _round(value: float) -> float:
    return round(value, 3)
