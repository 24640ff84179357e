"""A rank's start, the same for every task: the vendor's runtime prepared, the rank's device picked, a CPU's
cores shared among the node's ranks. torch is imported inside, after the vendor's runtime had its say."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from case_runners.rank.env import DEVICE_INDEX_ENV, THREADS_ENV, DistEnv, omp_num_threads
from case_runners.records.resolved import ResolvedConfig

if TYPE_CHECKING:  # imported when a rank starts
    import torch

    from case_runners.vendors.runtime import VendorRuntime


def start_rank(config: ResolvedConfig, env: DistEnv) -> tuple[VendorRuntime, torch.device]:
    """The vendor's runtime prepared (environment, imports, setup(), before torch touches its device) and this rank's
    device: the launcher's choice (DEVICE_INDEX_ENV) or else the local rank; a CPU's cores shared among the node's
    ranks. (runtime, device)"""
    from case_runners.vendors.runtime import VendorRuntime

    runtime = VendorRuntime(config.vendor, config.vendor_info.device, config.vendor_info.dist_backend)
    runtime.prepare()
    device = runtime.pick_device(int(os.environ.get(DEVICE_INDEX_ENV) or env.local_rank))
    threads = omp_num_threads(os.environ, env.local_world_size, config.vendor_info.device, device.type)
    if threads is not None:  # CPU-backed by torch's device alone, or a rank started without the launcher
        set_cpu_threads(threads)
    return runtime, device


def set_cpu_threads(threads: str) -> None:
    """OMP_NUM_THREADS and torch's intra-op pool set to `threads` (omp_num_threads' share of the cores), so that
    torch, the rank's children and its record (thread_settings) agree."""
    import torch

    os.environ[THREADS_ENV] = threads
    torch.set_num_threads(int(threads))


def thread_settings() -> dict[str, Any]:
    """The rank's thread settings as it ran (records/environment.py Threads): torch's intra-op thread count (null
    before torch was imported) and OMP_NUM_THREADS (null when unset)."""
    torch = sys.modules.get("torch")
    return {"intra_op": torch.get_num_threads() if torch is not None else None,
            "omp_num_threads": os.environ.get(THREADS_ENV)}
