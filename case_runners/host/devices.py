"""How many devices of a vendor's kind a host has (for the host preflight: devices >= nproc): the vendor's
runtime.py device_count(), or torch.<device>.device_count() where the hook has none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from case_runners.core.errors import PerfplayError
from case_runners.core.paths import display_path, project_root
from case_runners.vendors.calls import bounded
from case_runners.vendors.description import load_vendor
from case_runners.vendors.layout import RUNTIME_FILE, vendor_dir
from case_runners.vendors.runtime import VendorRuntime


def list_devices(vendor_name: str, root: Path | None = None) -> dict[str, Any]:
    vendor = load_vendor(vendor_name, root)
    found: dict[str, Any] = {"vendor": vendor_name, "kind": vendor.device}
    def count(note: Callable[[str], None]) -> int:
        runtime = VendorRuntime(vendor_name, vendor.device, vendor.dist_backend, root)
        runtime.on_call = note
        return runtime.device_count()

    try:  # the vendor's code, bounded: a device_count() that hangs fails the preflight naming it
        shown = display_path(vendor_dir(root or project_root(), vendor_name) / RUNTIME_FILE, root)
        return {**found, "count": bounded(count, f"{shown}: loading it")}
    except PerfplayError as exc:
        return {**found, "count": 0, "error": str(exc)}
