"""NVIDIA accelerator monitor: NVML in-process (nvidia-ml-py), no nvidia-smi.

Plugin: NvmlMonitor, loaded by case_runners.monitors.loader.
Standalone (FlagPerf vendor-monitor contract), with perfplay installed in the venv (make does):
    .venv/bin/python vendor/nvidia/monitor.py -o start|stop|restart|status -l DIR [--run-id ID] [--interval S]
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

from case_runners.monitors.base import DEVICE_FIELDS, AcceleratorMonitor

T = TypeVar("T")


class NvmlMonitor(AcceleratorMonitor):
    """Every GPU NVML sees (all of the node's, whatever CUDA_VISIBLE_DEVICES says)."""

    name = "nvidia"

    def __init__(self) -> None:
        self._nvml: Any = None
        self._handles: list[Any] = []
        self._gpu_lost: tuple[type[Exception], ...] = ()  # pynvml's NVMLError_GpuIsLost, where it has it
        self._lost: set[int] = set()  # the GPUs already said to be lost

    def open(self) -> None:
        import pynvml  # lazily: the package only matters on NVIDIA hosts

        pynvml.nvmlInit()
        self._nvml = pynvml
        lost = getattr(pynvml, "NVMLError_GpuIsLost", None)
        self._gpu_lost = (lost,) if lost is not None else ()
        self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]

    def close(self) -> None:
        if self._nvml is not None:
            self._field(self._nvml.nvmlShutdown)
            self._nvml, self._handles = None, []

    def sample(self) -> list[dict[str, Any]]:
        if self._nvml is None:
            raise RuntimeError("NvmlMonitor.sample() before open()")
        return [self._device(index, handle) for index, handle in enumerate(self._handles)]

    def _device(self, index: int, handle: Any) -> dict[str, Any]:
        """The GPU's readings; a lost GPU (fallen off the bus, XID 79) gives nulls and an `error` saying so, and a line
        in the daemon's log the first time."""
        try:
            return self._readings(index, handle)
        except self._gpu_lost as exc:
            why = f"GPU {index} is lost ({type(exc).__name__}: {exc}): its readings are null"
            if index not in self._lost:
                self._lost.add(index)
                print(f"nvidia monitor: {why}", file=sys.stderr, flush=True)
            return {"index": index, **dict.fromkeys(DEVICE_FIELDS[1:]), "error": why}

    def _readings(self, index: int, handle: Any) -> dict[str, Any]:
        nv = self._nvml
        memory = self._field(lambda: nv.nvmlDeviceGetMemoryInfo(handle))
        milliwatts = self._field(lambda: nv.nvmlDeviceGetPowerUsage(handle))
        millijoules = self._field(lambda: nv.nvmlDeviceGetTotalEnergyConsumption(handle))  # since driver load
        return {
            "index": index,
            "util": self._field(lambda: nv.nvmlDeviceGetUtilizationRates(handle).gpu),
            "mem_used_bytes": int(memory.used) if memory is not None else None,
            "mem_total_bytes": int(memory.total) if memory is not None else None,
            "power_w": round(milliwatts / 1000.0, 3) if milliwatts is not None else None,
            "temp_c": self._field(lambda: nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU)),
            "energy_j": round(millijoules / 1000.0, 3) if millijoules is not None else None,
        }

    def sys_info(self) -> dict[str, Any]:
        nv = self._nvml
        return {
            "device": "cuda",
            "count": len(self._handles),
            "driver_version": _text(self._field(nv.nvmlSystemGetDriverVersion)),
            "nvml_version": _text(self._field(nv.nvmlSystemGetNVMLVersion)),
            "cuda_driver_version": self._field(nv.nvmlSystemGetCudaDriverVersion),
            "devices": [{"index": i, "name": self._device_name(h)} for i, h in enumerate(self._handles)],
        }

    def _device_name(self, handle: Any) -> str | None:
        try:
            return _text(self._field(lambda: self._nvml.nvmlDeviceGetName(handle)))
        except self._gpu_lost:
            return None

    def _field(self, read: Callable[[], T]) -> T | None:
        """One NVML reading; None where this GPU or driver cannot give it (NotSupported, NoPermission...). A lost
        GPU is raised: the whole device is lost, not a field."""
        try:
            return read()
        except self._gpu_lost:
            raise
        except (self._nvml.NVMLError, AttributeError):  # AttributeError: a binding too old for the call
            return None


def _text(value: Any) -> str | None:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


if __name__ == "__main__":
    from case_runners.monitors.cli import main

    raise SystemExit(main(["--name", "nvidia", *sys.argv[1:]]))
