"""The resolution a task shares whose params are all settable (base benchmarks, generate): a config.yaml with
`params` (each with its range) and `timeout_s` < the vendor's values < the run's overrides; the checks both make of
the selection; and the resolved config both write. Nothing here is standard or non-standard: every param may be set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from case_runners.core.errors import RUN_VARS_FILE, ConfigError
from case_runners.core.paths import display_path
from case_runners.plan.config.constraints import declare_params
from case_runners.plan.config.resolved import DEFAULT_CASE_TIMEOUT_S
from case_runners.plan.config.selection import BOUNDS, Selection
from case_runners.plan.config.standard import standard_fields
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.plan.layering import apply_layer
from case_runners.records.resolved import ResolvedConfig, VendorInfo
from case_runners.records.schema import ABSENT
from case_runners.vendors.description import VendorDescription, vendor_info

# The vendor's layer: (its params, the file provenance names for them, the file the config's sources list).
VendorLayer = Callable[[], tuple[dict[str, Any], str, str]]


def selection_problems(sel: Selection, written: str, one_node: str | None) -> list[ConfigError]:
    """A framework other than pytorch (`written`: what "is written for pytorch", e.g. "the generate task is"); with
    one_node (what measures each device on its own), a selection over several nodes."""
    errors = []
    if sel.framework != "pytorch":
        errors.append(ConfigError(f"unknown framework '{sel.framework_key}': {written} written for pytorch",
                                  key=f"{sel.source}.framework", file=RUN_VARS_FILE,
                                  allowed=["pytorch", "pytorch_<version>"]))
    if one_node is not None and sel.nnodes != 1:
        errors.append(ConfigError(f"{one_node} measures each device on its own: run it on one node (nproc: the "
                                  f"devices to measure at once), got nnodes {sel.nnodes}", key=f"{sel.source}.nnodes",
                                  file=RUN_VARS_FILE, allowed=[1]))
    return errors


@dataclass
class FlatParams:
    params: dict[str, Any]
    provenance: dict[str, str]  # per param, the layer its value came from
    timeout_s: int
    sources: list[str]  # the layers' files that gave something, in order


def flat_params(sel: Selection, config_path: Path, root: Path, default_timeout_s: int | None,
                vendor_layer: VendorLayer, errors: list[ConfigError],
                task_params: Mapping[str, Any] | None = None) -> FlatParams | None:
    """The params of config_path (after `task_params`, those every config of the task has, declared by the task)
    < the vendor's < the selection's overrides; None with `errors` extended (the earlier `errors` of the selection
    stop it too, once the files are read)."""
    base_file = display_path(config_path, root)
    try:
        base = load_mapping(config_path, root)
        defaults, constraints = declare_params({**(task_params or {}), **(base.get("params") or {})}, file=base_file,
                                               prefix="params.")
        timeout = sel.timeout_s or default_timeout_s or BOUNDS["timeout_s"].check(
            base.get("timeout_s", DEFAULT_CASE_TIMEOUT_S), key="timeout_s", file=base_file)
        vendor_params, vendor_file, vendor_source = vendor_layer()
    except ConfigError as exc:
        errors.append(exc)
        return None
    if errors:
        return None
    params, provenance = dict(defaults), {key: base_file for key in defaults}
    names = list(params)
    apply_layer(params, provenance, vendor_params, constraints=constraints, allowed=names, run_only=[],
                file=vendor_file, errors=errors)
    overrides_file = f"run overrides ({sel.source}.overrides)"
    apply_layer(params, provenance, sel.overrides, constraints=constraints, allowed=names, run_only=[],
                file=overrides_file, errors=errors)
    sources = [base_file, *([vendor_source] if vendor_params else []), *([overrides_file] if sel.overrides else [])]
    return FlatParams(params, provenance, timeout, sources)


def flat_config(sel: Selection, vendor: VendorDescription, task: str, flat: FlatParams, flops_convention: str,
                flops_note: str) -> ResolvedConfig:
    """The resolved config of a flat selection: no target, no FLOPs per sample (each figure is its own)."""
    hardware = str(sel.hardware)
    return ResolvedConfig(
        task=task, case=sel.case, case_id=sel.case_id, framework=sel.framework,
        framework_version=sel.framework_version or ABSENT, vendor=vendor.name, hardware=hardware,
        nnodes=sel.nnodes, nproc=sel.nproc, repeat=sel.repeat, data_dir=sel.data_dir, timeout_s=flat.timeout_s,
        sources=flat.sources, provenance=flat.provenance, **standard_fields([]), params=flat.params, target=None,
        flops_per_sample=None, flops_convention=flops_convention, flops_note=flops_note,
        vendor_info=VendorInfo(**vendor_info(vendor, hardware)))
