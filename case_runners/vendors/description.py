"""Vendor descriptions: vendor/<vendor>/vendor.yaml, validated on load into a VendorDescription."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from case_runners.core.errors import ConfigError
from case_runners.core.paths import display_path, project_root
from case_runners.plan.config.benchmarks import (
    H2D,
    INTER,
    INTERCONNECT,
    INTRA,
    MEMORY_BANDWIDTH,
    MEMORY_BYTES,
    PRECISIONS_KEY,
)
from case_runners.plan.config.parallel import VENDOR_FSDP_KEY
from case_runners.plan.config.shared_params import AMP_DTYPES
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.vendors.container_options import check_container
from case_runners.vendors.layout import VENDOR_FILE
from case_runners.vendors.runtime import NAME, check_hook_source

DEFAULT_AMP_DTYPE = "fp16"
SCOPES = ("node", "rank")
PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")


@dataclasses.dataclass(frozen=True, kw_only=True)
class VendorDescription:
    """A vendor's vendor.yaml, checked (load_vendor): its keys, with their defaults where they may be absent."""

    name: str  # the vendor's folder, vendor/<name>
    dir: Path  # that folder
    description: str | None  # for people
    device: str  # torch's device type (cuda, cpu, or the vendor's once its runtime.py ran)
    dist_backend: str  # torch.distributed's backend (nccl, gloo, or the vendor's)
    amp_dtype: str  # what a config's amp: true autocasts to (AMP_DTYPES); DEFAULT_AMP_DTYPE when absent
    fsdp: bool  # whether dist_backend runs FSDP though it is not one of plan/config/parallel.py FSDP_BACKENDS
    visible_devices_env: str  # visible_devices.env, the device-visibility variable; "" when the vendor has none
    visible_devices_scope: str  # visible_devices.scope (SCOPES): one value per node, or per rank
    monitor: str | None  # the vendor's monitor file, in its folder
    default_hardware: str  # a key of hardware: the hardware of a selection that names none
    hardware: dict[str, dict[str, Any]]  # per hardware model: memory_bytes, peak_flops, precisions, bandwidths
    # build and run settings of the docker runtime (vendors/container_options.py); {} if absent
    container: dict[str, Any]

    @property
    def path(self) -> Path:
        """Its vendor.yaml."""
        return self.dir / VENDOR_FILE


def vendor_names(root: Path | None = None) -> list[str]:
    base = (root or project_root()) / "vendor"
    return sorted(p.parent.name for p in base.glob(f"*/{VENDOR_FILE}"))


def load_vendor(name: str, root: Path | None = None) -> VendorDescription:
    """Load and check vendor/<name>/vendor.yaml; raise ConfigError naming the key and file."""
    root = root or project_root()
    known = vendor_names(root)
    if name not in known:
        raise ConfigError(f"unknown vendor '{name}'", key="vendor", allowed=known)
    path = root / "vendor" / name / VENDOR_FILE
    data = load_mapping(path, root)
    shown = display_path(path, root)
    _check_vendor(data, shown)
    problems, _ = check_hook_source(name, root)
    if problems:
        raise ConfigError("; ".join(problems))
    visible = data["visible_devices"]
    return VendorDescription(
        name=name, dir=path.parent, description=data.get("description"), device=data["device"],
        dist_backend=data["dist_backend"], amp_dtype=data.get("amp_dtype", DEFAULT_AMP_DTYPE),
        fsdp=data.get(VENDOR_FSDP_KEY, False), visible_devices_env=visible.get("env") or "",
        visible_devices_scope=visible.get("scope", "node"), monitor=data.get("monitor"),
        default_hardware=data["default_hardware"], hardware=data["hardware"], container=data.get("container") or {})


def vendor_devices(root: Path | None = None) -> dict[str, str | None]:
    """Each vendor's device type (its vendor.yaml `device`), by vendor name; None where that file cannot be read
    or names no device (load_vendor says why)."""
    root = root or project_root()
    found: dict[str, str | None] = {}
    for name in vendor_names(root):
        try:
            device = load_mapping(root / "vendor" / name / VENDOR_FILE, root).get("device")
        except ConfigError:
            device = None
        found[name] = device if isinstance(device, str) else None
    return found


def vendor_for_device(device: str, vendor: str | None = None, root: Path | None = None,
                      option: str = "--device") -> str:
    """The vendor whose device type (vendor.yaml `device`) is `device`: `vendor` when given, if it agrees. A
    ConfigError naming `option` and listing the vendors and their devices for a device no vendor has, one several
    have (name the vendor then), or one the given vendor does not have."""
    devices = vendor_devices(root)
    listed = ", ".join(f"{name}: {dev or '(unreadable vendor.yaml)'}" for name, dev in devices.items())
    if vendor is not None:
        if vendor not in devices:
            raise ConfigError(f"unknown vendor '{vendor}'", key="vendor", allowed=devices)
        if devices[vendor] != device:
            raise ConfigError(f"{option} {device} does not agree with vendor '{vendor}', whose device is "
                              f"{devices[vendor]} (vendors and their devices: {listed})")
        return vendor
    matching = [name for name, dev in devices.items() if dev == device]
    if not matching:
        raise ConfigError(f"{option} {device}: no vendor has this device type (vendors and their devices: {listed})")
    if len(matching) > 1:
        raise ConfigError(f"{option} {device}: several vendors have this device type ({', '.join(matching)}); "
                          f"choose one with --vendor (vendors and their devices: {listed})")
    return matching[0]


def _require(data: dict, key: str, kind: type | tuple, file: str) -> Any:
    if key not in data:
        raise ConfigError("is required", key=key, file=file)
    if not isinstance(data[key], kind):
        raise ConfigError(f"has the wrong type ({type(data[key]).__name__})", key=key, file=file)
    return data[key]


def _check_vendor(data: dict, file: str) -> None:
    # Any device type and backend torch knows once the vendor's runtime.py ran: the host preflight checks that.
    for key, example in (("device", "cuda, musa, sdaa"), ("dist_backend", "nccl, gloo, hccl")):
        if not NAME.match(_require(data, key, str, file)):
            raise ConfigError(f"'{data[key]}' is not a torch name (lower case letters, digits, _; e.g. {example})",
                              key=key, file=file)
    if data.get("amp_dtype", DEFAULT_AMP_DTYPE) not in AMP_DTYPES:
        raise ConfigError(f"unknown AMP dtype '{data['amp_dtype']}'", key="amp_dtype", file=file, allowed=AMP_DTYPES)
    if not isinstance(data.get(VENDOR_FSDP_KEY, False), bool):
        raise ConfigError("must be true or false: whether dist_backend runs FSDP (all_gather_into_tensor and "
                          "reduce_scatter_tensor)", key=VENDOR_FSDP_KEY, file=file, allowed=("true", "false"))
    for key in ("description", "monitor"):
        if not isinstance(data.get(key), str | None):
            raise ConfigError(f"must be a string or null, not {data[key]!r}", key=key, file=file)
    visible = _require(data, "visible_devices", dict, file)
    if not isinstance(visible.get("env"), str | None):
        raise ConfigError(f"must be a variable's name or null, not {visible['env']!r}", key="visible_devices.env",
                          file=file)
    if visible.get("scope", "node") not in SCOPES:
        raise ConfigError("unknown scope", key="visible_devices.scope", file=file, allowed=SCOPES)
    _check_hardware(data, file)
    check_container(data.get("container"), file)


def _check_hardware(data: dict, file: str) -> None:
    """vendor.yaml's hardware models (each a mapping: its peak FLOP/s per precision, its other peaks) and the
    default one among them."""
    hardware = _require(data, "hardware", dict, file)
    if not hardware:
        raise ConfigError("must list at least one hardware model", key="hardware", file=file)
    for model, spec in hardware.items():
        if not isinstance(spec, dict):
            raise ConfigError("must be a mapping", key=f"hardware.{model}", file=file)
        for precision, flops in (spec.get("peak_flops") or {}).items():
            if precision not in PRECISIONS:
                raise ConfigError("unknown precision", key=f"hardware.{model}.peak_flops.{precision}",
                                  file=file, allowed=PRECISIONS)
            if flops is not None and not isinstance(flops, (int, float)):
                raise ConfigError("must be a number of FLOP/s", key=f"hardware.{model}.peak_flops.{precision}",
                                  file=file)
        _check_peaks(spec, f"hardware.{model}", file)
    default = _require(data, "default_hardware", str, file)
    if default not in hardware:
        raise ConfigError(f"'{default}' is not in hardware", key="default_hardware", file=file, allowed=hardware)


def _check_peaks(spec: dict[str, Any], where: str, file: str) -> None:
    """A hardware entry's memory, bandwidth peaks and precisions (the base benchmarks' peaks: null where unknown)."""
    def number(value: Any, key: str, unit: str) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise ConfigError(f"must be a positive number of {unit} or null, not {value!r}", key=key, file=file)

    number(spec.get(MEMORY_BYTES), f"{where}.{MEMORY_BYTES}", "bytes")
    for key in (MEMORY_BANDWIDTH, H2D):
        number(spec.get(key), f"{where}.{key}", "bytes/s")
    links = spec.get(INTERCONNECT)
    if links is not None:
        if not isinstance(links, dict):
            raise ConfigError(f"must be a mapping {{{INTRA}: bytes/s, {INTER}: bytes/s}}",
                              key=f"{where}.{INTERCONNECT}", file=file)
        for scope, value in links.items():
            if scope not in (INTRA, INTER):
                raise ConfigError("unknown interconnect", key=f"{where}.{INTERCONNECT}.{scope}", file=file,
                                  allowed=(INTRA, INTER))
            number(value, f"{where}.{INTERCONNECT}.{scope}", "bytes/s")
    precisions = spec.get(PRECISIONS_KEY)
    if precisions is not None:
        if not isinstance(precisions, list):
            raise ConfigError("must be a list of precisions", key=f"{where}.{PRECISIONS_KEY}", file=file,
                              allowed=PRECISIONS)
        for precision in precisions:
            if precision not in PRECISIONS:
                raise ConfigError(f"unknown precision {precision!r}", key=f"{where}.{PRECISIONS_KEY}", file=file,
                                  allowed=PRECISIONS)


def vendor_info(vendor: VendorDescription, hardware: str) -> dict[str, Any]:
    """The part of a vendor description that a run needs, as saved in the resolved config."""
    return {
        "device": vendor.device,
        "dist_backend": vendor.dist_backend,
        "amp_dtype": vendor.amp_dtype,
        "visible_devices_env": vendor.visible_devices_env,
        "visible_devices_scope": vendor.visible_devices_scope,
        "monitor": vendor.monitor,
        "hardware": vendor.hardware[hardware],
    }
