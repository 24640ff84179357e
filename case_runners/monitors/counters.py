"""Linux counters read straight from /proc and /sys: CPU time, memory, RAPL energy, temperatures.

No psutil and no subprocess: each reading is a small file read, cheap enough for a 1 Hz loop.
Roots are parameters so tests can point them at a fake tree.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from case_runners.core.processes import PROC, Stat, list_pids, read_environ, read_stat
from case_runners.core.run_ids import RUN_ID_ENV

PROC_STAT = Path("/proc/stat")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
PROC_MEMINFO = Path("/proc/meminfo")
PROC_CPUINFO = Path("/proc/cpuinfo")
POWERCAP = Path("/sys/class/powercap")
HWMON = Path("/sys/class/hwmon")
THERMAL = Path("/sys/class/thermal")
CPU_TOPOLOGY = Path("/sys/devices/system/cpu")

CPU_HWMON_DRIVERS = ("coretemp", "k10temp", "zenpower", "cpu_thermal", "cpu-thermal")
CPU_THERMAL_ZONES = ("x86_pkg_temp", "cpu-thermal", "cpu_thermal", "soc_thermal", "cpu0-thermal")


def read_cpu_times(stat_path: Path = PROC_STAT) -> tuple[int, int]:
    """(busy, total) clock ticks over all CPUs from the aggregate "cpu" line of /proc/stat."""
    with open(stat_path, "rb") as f:
        fields = f.readline().split()
    if not fields or fields[0] != b"cpu":
        raise ValueError(f"{stat_path}: first line is not the aggregate cpu line")
    # user nice system idle iowait irq softirq steal (guest time is already inside user/nice)
    ticks = [int(x) for x in fields[1:9]]
    total = sum(ticks)
    return total - ticks[3] - ticks[4], total


class CpuUtilization:
    """Busy percentage of all CPUs between successive calls (the first call: since construction)."""

    def __init__(self, stat_path: Path = PROC_STAT) -> None:
        self._path = stat_path
        self._last = read_cpu_times(stat_path)

    def percent(self) -> float | None:
        busy, total = read_cpu_times(self._path)
        d_busy, d_total = busy - self._last[0], total - self._last[1]
        self._last = (busy, total)
        if d_total <= 0:
            return None  # no tick elapsed: no information, not 0 %
        return round(100.0 * min(max(d_busy / d_total, 0.0), 1.0), 2)


RANK_ENV = "LOCAL_RANK"  # torch.distributed's, set by the launcher in each rank's environment (and its workers')


@dataclass(frozen=True)
class RunProcess:
    pid: int
    stat: Stat
    rank: bool  # a rank or one of its workers (not the launcher, a monitor or a hook)


class RunProcesses:
    """The live processes of one run: those with RUN_ID_ENV=run_id in their environment. Each process's environment
    is read once (another user's is unreadable: not the run's, as it is not)."""

    def __init__(self, run_id: str, proc: str = PROC) -> None:
        self._run_id, self._proc = run_id, proc
        self._known: dict[tuple[int, int], tuple[bool, bool]] = {}  # (pid, start) -> (the run's, a rank)

    def scan(self) -> list[RunProcess]:
        found, seen = [], {}
        for pid in list_pids(self._proc):
            stat = read_stat(pid, self._proc)
            if stat is None:
                continue
            key = (pid, stat.start)
            kind = self._known.get(key)
            if kind is None:
                environ = read_environ(pid, self._proc)
                kind = (environ.get(RUN_ID_ENV) == self._run_id, RANK_ENV in environ)
            seen[key] = kind
            if kind[0]:
                found.append(RunProcess(pid, stat, kind[1]))
        self._known = seen
        return found

    def rank_rss_bytes(self) -> int:
        """The resident memory of the run's ranks and their workers, summed (pages shared between them count once
        per process)."""
        total = 0
        for process in self.scan():
            if process.rank and process.stat.state not in ("Z", "X"):
                with contextlib.suppress(OSError, ValueError, IndexError):
                    total += int(Path(f"{self._proc}/{process.pid}/statm").read_text().split()[1]) * PAGE_SIZE
        return total


class RunCpuUtilization:
    """The CPU share of one run's processes (RunProcesses: the launcher, its ranks, their workers, the monitors)
    between successive calls, in percent of all CPUs (CpuUtilization's scale). A process's time includes the
    children it waited for, so a rank that ends keeps counting through its launcher."""

    def __init__(self, run_id: str, stat_path: Path = PROC_STAT, proc: str = PROC) -> None:
        self._stat_path, self._processes = stat_path, RunProcesses(run_id, proc)
        self._last = (self._run_ticks(), read_cpu_times(stat_path)[1])

    def _run_ticks(self) -> int:
        return sum(p.stat.cpu_ticks for p in self._processes.scan())

    def percent(self) -> float | None:
        run, total = self._run_ticks(), read_cpu_times(self._stat_path)[1]
        d_run, d_total = run - self._last[0], total - self._last[1]
        self._last = (run, total)
        if d_total <= 0:
            return None
        return round(100.0 * min(max(d_run / d_total, 0.0), 1.0), 2)  # < 0: a process reaped by another's parent


def read_memory(meminfo_path: Path = PROC_MEMINFO) -> tuple[int, int]:
    """(used, total) bytes of system RAM; used = total - available, as `free` reports it."""
    kib: dict[str, int] = {}
    with open(meminfo_path) as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("MemTotal", "MemAvailable", "MemFree", "Buffers", "Cached"):
                kib[key] = int(rest.split()[0])
    total = kib["MemTotal"]
    available = kib.get("MemAvailable", kib.get("MemFree", 0) + kib.get("Buffers", 0) + kib.get("Cached", 0))
    return (total - available) * 1024, total * 1024


def read_cpu_model(cpuinfo_path: Path = PROC_CPUINFO) -> str | None:
    """The first "model name" (x86) or "Model"/"Hardware" (arm) of /proc/cpuinfo."""
    try:
        with open(cpuinfo_path) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return None


def count_cpu_packages(topology_root: Path = CPU_TOPOLOGY) -> int | None:
    """Number of distinct physical packages (sockets), or None where sysfs does not say."""
    ids = set()
    for path in topology_root.glob("cpu[0-9]*/topology/physical_package_id"):
        text = _read_text(path)
        if text is not None:
            ids.add(text)
    return len(ids) or None


class RaplEnergy:
    """Cumulative CPU package energy from the RAPL counters, corrected for counter wrap-around."""

    def __init__(self, zones: list[tuple[Path, int]]) -> None:
        self._zones = zones  # (energy_uj file, max_energy_range_uj)
        self._last_uj = [self._read_uj(path) for path, _ in zones]
        self._joules = 0.0
        self._last_t = time.monotonic()

    @classmethod
    def discover(cls, powercap_root: Path = POWERCAP) -> RaplEnergy | None:
        """Package zones (intel-rapl:N, named package-*) whose counter this user can read; None if none.

        Sub-zones (core, uncore, dram) lie inside a package and psys would double count, so both are skipped.
        Since CVE-2020-8694 energy_uj is usually root-only: then there is no power reading, not an error.
        """
        zones = []
        for zone in sorted(powercap_root.glob("intel-rapl:*")):
            if zone.name.count(":") != 1 or not (_read_text(zone / "name") or "").startswith("package"):
                continue
            try:
                int((zone / "energy_uj").read_text())
                wrap = int((zone / "max_energy_range_uj").read_text())
            except (OSError, ValueError):
                continue
            zones.append((zone / "energy_uj", wrap))
        return cls(zones) if zones else None

    @staticmethod
    def _read_uj(path: Path) -> int:
        with open(path, "rb") as f:
            return int(f.read())

    def sample(self) -> tuple[float, float | None]:
        """(joules since construction, mean watts since the previous sample)."""
        delta_j = 0.0
        for i, (path, wrap) in enumerate(self._zones):
            now_uj = self._read_uj(path)
            delta_uj = now_uj - self._last_uj[i]
            if delta_uj < 0:
                delta_uj += wrap
            self._last_uj[i] = now_uj
            delta_j += delta_uj / 1e6
        now = time.monotonic()
        elapsed, self._last_t = now - self._last_t, now
        self._joules += delta_j
        watts = round(delta_j / elapsed, 3) if elapsed > 0 else None
        return round(self._joules, 3), watts


def find_cpu_temperature_files(hwmon_root: Path = HWMON, thermal_root: Path = THERMAL) -> list[Path]:
    """Readable CPU temperature inputs (millidegrees C): hwmon coretemp/k10temp first, else thermal zones."""
    files = []
    for hwmon in sorted(hwmon_root.glob("hwmon*")):
        if _read_text(hwmon / "name") in CPU_HWMON_DRIVERS:
            files += sorted(hwmon.glob("temp*_input"))
    if not files:
        files = [zone / "temp" for zone in sorted(thermal_root.glob("thermal_zone*"))
                 if _read_text(zone / "type") in CPU_THERMAL_ZONES]
    return [path for path in files if _read_text(path) is not None]


def read_max_celsius(files: list[Path]) -> float | None:
    """Hottest of the given millidegree inputs, or None if none could be read."""
    values = []
    for path in files:
        text = _read_text(path)
        if text is not None and text.lstrip("-").isdigit():
            values.append(int(text) / 1000.0)
    return max(values) if values else None


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
