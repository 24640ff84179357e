"""The cpu vendor's runtime hook (contract: case_runners/vendors/runtime.py): the host's cores as the device."""

from __future__ import annotations

import os
import resource
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when a rank picks its device, after the vendor's environment
    import torch


def device_count() -> int:
    """Logical CPUs: a round of nproc ranks shares them."""
    return os.cpu_count() or 1


def pick_device(index: int) -> torch.device:
    import torch

    return torch.device("cpu")  # one device, whatever the rank's index


def peak_memory_bytes(device: torch.device) -> int:
    """The process's peak resident set size (Linux reports KiB)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def reset_peak_memory(device: torch.device) -> None:
    """A process's peak RSS cannot be reset; it counts from the rank's start."""

