"""What identifies one monitor of one run, and the files it owns in the log directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from case_runners.core import pidfiles
from case_runners.core.defaults import MONITOR_INTERVAL_RANGE, MONITOR_INTERVAL_S
from case_runners.core.paths import VENDOR_NAME
from case_runners.core.processes import ProcessId
from case_runners.core.run_ids import MANUAL_RUN_ID, RUN_ID_RULE, is_run_id
from case_runners.monitors.base import MonitorError

SAMPLES_SUFFIX = "_monitor.jsonl"  # a monitor's samples: <name>_monitor.jsonl in its log dir


@dataclass(frozen=True)
class MonitorSpec:
    log_dir: Path
    name: str
    run_id: str = MANUAL_RUN_ID
    interval: float = MONITOR_INTERVAL_S
    vendor: str | None = None
    owner: ProcessId | None = None  # the process the monitor belongs to (a launcher): it stops when that ends
    deadline: float | None = None  # time.time() at which it stops whatever happens

    def __post_init__(self) -> None:
        if not VENDOR_NAME.match(self.name):  # "host" or a vendor's
            raise MonitorError(f"--name {self.name!r} must match {VENDOR_NAME.pattern} (it becomes part of file names)")
        if not is_run_id(self.run_id):
            raise MonitorError(f"--run-id {self.run_id!r} is not a run id ({RUN_ID_RULE})")
        low, high = MONITOR_INTERVAL_RANGE
        if not low <= self.interval <= high:
            raise MonitorError(f"--interval {self.interval} must be between {low:g} and {high:g} seconds")
        object.__setattr__(self, "log_dir", Path(self.log_dir).absolute())

    @property
    def label(self) -> str:
        return f"{self.name} monitor (run {self.run_id})"

    @property
    def pid_path(self) -> Path:
        """Per name and run id, inside the run's own log dir: concurrent runs never share one."""
        return pidfiles.pid_path(self.log_dir, f"{self.name}_monitor", self.run_id)

    @property
    def samples_path(self) -> Path:
        return self.log_dir / f"{self.name}{SAMPLES_SUFFIX}"

    @property
    def daemon_log_path(self) -> Path:
        """The daemon's stdout/stderr (tracebacks); removed at a clean exit when empty."""
        return self.log_dir / f"{self.name}_monitor.{self.run_id}.log"

    @property
    def sys_info_path(self) -> Path:
        return self.log_dir / ("sys_info.json" if self.name == "host" else f"{self.name}_sys_info.json")
