"""An inference selection resolved into the run's resolved config, the same outer shape as a training case's,
so the plan, the launch, the record and the summary handle both (task: inference tells them apart)."""

from __future__ import annotations

from pathlib import Path

from case_runners.core.errors import RUN_VARS_FILE, ConfigError
from case_runners.plan.config.resolved import DEFAULT_CASE_TIMEOUT_S, INFERENCE
from case_runners.plan.config.selection import Selection
from case_runners.plan.config.standard import read_standard
from case_runners.plan.inference_config import inference_cases, resolve_inference
from case_runners.plan.layering import choose_hardware
from case_runners.records.resolved import ResolvedConfig, VendorInfo
from case_runners.records.schema import ABSENT
from case_runners.vendors.description import VendorDescription, vendor_info

FLOPS_CONVENTION = ("1 multiply-add = 2 FLOPs; inference FLOPs per item = one forward pass "
                    "(flops in configurations.yaml)")


def resolve_inference_selection(sel: Selection, vendor: VendorDescription, root: Path,
                                default_timeout_s: int | None = None) -> tuple[ResolvedConfig | None,
                                                                                 list[ConfigError]]:
    """(config, errors) for a selection with task: inference."""
    cases = inference_cases(root)
    if sel.case not in cases:
        return None, [ConfigError(f"unknown inference case '{sel.case}'", key=f"{sel.source}.case", file=RUN_VARS_FILE,
                                  allowed=cases)]
    hardware_error = choose_hardware(sel, vendor, root)
    errors = [hardware_error] if hardware_error else []
    for key in ("nnodes", "nproc"):
        if getattr(sel, key) != 1:
            errors.append(ConfigError(f"an inference case runs one process on one device; got "
                                      f"{getattr(sel, key)}", key=f"{sel.source}.{key}", file=RUN_VARS_FILE,
                                      allowed=[1]))
    if sel.framework != "pytorch":
        errors.append(ConfigError(f"unknown framework '{sel.framework_key}': inference case '{sel.case}' is written "
                                  f"for pytorch", key=f"{sel.source}.framework", file=RUN_VARS_FILE,
                                  allowed=["pytorch", "pytorch_<version>"]))
    try:
        resolved, notes = resolve_inference(sel.case, vendor.name, root, sel.overrides,
                                            f"run overrides ({sel.source}.overrides)", sel.functional)
    except ConfigError as exc:
        errors.append(exc)
    if errors:
        return None, errors
    hardware = str(sel.hardware)  # the vendor's default when the selection named none (choose_hardware)
    return ResolvedConfig(
        task=INFERENCE, case=sel.case, package=resolved.package, case_id=sel.case_id, framework=sel.framework,
        framework_version=sel.framework_version or ABSENT, vendor=vendor.name, hardware=hardware, nnodes=1,
        nproc=1, repeat=sel.repeat, data_dir=sel.data_dir,
        timeout_s=sel.timeout_s or default_timeout_s or DEFAULT_CASE_TIMEOUT_S, sources=resolved.sources,
        provenance=resolved.provenance, **read_standard(resolved.to_json()), notes=notes, inference=resolved,
        params=resolved.settings(), target=None, flops_per_sample=resolved.flops,
        flops_convention=FLOPS_CONVENTION, flops_note=None,
        vendor_info=VendorInfo(**vendor_info(vendor, hardware))), []
