"""The host monitor: CPU utilisation, RAM and CPU package power of the node, read in-process."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path
from typing import Any

from case_runners.core.run_ids import RUN_ID_ENV
from case_runners.monitors.base import Monitor
from case_runners.monitors.counters import (
    PROC_MEMINFO,
    PROC_STAT,
    CpuUtilization,
    RaplEnergy,
    RunCpuUtilization,
    count_cpu_packages,
    read_cpu_model,
    read_memory,
)

OS_RELEASE = Path("/etc/os-release")


class HostMonitor(Monitor):
    """Sample: {"cpu_util": 0..100, "run_cpu_util": the run's own processes' part of it (None outside a run),
    "mem_used_bytes", "mem_total_bytes", "power_w": RAPL watts | None}."""

    name = "host"

    def __init__(self, stat_path: Path = PROC_STAT, meminfo_path: Path = PROC_MEMINFO) -> None:
        self._stat_path = stat_path
        self._meminfo_path = meminfo_path
        self._cpu: CpuUtilization | None = None
        self._run_cpu: RunCpuUtilization | None = None
        self._rapl: RaplEnergy | None = None

    def open(self) -> None:
        self._cpu = CpuUtilization(self._stat_path)
        run_id = os.environ.get(RUN_ID_ENV)  # the daemon of a round carries its run's id
        self._run_cpu = RunCpuUtilization(run_id, self._stat_path) if run_id else None
        self._rapl = RaplEnergy.discover()

    def record(self) -> dict[str, Any]:
        if self._cpu is None:
            raise RuntimeError("HostMonitor.record() before open()")
        used, total = read_memory(self._meminfo_path)
        power = self._rapl.sample()[1] if self._rapl else None
        run = self._run_cpu.percent() if self._run_cpu else None
        return {"cpu_util": self._cpu.percent(), "run_cpu_util": run, "mem_used_bytes": used, "mem_total_bytes": total,
                "power_w": power}

    def sys_info(self) -> dict[str, Any]:
        uname = os.uname()
        return {
            "hostname": socket.gethostname(),
            "os": _os_pretty_name(),
            "kernel": uname.release,
            "arch": uname.machine,
            "cpu_model": read_cpu_model(),
            "cpu_packages": count_cpu_packages(),
            "logical_cpus": os.cpu_count(),
            "mem_total_bytes": read_memory(self._meminfo_path)[1],
            "python": platform.python_version(),
            "power_source": "rapl" if self._rapl else None,
        }


def _os_pretty_name(path: Path = OS_RELEASE) -> str | None:
    try:
        for line in path.read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.partition("=")[2].strip().strip('"')
    except OSError:
        pass
    return None
