"""Data parallelism across ranks: DDP, or FSDP2 (torch.distributed.fsdp.fully_shard), and which dist backends can
run FSDP. Checked by the plan, before any host is touched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from case_runners.config.shared_params import FSDP
from case_runners.errors import ConfigError
from case_runners.paths import display_path

# FSDP needs all_gather_into_tensor and reduce_scatter_tensor; these backends have them. A vendor whose own backend
# has them too says so in its vendor.yaml with `fsdp: true` (VENDOR_FSDP_KEY).
FSDP_BACKENDS = ("nccl", "gloo")
VENDOR_FSDP_KEY = "fsdp"


def fsdp_backend_ok(vendor: dict[str, Any]) -> bool:
    """Whether the vendor's dist_backend runs FSDP: a known backend, or vendor.yaml `fsdp: true`."""
    return vendor["dist_backend"] in FSDP_BACKENDS or bool(vendor.get(VENDOR_FSDP_KEY))


def data_parallel_problems(params: dict[str, Any], provenance: dict[str, str], world_size: int,
                           vendor: dict[str, Any], root: Path) -> list[ConfigError]:
    """FSDP over more than one rank on a backend that cannot run it: the error naming key data_parallel, the file
    that set it, the vendor and its backend, and the backends that can. One rank wraps nothing: always fine."""
    if params.get("data_parallel") != FSDP or world_size <= 1 or fsdp_backend_ok(vendor):
        return []
    vendor_file = display_path(Path(vendor["dir"]) / "vendor.yaml", root)
    return [ConfigError(
        f"fsdp needs a dist backend with all_gather_into_tensor and reduce_scatter_tensor; vendor "
        f"'{vendor['name']}' uses '{vendor['dist_backend']}' ({vendor_file}), which is not known to have them. Use "
        f"ddp, or, if the vendor's backend runs FSDP, set `{VENDOR_FSDP_KEY}: true` in {vendor_file}",
        key="data_parallel", file=provenance.get("data_parallel"), allowed=FSDP_BACKENDS)]
