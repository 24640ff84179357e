"""What identifies one monitor of one run, and the files it owns in the log directory."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from case_runners.monitors.base import MonitorError

SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class MonitorSpec:
    log_dir: Path
    name: str
    run_id: str = "manual"
    interval: float = 1.0
    vendor: str | None = None

    def __post_init__(self) -> None:
        for key in ("name", "run_id"):
            value = getattr(self, key)
            if not SAFE_ID.match(value):
                raise MonitorError(f"--{key.replace('_', '-')} {value!r} must match {SAFE_ID.pattern} "
                                   "(it becomes part of file names)")
        if not 0.01 <= self.interval <= 3600:
            raise MonitorError(f"--interval {self.interval} must be between 0.01 and 3600 seconds")
        object.__setattr__(self, "log_dir", Path(self.log_dir).absolute())

    @property
    def label(self) -> str:
        return f"{self.name} monitor (run {self.run_id})"

    @property
    def pid_path(self) -> Path:
        """Per name and run id, inside the run's own log dir: concurrent runs never share one."""
        return self.log_dir / f"{self.name}_monitor.{self.run_id}.pid"

    @property
    def samples_path(self) -> Path:
        return self.log_dir / f"{self.name}_monitor.jsonl"

    @property
    def daemon_log_path(self) -> Path:
        """The daemon's stdout/stderr (tracebacks); removed at a clean exit when empty."""
        return self.log_dir / f"{self.name}_monitor.{self.run_id}.log"

    @property
    def sys_info_path(self) -> Path:
        return self.log_dir / ("sys_info.json" if self.name == "host" else f"{self.name}_sys_info.json")
