"""How many devices of a vendor's kind a host has (for the host preflight: devices >= nproc): the vendor's
runtime.py device_count(), or torch.<device>.device_count() where the hook has none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from case_runners.errors import PerfplayError
from case_runners.vendor_runtime import VendorRuntime
from case_runners.vendors import load_vendor


def list_devices(vendor_name: str, root: Path | None = None) -> dict[str, Any]:
    vendor = load_vendor(vendor_name, root)
    found: dict[str, Any] = {"vendor": vendor_name, "kind": vendor["device"]}
    try:
        runtime = VendorRuntime(vendor_name, vendor["device"], vendor["dist_backend"], root)
        return {**found, "count": runtime.device_count()}
    except PerfplayError as exc:
        return {**found, "count": 0, "error": str(exc)}
