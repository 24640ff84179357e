"""The NVML plugin against a fake pynvml module shaped like nvidia-ml-py."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import pytest

from case_runners.monitors.base import DEVICE_FIELDS
from case_runners.monitors.loader import load_monitor


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):  # noqa: N801 - pynvml's own name
    pass


class NVMLError_NoPermission(NVMLError):  # noqa: N801
    pass


class NVMLError_GpuIsLost(NVMLError):  # noqa: N801
    pass


def fake_pynvml(devices: list[dict[str, Any]]) -> types.ModuleType:
    """A pynvml with len(devices) GPUs; a device value that is an exception class is raised."""
    calls: list[str] = []
    module = types.ModuleType("pynvml")

    def reading(key: str, wrap: Callable[[Any], Any] = lambda v: v) -> Callable[..., Any]:
        def read(handle: int, *args: Any) -> Any:
            value = devices[handle][key]
            if isinstance(value, type) and issubclass(value, Exception):
                raise value()
            return wrap(value)
        return read

    def record(name: str, result: Any = None) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            calls.append(name)
            return result
        return call

    module.__dict__.update(
        calls=calls, NVMLError=NVMLError, NVMLError_NotSupported=NVMLError_NotSupported,
        NVMLError_GpuIsLost=NVMLError_GpuIsLost, NVML_TEMPERATURE_GPU=0,
        nvmlInit=record("init"), nvmlShutdown=record("shutdown"),
        nvmlDeviceGetCount=lambda: len(devices), nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetUtilizationRates=reading("util", lambda v: types.SimpleNamespace(gpu=v, memory=0)),
        nvmlDeviceGetMemoryInfo=reading("mem", lambda v: types.SimpleNamespace(used=v[0], total=v[1], free=0)),
        nvmlDeviceGetPowerUsage=reading("mw"), nvmlDeviceGetTemperature=reading("temp"),
        nvmlDeviceGetTotalEnergyConsumption=reading("mj"), nvmlDeviceGetName=reading("name"),
        nvmlSystemGetDriverVersion=lambda: b"550.54.15", nvmlSystemGetNVMLVersion=lambda: "12.550.54.15",
        nvmlSystemGetCudaDriverVersion=lambda: 12040,
    )
    return module


GPUS = [
    {"util": 87, "mem": (30 * 2**30, 80 * 2**30), "mw": 312_456, "temp": 61, "mj": 123_456_789,
     "name": "NVIDIA H100 80GB HBM3"},
    {"util": 0, "mem": NVMLError_NoPermission, "mw": NVMLError_NotSupported, "temp": 35,
     "mj": NVMLError_NotSupported, "name": b"NVIDIA H100 80GB HBM3"},
]


@pytest.fixture
def nvml(monkeypatch) -> types.ModuleType:
    module = fake_pynvml(GPUS)
    monkeypatch.setitem(__import__("sys").modules, "pynvml", module)
    return module


def test_samples_every_gpu_in_si_units(nvml) -> None:
    monitor = load_monitor("nvidia")
    monitor.open()
    first, second = monitor.record()["devices"]
    assert tuple(first) == DEVICE_FIELDS
    assert first == {"index": 0, "util": 87, "mem_used_bytes": 30 * 2**30, "mem_total_bytes": 80 * 2**30,
                     "power_w": 312.456, "temp_c": 61, "energy_j": 123456.789}
    # unsupported or forbidden fields are null; the rest of the device is still reported
    assert second == {"index": 1, "util": 0, "mem_used_bytes": None, "mem_total_bytes": None,
                      "power_w": None, "temp_c": 35, "energy_j": None}
    monitor.close()
    assert nvml.calls == ["init", "shutdown"]


def test_a_lost_gpu_is_said_once_and_recorded_in_each_sample(nvml, capsys) -> None:
    """The GPU falls off the bus after the first sample: its fields are null with an error naming the loss (not
    mistaken for fields the GPU does not support), the daemon's log says it once, and the other GPU is still read."""
    monitor = load_monitor("nvidia")
    monitor.open()
    assert "error" not in monitor.record()["devices"][0]

    def utilisation(handle: int) -> types.SimpleNamespace:
        if handle == 0:
            raise NVMLError_GpuIsLost("GPU is lost")
        return types.SimpleNamespace(gpu=5, memory=0)

    nvml.nvmlDeviceGetUtilizationRates = utilisation
    samples = [monitor.record()["devices"] for _ in range(2)]
    for lost, other in samples:
        assert lost == {"index": 0, **dict.fromkeys(DEVICE_FIELDS[1:]),
                        "error": "GPU 0 is lost (NVMLError_GpuIsLost: GPU is lost): its readings are null"}
        assert other["util"] == 5 and other["temp_c"] == 35 and "error" not in other
    assert capsys.readouterr().err.splitlines() == [
        "nvidia monitor: GPU 0 is lost (NVMLError_GpuIsLost: GPU is lost): its readings are null"]
    monitor.close()


def test_sys_info_names_driver_and_devices(nvml) -> None:
    monitor = load_monitor("nvidia")
    monitor.open()
    info = monitor.sys_info()
    monitor.close()
    assert info["driver_version"] == "550.54.15" and info["count"] == 2
    assert [d["name"] for d in info["devices"]] == ["NVIDIA H100 80GB HBM3"] * 2  # bytes decoded


def test_a_non_nvml_failure_fails_the_whole_sample(nvml, monkeypatch) -> None:
    monitor = load_monitor("nvidia")
    monitor.open()
    monkeypatch.setattr(nvml, "nvmlDeviceGetTemperature", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):  # the daemon writes it as an error line
        monitor.record()


def test_open_fails_without_nvml(monkeypatch) -> None:
    module = fake_pynvml([])

    def no_library() -> None:
        raise NVMLError("NVML Shared Library Not Found")

    module.nvmlInit = no_library
    monkeypatch.setitem(__import__("sys").modules, "pynvml", module)
    with pytest.raises(NVMLError):
        load_monitor("nvidia").open()
