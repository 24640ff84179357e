"""The rank's process group: joined from the launcher's environment (env:// on MASTER_ADDR/MASTER_PORT) before the
task's work, left after it whatever happened."""

from __future__ import annotations

import gc
import os
from collections.abc import Mapping
from datetime import timedelta

import torch
import torch.distributed as dist

from case_runners.rank.env import DistEnv

DIST_TIMEOUT_S = 300.0  # how long a collective of the process group waits for the other ranks


def dist_timeout_s(environ: Mapping[str, str] = os.environ) -> float:
    return float(environ.get("PERFPLAY_DIST_TIMEOUT_S") or DIST_TIMEOUT_S)


def init_distributed(env: DistEnv, backend: str, device: torch.device) -> bool:
    """Join the process group (env:// rendezvous on MASTER_ADDR/MASTER_PORT); False for one rank."""
    if env.world_size <= 1:
        return False
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        if not os.environ.get(name):
            raise RuntimeError(f"{name} must be set for a run with WORLD_SIZE={env.world_size}")
    dist.init_process_group(backend=backend, init_method="env://", rank=env.rank,
                            world_size=env.world_size, timeout=timedelta(seconds=dist_timeout_s()),
                            device_id=device if device.type != "cpu" else None)
    return True


def shutdown_distributed() -> None:
    """Leave the process group. DDP holds the group through reference cycles, so collect them
    first: a group destroyed at interpreter exit instead aborts the process."""
    if dist.is_available() and dist.is_initialized():
        gc.collect()
        dist.destroy_process_group()
