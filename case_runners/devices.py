"""How many devices of a vendor's kind a host has (for the host preflight: devices >= nproc)."""

from __future__ import annotations

import os
from typing import Any

from case_runners.vendors import load_vendor


def list_devices(vendor_name: str) -> dict[str, Any]:
    vendor = load_vendor(vendor_name)
    if vendor["device"] == "cpu":
        count = os.cpu_count() or 1
        return {"vendor": vendor_name, "kind": "cpu", "count": count,
                "devices": [{"index": i, "name": "cpu core"} for i in range(count)]}
    return {"vendor": vendor_name, "kind": vendor["device"], **_nvml_devices()}


def _nvml_devices() -> dict[str, Any]:
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return {"count": 0, "devices": [], "error": "nvidia-ml-py is not installed"}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return {"count": 0, "devices": [], "error": f"NVML: {exc}"}
    try:
        devices = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(handle)
            devices.append({"index": i, "name": name.decode() if isinstance(name, bytes) else name,
                            "memory_bytes": pynvml.nvmlDeviceGetMemoryInfo(handle).total})
        return {"count": len(devices), "devices": devices}
    finally:
        pynvml.nvmlShutdown()
