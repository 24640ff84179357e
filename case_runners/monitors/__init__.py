"""Monitors: the host monitor, the accelerator-monitor plugin API and the daemon that runs them.

`python -m case_runners monitor -o start|stop|restart|status -l DIR --name NAME --run-id ID`
runs one monitor as a daemon writing one JSON sample per line to DIR/<NAME>_monitor.jsonl.
"""

from case_runners.monitors.base import AcceleratorMonitor, Monitor, MonitorError
from case_runners.monitors.summary import summarize_monitor_log

__all__ = ["AcceleratorMonitor", "Monitor", "MonitorError", "summarize_monitor_log"]
