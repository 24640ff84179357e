"""CPU vendor "accelerator" monitor: the node's CPU packages together as device 0.

util from /proc/stat; memory used = the round's ranks' resident memory (with their workers', summed; null outside a
run), of the host's RAM as the total; temperature from hwmon coretemp/k10temp or a CPU thermal
zone, power and energy from RAPL package counters; None where this host does not expose them.
Standalone (FlagPerf vendor-monitor contract), with perfplay installed in the venv (make does):
    .venv/bin/python vendor/cpu/monitor.py -o start|stop|restart|status -l DIR [--run-id ID] [--interval S]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from case_runners.core.run_ids import RUN_ID_ENV
from case_runners.monitors.base import AcceleratorMonitor
from case_runners.monitors.counters import (
    CpuUtilization,
    RaplEnergy,
    RunProcesses,
    count_cpu_packages,
    find_cpu_temperature_files,
    read_cpu_model,
    read_max_celsius,
    read_memory,
)


class CpuPackagesMonitor(AcceleratorMonitor):
    name = "cpu"

    def __init__(self) -> None:
        self._cpu: CpuUtilization | None = None
        self._rapl: RaplEnergy | None = None
        self._run: RunProcesses | None = None
        self._temperature_files: list[Path] = []

    def open(self) -> None:
        self._cpu = CpuUtilization()
        self._rapl = RaplEnergy.discover()
        self._temperature_files = find_cpu_temperature_files()
        run_id = os.environ.get(RUN_ID_ENV)  # the daemon of a round carries its run's id
        self._run = RunProcesses(run_id) if run_id else None

    def sample(self) -> list[dict[str, Any]]:
        if self._cpu is None:
            raise RuntimeError("CpuPackagesMonitor.sample() before open()")
        total = read_memory()[1]
        used = self._run.rank_rss_bytes() if self._run else None  # not the host's other processes' RAM
        energy_j, power_w = self._rapl.sample() if self._rapl else (None, None)
        return [{"index": 0, "util": self._cpu.percent(), "mem_used_bytes": used, "mem_total_bytes": total,
                 "power_w": power_w, "temp_c": read_max_celsius(self._temperature_files), "energy_j": energy_j}]

    def sys_info(self) -> dict[str, Any]:
        return {
            "device": "cpu",
            "count": 1,
            "devices": [{"index": 0, "name": read_cpu_model(), "packages": count_cpu_packages(),
                         "logical_cpus": os.cpu_count()}],
            "power_source": "rapl" if self._rapl else None,
            "temperature_files": [str(p) for p in self._temperature_files],
        }


if __name__ == "__main__":
    from case_runners.monitors.cli import main

    raise SystemExit(main(["--name", "cpu", *sys.argv[1:]]))
