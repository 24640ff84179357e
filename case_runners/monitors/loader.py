"""Find the monitor for a name: the built-in host monitor, or a vendor plugin loaded by file path."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

from case_runners.core.paths import VENDOR_NAME, project_root
from case_runners.monitors.base import AcceleratorMonitor, Monitor, MonitorError
from case_runners.monitors.host import HostMonitor


def load_monitor(name: str, vendor: str | None = None, root: Path | None = None) -> Monitor:
    """A fresh, unopened monitor: HostMonitor for "host", else the plugin of vendor (default: name)."""
    if name == "host":
        return HostMonitor()
    return load_vendor_monitor_class(vendor or name, root)()


def vendor_monitor_path(vendor: str, root: Path | None = None) -> Path:
    if not VENDOR_NAME.match(vendor):
        raise MonitorError(f"vendor name {vendor!r} must match {VENDOR_NAME.pattern}")
    return (root or project_root()) / "vendor" / vendor / "monitor.py"


def load_vendor_monitor_class(vendor: str, root: Path | None = None) -> type[AcceleratorMonitor]:
    """The one AcceleratorMonitor subclass defined in vendor/<vendor>/monitor.py."""
    path = vendor_monitor_path(vendor, root)
    if not path.is_file():
        raise MonitorError(f"{path}: no monitor plugin for vendor {vendor!r}")
    spec = importlib.util.spec_from_file_location(f"perfplay_vendor_{vendor.replace('-', '_')}_monitor", path)
    if spec is None or spec.loader is None:
        raise MonitorError(f"{path}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # a failing import surfaces as its own exception, with its traceback
    classes = [obj for obj in vars(module).values()
               if inspect.isclass(obj) and issubclass(obj, AcceleratorMonitor)
               and obj.__module__ == module.__name__ and not inspect.isabstract(obj)]
    if len(classes) != 1:
        names = ", ".join(c.__name__ for c in classes) or "none"
        raise MonitorError(f"{path}: expected exactly one AcceleratorMonitor subclass, found {names}")
    return classes[0]
