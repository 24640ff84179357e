"""What the launcher and a rank agree on: the rank's place in the run as the launcher's environment describes it
(RANK, WORLD_SIZE, ..., the device index) and where the rank leaves its result.

Standard library only: the launcher imports it, and the worker reads it before importing torch, to know its result
file from the start.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from case_runners.records.rank import result_name

DEVICE_INDEX_ENV = "PERFPLAY_DEVICE_INDEX"  # the rank's device among those it sees, set by the launcher
THREADS_ENV = "OMP_NUM_THREADS"  # OpenMP's thread count, which torch's intra-op pool starts with
HOST_DEVICE = "cpu"  # torch's device type of the host's own cores


def cpu_backed(device_type: str) -> bool:
    """Whether a vendor's device type (vendor.yaml `device`) computes on the host's cores: the cpu vendor, and any
    chip that runs its work as torch's CPU device (the test chip). Its ranks share the cores (cpu_threads)."""
    return device_type == HOST_DEVICE


def cpu_threads(local_world_size: int) -> int:
    """A CPU-backed rank's share of the host's cores, between the node's ranks instead of oversubscribing them."""
    return max(1, (os.cpu_count() or 1) // max(1, local_world_size))


def omp_num_threads(environ: Mapping[str, str], local_world_size: int, *device_types: str) -> str | None:
    """The OMP_NUM_THREADS of a rank, one rule for the launcher (which sets it in the rank's environment, knowing
    vendor.yaml's `device`) and the rank (which sets it at its start, knowing torch's device too): its share of the
    cores (cpu_threads) where one of `device_types` is CPU-backed and `environ` leaves it unset or empty; else None
    (torch's default, or the host's or user's value, stands)."""
    if environ.get(THREADS_ENV) or not any(map(cpu_backed, device_types)):
        return None
    return str(cpu_threads(local_world_size))


def result_path(log_dir: Path, rank: int) -> Path:
    return Path(log_dir) / result_name(rank)


@dataclass(frozen=True)
class DistEnv:
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    local_world_size: int = 1
    node_rank: int = 0

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> DistEnv:
        """Read RANK, LOCAL_RANK, WORLD_SIZE, ... as set by the launcher (single rank when unset)."""
        def get(name: str, default: int) -> int:
            raw = environ.get(name, "")
            try:
                return int(raw) if raw != "" else default
            except ValueError:
                raise ValueError(f"environment variable {name}={raw!r} is not an integer") from None

        world = get("WORLD_SIZE", 1)
        rank = get("RANK", 0)
        if not 0 <= rank < world:
            raise ValueError(f"RANK={rank} is outside 0..WORLD_SIZE-1 (WORLD_SIZE={world})")
        return cls(rank=rank, local_rank=get("LOCAL_RANK", 0), world_size=world,
                   local_world_size=get("LOCAL_WORLD_SIZE", world), node_rank=get("NODE_RANK", 0))
