"""A base selection resolved into the run's resolved config (the same outer shape as a training case's): benchmark
config < the vendor's base.yaml < run overrides, checked against the device before any host is touched.

- case_runners/tasks/base/benchmarks/<benchmark>/config.yaml: `params` with their ranges
  (plan/config/constraints.py), and `timeout_s`;
- vendor/<vendor>/base.yaml (optional): `suite`, what `perfplay_task: base` runs when the run names no case (the
  forms perfplay_cases takes; without the file, every benchmark that takes one rank), and `params.<benchmark>`, the
  vendor's values over the benchmark's defaults;
- the selection's overrides, last.

Every benchmark has the param `mode` (plan/config/benchmarks.py MODES): torch, the vendor's toolkit
(vendor/<vendor>/base/toolkits/<benchmark>/, vendors/toolkits.py) or both.

Refused here: an unknown benchmark or param, a mode that runs a toolkit the vendor lacks or whose toolkit.yaml is
wrong, a precision the hardware does not compute (vendor.yaml hardware.<HW>.precisions, else its peak_flops keys), a
collective on one rank (p2p: other than two), and sizes that do not fit in the device's memory
(hardware.<HW>.memory_bytes, where the vendor gives it).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from case_runners.core.errors import RUN_VARS_FILE, ConfigError
from case_runners.core.paths import display_path
from case_runners.plan.config.benchmarks import (
    BENCHMARKS,
    COLLECTIVE,
    FLOP_CONVENTION,
    MEMORY_BYTES,
    MODE,
    MODE_PARAM,
    ONE,
    PAIR,
    runs_toolkit,
    supported_precisions,
)
from case_runners.plan.config.resolved import BASE
from case_runners.plan.config.selection import Selection
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.plan.flat import flat_config, flat_params, selection_problems
from case_runners.plan.layering import choose_hardware
from case_runners.records.resolved import ResolvedConfig
from case_runners.vendors.description import VendorDescription
from case_runners.vendors.layout import BASE_FILE, vendor_dir
from case_runners.vendors.toolkits import NODE, load_toolkit

BENCHMARKS_DIR = ("case_runners", "tasks", "base", "benchmarks")
# A benchmark's package, torch-free: footprint(params, world_size) -> [(what, bytes)], the device memory its params
# need at once; and, optional, plan_problems(params, hardware, hardware_name, world_size) -> [(param, message)].
BENCHMARK_MODULE = "case_runners.tasks.base.benchmarks.{name}"
PRECISIONS_PARAM = "precisions"  # a benchmark's param checked against the precisions the hardware computes


def benchmark_config_path(root: Path, name: str) -> Path:
    return root.joinpath(*BENCHMARKS_DIR, name, "config.yaml")


def vendor_base(root: Path, vendor: str) -> tuple[dict[str, Any], str]:
    """The vendor's base.yaml ({} when it has none) and its path as messages show it; ConfigError for keys other
    than suite and params, or params of an unknown benchmark."""
    path = vendor_dir(root, vendor) / BASE_FILE
    shown = display_path(path, root)
    if not path.is_file():
        return {}, shown
    data = load_mapping(path, root)
    for key in data:
        if key not in ("suite", "params"):
            raise ConfigError("unknown key", key=key, file=shown, allowed=["suite", "params"])
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise ConfigError("must map benchmark names to their params", key="params", file=shown)
    for name, values in params.items():
        if name not in BENCHMARKS:
            raise ConfigError(f"unknown benchmark '{name}'", key=f"params.{name}", file=shown, allowed=BENCHMARKS)
        if not isinstance(values, dict):
            raise ConfigError("must map param names to values", key=f"params.{name}", file=shown)
    return data, shown


def base_suite(root: Path, vendor: str) -> Any:
    """What `perfplay_task: base` runs when the run names no case: the vendor's base.yaml suite, else every benchmark
    that takes one rank (a collective needs a scale: the vendor's suite, or a selection, gives it)."""
    data, _ = vendor_base(root, vendor)
    if "suite" in data:
        return data["suite"]
    return [name for name, spec in BENCHMARKS.items() if spec.ranks == ONE]


def resolve_base_selection(sel: Selection, vendor: VendorDescription, root: Path,
                           default_timeout_s: int | None = None) -> tuple[ResolvedConfig | None, list[ConfigError]]:
    """(config, errors) for a selection with task: base."""
    if sel.case not in BENCHMARKS:
        return None, [ConfigError(f"unknown base benchmark '{sel.case}'", key=f"{sel.source}.case",
                                  file=RUN_VARS_FILE, allowed=BENCHMARKS)]
    spec = BENCHMARKS[sel.case]
    errors = [e for e in [choose_hardware(sel, vendor, root)] if e]
    errors += selection_problems(sel, "the base benchmarks are", sel.case if spec.ranks == ONE else None)
    world = sel.nnodes * sel.nproc
    if spec.ranks == COLLECTIVE and world < 2:
        errors.append(ConfigError(f"{sel.case} is a collective: it needs at least 2 ranks (nnodes x nproc), got "
                                  f"{world}", key=f"{sel.source}.nproc", file=RUN_VARS_FILE))
    if spec.ranks == PAIR and world != 2:
        errors.append(ConfigError(f"{sel.case} runs between two ranks (nnodes x nproc = 2: 1x2 within a node, 2x1 "
                                  f"across nodes), got {world}", key=f"{sel.source}.nproc", file=RUN_VARS_FILE))

    def vendor_layer() -> tuple[dict[str, Any], str, str]:
        data, shown = vendor_base(root, vendor.name)
        return (data.get("params") or {}).get(sel.case) or {}, f"{shown} (params.{sel.case})", shown

    flat = flat_params(sel, benchmark_config_path(root, sel.case), root, default_timeout_s, vendor_layer, errors,
                       MODE_PARAM)
    if flat is None:
        return None, errors
    hardware = str(sel.hardware)
    vendor_file = display_path(vendor.path, root)
    if not errors and runs_toolkit(flat.params):
        errors += _toolkit_errors(sel, root, vendor.name, f"{flat.params[MODE]}, set in {flat.provenance[MODE]}")
    if not errors:
        errors += _device_errors(sel, flat.params, flat.provenance, vendor.hardware[hardware], hardware,
                                 vendor_file, world)
    if errors:
        return None, errors
    return flat_config(sel, vendor, BASE, flat, FLOP_CONVENTION,
                       "a base benchmark: each measurement has its own figure and fraction of peak"), []


def _toolkit_errors(sel: Selection, root: Path, vendor: str, mode: str) -> list[ConfigError]:
    """The vendor's toolkit for the benchmark: its folder and toolkit.yaml (vendors/toolkits.py), and a toolkit that
    runs once per node on one node only."""
    try:
        toolkit = load_toolkit(root, vendor, sel.case)
    except ConfigError as exc:
        return [ConfigError(f"{exc.message} ({MODE} {mode})", key=exc.key, file=exc.file,
                            allowed=exc.allowed)]
    if toolkit.runs_on == NODE and sel.nnodes != 1:
        return [ConfigError(f"{toolkit.shown} runs once per node for the node's devices (runs_on: {NODE}): run it on "
                            f"one node, got nnodes {sel.nnodes}", key=f"{sel.source}.nnodes", file=RUN_VARS_FILE,
                            allowed=[1])]
    return []


def _device_errors(sel: Selection, params: dict[str, Any], provenance: dict[str, str], hardware: dict[str, Any],
                   hardware_name: str, vendor_file: str, world: int) -> list[ConfigError]:
    """Precisions the hardware does not compute (a null list becomes the hardware's), the benchmark's own
    plan_problems, and sizes beyond the device's memory."""
    errors = []
    if PRECISIONS_PARAM in params:
        supported = supported_precisions(hardware)
        if params[PRECISIONS_PARAM] is None:
            params[PRECISIONS_PARAM] = supported
            provenance[PRECISIONS_PARAM] = f"{vendor_file} (hardware.{hardware_name})"
            if not supported:
                errors.append(ConfigError(f"{hardware_name} lists no precision: set hardware.{hardware_name}."
                                          "precisions (or its peak_flops) in the vendor file, or name the precisions",
                                          key=f"{sel.source}.overrides.{PRECISIONS_PARAM}", file=vendor_file))
        for precision in params[PRECISIONS_PARAM]:
            if precision not in supported:
                errors.append(ConfigError(f"{hardware_name} does not compute '{precision}' (vendor.yaml hardware."
                                          f"{hardware_name}.precisions, else its peak_flops)",
                                          key=PRECISIONS_PARAM, file=provenance[PRECISIONS_PARAM],
                                          allowed=supported))
    if errors:
        return errors
    module = importlib.import_module(BENCHMARK_MODULE.format(name=sel.case))
    if hasattr(module, "plan_problems"):  # what else its params and the hardware must agree on
        errors += [ConfigError(message, key=param, file=provenance.get(param, vendor_file))
                   for param, message in module.plan_problems(params, hardware, hardware_name, world)]
    memory = hardware.get(MEMORY_BYTES)
    if errors or not isinstance(memory, int) or isinstance(memory, bool) or memory <= 0:
        return errors
    for what, needed in module.footprint(params, world):
        if needed > memory:
            errors.append(ConfigError(f"{what} needs {needed} bytes of device memory, more than the {memory} of "
                                      f"{hardware_name} (vendor.yaml hardware.{hardware_name}.memory_bytes)",
                                      key=f"{sel.source}.case", file=RUN_VARS_FILE))
    return errors
