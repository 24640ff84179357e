"""The test chip's runtime hook (contract: case_runners/vendors/runtime.py): the host's CPU under another name, with
a collective backend, a device probe and an operator library (testlib.py) of its own."""

from __future__ import annotations

import importlib.util
import resource
from pathlib import Path

BACKEND = "testccl"
ENVIRONMENT = {"TESTCHIP_SDK_HOME": "/opt/testchip"}  # what a vendor SDK reads at import time
OPLIBS = ["testlib"]


def setup() -> None:
    """Register the chip's collective library as torch.distributed backend 'testccl' (gloo underneath)."""
    import torch.distributed as dist

    if dist.is_backend_available(BACKEND):  # registered already (a name torch merely lists is not available)
        return
    dist.Backend.register_backend(BACKEND, _gloo_group, devices=["cpu"])


def _gloo_group(store, rank, size, timeout):
    from torch.distributed import ProcessGroupGloo

    return ProcessGroupGloo(store, rank, size, timeout)


def device_count() -> int:
    """The board carries two devices, whatever the host's core count."""
    return 2


def pick_device(index):
    import torch

    return torch.device("cpu")


def peak_memory_bytes(device) -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def versions() -> dict:
    return {"testchip_sdk": "1.0.0", "testccl": "1.0.0"}


def enable_oplib(name: str) -> None:
    """testlib: the chip's own kernels of relu, add and silu over aten's (testlib.py, beside this file)."""
    spec = importlib.util.spec_from_file_location("testchip_testlib", Path(__file__).with_name("testlib.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.enable()
