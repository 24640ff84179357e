"""Host readings: /proc parsing on fixed text, RAPL and temperature discovery on fake sysfs trees."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from case_runners.core.run_ids import RUN_ID_ENV
from case_runners.monitors import counters
from case_runners.monitors.base import DEVICE_FIELDS, AcceleratorMonitor, MonitorError
from case_runners.monitors.host import HostMonitor
from case_runners.monitors.loader import load_monitor, load_vendor_monitor_class
from case_runners.monitors.runner import next_due, sample_loop, take_sample

STAT = "cpu  {user} 0 {system} {idle} {iowait} 0 0 0 0 0\ncpu0 1 0 1 1 0 0 0 0 0 0\nintr 1\n"
MEMINFO = "MemTotal:       16000 kB\nMemFree:         2000 kB\nMemAvailable:    6000 kB\nBuffers:  100 kB\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_host_monitor_values_are_sane() -> None:
    monitor = HostMonitor()
    monitor.open()
    sum(i * i for i in range(200_000))  # let a few clock ticks pass
    record = monitor.record()
    monitor.close()
    assert set(record) == {"cpu_util", "run_cpu_util", "mem_used_bytes", "mem_total_bytes", "power_w"}
    assert record["cpu_util"] is None or 0.0 <= record["cpu_util"] <= 100.0
    assert 0 < record["mem_used_bytes"] <= record["mem_total_bytes"]
    assert record["power_w"] is None or record["power_w"] >= 0
    info = monitor.sys_info()
    assert info["logical_cpus"] >= 1 and info["mem_total_bytes"] == record["mem_total_bytes"]


def test_cpu_utilization_from_stat_deltas(tmp_path: Path) -> None:
    stat = write(tmp_path / "stat", STAT.format(user=100, system=50, idle=800, iowait=50))
    assert counters.read_cpu_times(stat) == (150, 1000)
    cpu = counters.CpuUtilization(stat)
    write(stat, STAT.format(user=160, system=70, idle=860, iowait=60))  # +80 busy, +70 idle
    assert cpu.percent() == pytest.approx(100 * 80 / 150, abs=0.01)
    assert cpu.percent() is None  # no tick elapsed


def test_memory_used_is_total_minus_available(tmp_path: Path) -> None:
    assert counters.read_memory(write(tmp_path / "m", MEMINFO)) == (10000 * 1024, 16000 * 1024)
    old_kernel = "MemTotal: 16000 kB\nMemFree: 2000 kB\nBuffers: 1000 kB\nCached: 3000 kB\n"
    assert counters.read_memory(write(tmp_path / "old", old_kernel)) == (10000 * 1024, 16000 * 1024)


def fake_rapl_zone(root: Path, zone: str, name: str, energy_uj: int, wrap: int = 1_000_000) -> Path:
    write(root / zone / "name", name + "\n")
    write(root / zone / "max_energy_range_uj", f"{wrap}\n")
    return write(root / zone / "energy_uj", f"{energy_uj}\n")


def test_rapl_sums_packages_skips_subzones_and_psys_and_handles_wrap(tmp_path: Path) -> None:
    package0 = fake_rapl_zone(tmp_path, "intel-rapl:0", "package-0", 900_000)
    package1 = fake_rapl_zone(tmp_path, "intel-rapl:1", "package-1", 100_000)
    core = fake_rapl_zone(tmp_path, "intel-rapl:0:0", "core", 5)
    psys = fake_rapl_zone(tmp_path, "intel-rapl:2", "psys", 5)
    rapl = counters.RaplEnergy.discover(tmp_path)
    assert rapl is not None
    package0.write_text("200000\n")  # wrapped: +300000 uJ
    package1.write_text("400000\n")  # +300000 uJ
    core.write_text("999999\n")
    psys.write_text("999999\n")
    joules, watts = rapl.sample()
    assert joules == pytest.approx(0.6)
    assert watts is not None and watts > 0


def test_rapl_absent_or_unreadable_gives_none(tmp_path: Path) -> None:
    assert counters.RaplEnergy.discover(tmp_path / "missing") is None
    write(tmp_path / "intel-rapl:0" / "name", "package-0")  # no energy_uj: as if root-only
    assert counters.RaplEnergy.discover(tmp_path) is None


def test_cpu_temperature_prefers_hwmon_then_thermal_zones(tmp_path: Path) -> None:
    hwmon, thermal = tmp_path / "hwmon", tmp_path / "thermal"
    write(hwmon / "hwmon0" / "name", "nvme\n")
    write(hwmon / "hwmon0" / "temp1_input", "80000\n")
    write(thermal / "thermal_zone0" / "type", "x86_pkg_temp\n")
    write(thermal / "thermal_zone0" / "temp", "47000\n")
    files = counters.find_cpu_temperature_files(hwmon, thermal)
    assert files == [thermal / "thermal_zone0" / "temp"]

    write(hwmon / "hwmon1" / "name", "coretemp\n")
    write(hwmon / "hwmon1" / "temp1_input", "51000\n")
    write(hwmon / "hwmon1" / "temp2_input", "63500\n")
    files = counters.find_cpu_temperature_files(hwmon, thermal)
    assert files == [hwmon / "hwmon1" / "temp1_input", hwmon / "hwmon1" / "temp2_input"]
    assert counters.read_max_celsius(files) == 63.5
    assert counters.read_max_celsius([tmp_path / "gone"]) is None


def test_cpu_vendor_plugin_samples_one_device() -> None:
    monitor = load_monitor("cpu")
    assert isinstance(monitor, AcceleratorMonitor) and type(monitor).__name__ == "CpuPackagesMonitor"
    monitor.open()
    record = monitor.record()
    monitor.close()
    (device,) = record["devices"]
    assert tuple(device) == DEVICE_FIELDS
    assert device["index"] == 0
    assert device["util"] is None or 0 <= device["util"] <= 100
    assert device["mem_used_bytes"] is None and device["mem_total_bytes"] > 0, "no run: no process to measure"
    assert monitor.sys_info()["count"] == 1


def test_cpu_vendor_memory_is_the_round_s_ranks_not_the_machine_s(monkeypatch, sleepers) -> None:
    """The cpu vendor's "device memory" is what the round's ranks hold (their resident memory), not the RAM every
    process of the host uses: a rank of 96 MiB beside a process of another run (same size) counts once."""
    run_id = f"mem-{uuid.uuid4().hex[:8]}"
    hold = "data = b'x' * (96 << 20)"  # written pages: resident
    sleepers(code=hold, run_id=run_id, env={"LOCAL_RANK": "0"})
    sleepers(code=hold, run_id="another-run", env={"LOCAL_RANK": "0"})
    sleepers(run_id=run_id)  # the launcher or a monitor of the run: not a rank
    monkeypatch.setenv(RUN_ID_ENV, run_id)  # as the round's monitor daemon has it
    monitor = load_monitor("cpu")
    monitor.open()
    (device,) = monitor.record()["devices"]
    monitor.close()
    assert 96 << 20 <= device["mem_used_bytes"] < 160 << 20, device
    assert device["mem_total_bytes"] == counters.read_memory()[1]


def test_loader_rejects_bad_names_and_ambiguous_plugins(tmp_path: Path) -> None:
    assert isinstance(load_monitor("host"), HostMonitor)
    with pytest.raises(MonitorError, match="must match"):
        load_vendor_monitor_class("../cpu")
    with pytest.raises(MonitorError, match="no monitor plugin"):
        load_vendor_monitor_class("nosuch", tmp_path)
    write(tmp_path / "vendor" / "two" / "monitor.py",
          "from case_runners.monitors.base import AcceleratorMonitor\n"
          "class A(AcceleratorMonitor):\n    def sample(self): return []\n"
          "class B(AcceleratorMonitor):\n    def sample(self): return []\n")
    with pytest.raises(MonitorError, match="exactly one.*found A, B"):
        load_vendor_monitor_class("two", tmp_path)


class FlakyMonitor(AcceleratorMonitor):
    """Fails every second sample."""

    def __init__(self) -> None:
        self.calls = 0

    def sample(self) -> list[dict]:
        self.calls += 1
        if self.calls % 2 == 0:
            raise OSError("device went away")
        return [{"index": 0, "util": 1}]


class TicksThenStop:
    """Stands in for StopSignal: lets `ticks` timeouts pass, then reports a stop."""

    def __init__(self, ticks: int) -> None:
        self.ticks = ticks

    def wait(self, timeout_s: float) -> bool:
        self.ticks -= 1
        return self.ticks < 0


def test_failed_samples_are_error_lines_not_gaps(tmp_path: Path) -> None:
    path = tmp_path / "x_monitor.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        assert sample_loop(FlakyMonitor(), fd, 0.01, TicksThenStop(4)) == (4, None)
    finally:
        os.close(fd)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [("error" in line) for line in lines] == [False, True, False, True]
    assert lines[1]["error"] == "OSError: device went away" and "ts" in lines[1]
    assert lines[0]["devices"] == [{"index": 0, "util": 1}]


def test_unserialisable_sample_becomes_an_error_line() -> None:
    class Odd(AcceleratorMonitor):
        def sample(self) -> list[dict]:
            return [{"index": 0, "util": float("nan")}]

    assert "error" in json.loads(take_sample(Odd()))


def test_next_due_stays_on_the_grid() -> None:
    assert next_due(10.0, 1.0, 10.2) == 11.0
    assert next_due(10.0, 1.0, 13.5) == 14.0  # slow sample: missed ticks are skipped
    assert next_due(10.0, 0.5, 10.5) == 11.0
