"""The accelerator monitor of the test chip, filled in from new-vendor's scaffold: the chip is the host's CPU, so its
"management library" is /proc (utilisation, memory), read in-process, shared by the board's devices.

Plugin: the AcceleratorMonitor below, loaded by case_runners.monitors.loader; the daemon calls open() once, sample()
every interval, close() at the end, and writes sys_info() once. Standalone (FlagPerf vendor-monitor contract),
with perfplay installed in the venv (make does):
    .venv/bin/python vendor/<vendor>/monitor.py -o start|stop|restart|status -l DIR [--run-id ID] [--interval S]
"""

from __future__ import annotations

import sys
from typing import Any

from case_runners.monitors.base import AcceleratorMonitor
from case_runners.monitors.counters import CpuUtilization, read_cpu_model, read_memory
from case_runners.vendors.runtime import VendorRuntime

# As in vendor.yaml:
VENDOR = "testchip"
DEVICE = "cpu"
BACKEND = "testccl"


class TestchipMonitor(AcceleratorMonitor):
    name = VENDOR

    def __init__(self) -> None:
        self._count = 0
        self._cpu: CpuUtilization | None = None

    def open(self) -> None:
        self._cpu = CpuUtilization()
        self._count = _device_count()

    def close(self) -> None:
        self._cpu = None

    def sample(self) -> list[dict[str, Any]]:
        if self._cpu is None:
            raise RuntimeError("TestchipMonitor.sample() before open()")
        util = self._cpu.percent()
        used, total = read_memory()
        return [{"index": index, "util": util, "mem_used_bytes": used, "mem_total_bytes": total, "power_w": None,
                 "temp_c": None, "energy_j": None} for index in range(self._count)]

    def sys_info(self) -> dict[str, Any]:
        return {"device": DEVICE, "count": self._count, "driver_version": "testchip 1.0.0",
                "devices": [{"index": index, "name": read_cpu_model()} for index in range(self._count)]}


def _device_count() -> int:
    """The runtime hook's probe: the board's devices."""
    return VendorRuntime(VENDOR, DEVICE, BACKEND).device_count()


if __name__ == "__main__":
    from case_runners.monitors.cli import main

    raise SystemExit(main(["--name", VENDOR, *sys.argv[1:]]))
