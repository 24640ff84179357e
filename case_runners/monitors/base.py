"""The monitor plugin API.

A monitor is opened once, sampled once per interval by the daemon and closed at the end.
Vendors subclass AcceleratorMonitor in vendor/<vendor>/monitor.py and return one dict per device:
{"index", "util", "mem_used_bytes", "mem_total_bytes", "power_w", "temp_c", "energy_j"},
with None for any field the device cannot report. energy_j is a cumulative counter in joules
(only its differences matter) or None. A device that cannot be read at all (lost) keeps its entry, every field
None, with an "error" saying why.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from case_runners.core.errors import PerfplayError

DEVICE_FIELDS = ("index", "util", "mem_used_bytes", "mem_total_bytes", "power_w", "temp_c", "energy_j")


class MonitorError(PerfplayError):
    """A monitor that cannot be loaded, started or stopped."""


class Monitor(ABC):
    """Anything the daemon can sample: record() returns one sample without its timestamp."""

    name: str = "monitor"

    def open(self) -> None:
        """Acquire handles and take baseline readings; raise if the monitor cannot work here."""

    @abstractmethod
    def record(self) -> dict[str, Any]:
        """One sample (the daemon adds "ts"); an exception becomes an error line in the log."""

    def close(self) -> None:
        """Release what open() acquired."""

    def sys_info(self) -> dict[str, Any]:
        """Static facts written once on start (models, drivers, counts)."""
        return {}


class AcceleratorMonitor(Monitor):
    """Vendor plugin: samples every device of the node."""

    @abstractmethod
    def sample(self) -> list[dict[str, Any]]:
        """One dict per device with DEVICE_FIELDS; None where a field is not available."""

    def record(self) -> dict[str, Any]:
        return {"devices": self.sample()}
