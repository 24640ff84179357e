"""Data parallelism across ranks: DDP, or FSDP2 (torch.distributed.fsdp.fully_shard), and which dist backends can
run FSDP. Checked by the plan, before any host is touched."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from case_runners.core.errors import ConfigError
from case_runners.core.paths import display_path
from case_runners.plan.config.shared_params import FSDP

# FSDP needs all_gather_into_tensor and reduce_scatter_tensor; these backends have them. A vendor whose own backend
# has them too says so in its vendor.yaml with `fsdp: true` (VENDOR_FSDP_KEY).
FSDP_BACKENDS = ("nccl", "gloo")
VENDOR_FSDP_KEY = "fsdp"


class FsdpVendor(Protocol):
    """What FSDP's check needs of a vendor description (vendors.py VendorDescription)."""
    @property
    def name(self) -> str: ...
    @property
    def path(self) -> Path: ...
    @property
    def dist_backend(self) -> str: ...
    @property
    def fsdp(self) -> bool: ...


def fsdp_backend_ok(vendor: FsdpVendor) -> bool:
    """Whether the vendor's dist_backend runs FSDP: a known backend, or vendor.yaml `fsdp: true`."""
    return vendor.dist_backend in FSDP_BACKENDS or vendor.fsdp


def data_parallel_problems(params: dict[str, Any], provenance: dict[str, str], world_size: int,
                           vendor: FsdpVendor, root: Path) -> list[ConfigError]:
    """FSDP over more than one rank on a backend that cannot run it: the error naming key data_parallel, the file
    that set it, the vendor and its backend, and the backends that can. One rank wraps nothing: always fine."""
    if params.get("data_parallel") != FSDP or world_size <= 1 or fsdp_backend_ok(vendor):
        return []
    vendor_file = display_path(vendor.path, root)
    return [ConfigError(
        f"fsdp needs a dist backend with all_gather_into_tensor and reduce_scatter_tensor; vendor "
        f"'{vendor.name}' uses '{vendor.dist_backend}' ({vendor_file}), which is not known to have them. Use "
        f"ddp, or, if the vendor's backend runs FSDP, set `{VENDOR_FSDP_KEY}: true` in {vendor_file}",
        key="data_parallel", file=provenance.get("data_parallel"), allowed=FSDP_BACKENDS)]
