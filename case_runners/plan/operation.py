"""An operation selection resolved into the run's resolved config: the standard operator table
(case_runners/tasks/operation/operators.yaml) < vendor/<vendor>/operation.yaml < the selection's overrides.

vendor/<vendor>/operation.yaml (optional), every key optional:
    suite: [abs, add, ...]        the operators to run (default: all of the table)
    oplibs: [native, flag_gems]   the sides: native (plain PyTorch) and at most one library of the hook's OPLIBS
    dtypes: [FP32, BF16]          a subset of the dtypes; an operator keeps those of its own it lists (the integer
                                  operators keep theirs when it lists none of them)
    params: {<HW>: {<op>: {<param>: value}}}   per chip (a vendor.yaml hardware name), the shape over the standard
    warmup: 10; iterations: 100   the timing counts
The selection's overrides take the same keys but `params` names no chip: {<op>: {<param>: value}}.

Refused here, each naming the key, the file and what is allowed: an unknown key, operator, dtype, oplib, chip or
param; a size that is not positive (Melements: not a multiple of 1/1024); more than one library (a library cannot
be turned off again in the rank's process); more than one node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from case_runners.core.errors import RUN_VARS_FILE, ConfigError, PerfplayError
from case_runners.core.paths import display_path
from case_runners.plan.config.resolved import DEFAULT_CASE_TIMEOUT_S, OPERATION
from case_runners.plan.config.selection import Selection
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.plan.flat import FlatParams, flat_config, selection_problems
from case_runners.plan.layering import choose_hardware
from case_runners.records.resolved import ResolvedConfig
from case_runners.tasks.operation import (
    CASE,
    DTYPES,
    NATIVE,
    TABLE_FILE,
    TIMING,
    operators,
    param_problem,
    timing_defaults,
)
from case_runners.vendors.description import VendorDescription
from case_runners.vendors.layout import OPERATION_FILE, vendor_dir
from case_runners.vendors.runtime import VendorRuntime

KEYS = ("suite", "oplibs", "dtypes", "params", *TIMING)
CONVENTION = ("FLOPs per call as FlagPerf's op2flops counts them; bytes: every input read and every output written "
              "once; roofline fraction: FLOP/s over min(peak FLOP/s of the dtype, intensity x memory bandwidth)")


def vendor_operation(root: Path, vendor: str) -> tuple[dict[str, Any], str]:
    """The vendor's operation.yaml ({} without one) and its path as messages show it."""
    path = vendor_dir(root, vendor) / OPERATION_FILE
    shown = display_path(path, root)
    return (load_mapping(path, root) if path.is_file() else {}), shown


def _names(value: Any, key: str, file: str, allowed: list[str], errors: list[ConfigError]) -> list[str] | None:
    """A list of names each in `allowed`; None with `errors` extended."""
    if not isinstance(value, list) or not value:
        errors.append(ConfigError("must be a non-empty list", key=key, file=file, allowed=allowed))
        return None
    bad = [ConfigError(f"unknown '{v}'", key=f"{key}[{i}]", file=file, allowed=allowed)
           for i, v in enumerate(value) if v not in allowed]
    errors += bad
    return None if bad else list(dict.fromkeys(value))


def _shapes(value: Any, key: str, file: str, errors: list[ConfigError]) -> dict[str, dict[str, Any]]:
    """{op: {param: value}} checked against the table."""
    table = operators()
    if not isinstance(value, dict):
        errors.append(ConfigError("must map operator names to their params", key=key, file=file))
        return {}
    found: dict[str, dict[str, Any]] = {}
    for op, params in value.items():
        if op not in table:
            errors.append(ConfigError(f"unknown operator '{op}'", key=f"{key}.{op}", file=file, allowed=table))
            continue
        if not isinstance(params, dict):
            errors.append(ConfigError("must map param names to values", key=f"{key}.{op}", file=file,
                                      allowed=table[op].params))
            continue
        for name, size in params.items():
            where = f"{key}.{op}.{name}"
            if name not in table[op].params:
                errors.append(ConfigError(f"unknown param '{name}' of {op}", key=where, file=file,
                                          allowed=table[op].params))
            elif (problem := param_problem(op, name, size)) is not None:
                errors.append(ConfigError(problem, key=where, file=file))
            else:
                found.setdefault(op, {})[name] = size
    return found


def _layer(data: dict[str, Any], file: str, hardware: str | None, chips: list[str], oplibs: list[str],
           params: dict[str, Any], provenance: dict[str, str], errors: list[ConfigError]) -> None:
    """Lay one layer (the vendor's file, hardware given: its params are per chip; or the overrides) over params."""
    for key, value in data.items():
        if key not in KEYS:
            errors.append(ConfigError("unknown key", key=key, file=file, allowed=KEYS))
            continue
        if key == "suite":
            params[key] = _names(value, key, file, list(operators()), errors) or params[key]
        elif key == "oplibs":
            found = _names(value, key, file, [NATIVE, *oplibs], errors)
            if found and len([o for o in found if o != NATIVE]) > 1:
                errors.append(ConfigError("names more than one library: a library cannot be turned off again in "
                                          "the rank's process (run each in its own selection)", key=key, file=file))
            elif found:
                params[key] = [o for o in found if o == NATIVE] + [o for o in found if o != NATIVE]  # native first
        elif key == "dtypes":
            params[key] = _names(value, key, file, list(DTYPES), errors) or params[key]
        elif key in TIMING:
            least = 0 if key == "warmup" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                errors.append(ConfigError(f"must be an integer of at least {least}, got {value!r}", key=key,
                                          file=file))
                continue
            params[key] = value
        else:
            _params(value, file, hardware, chips, params, provenance, errors)
            continue
        provenance[key] = file


def _params(value: Any, file: str, hardware: str | None, chips: list[str], params: dict[str, Any],
            provenance: dict[str, str], errors: list[ConfigError]) -> None:
    """A layer's params: per chip in the vendor's file (hardware given: every chip checked, that one applied),
    per operator in the overrides."""
    per_chip: dict[str | None, Any]
    if hardware is None:
        per_chip = {None: value}
    elif isinstance(value, dict):
        per_chip = value
    else:
        errors.append(ConfigError("must map chips (vendor.yaml hardware names) to operators", key="params",
                                  file=file, allowed=chips))
        return
    for chip, shapes in per_chip.items():
        if hardware is not None and chip not in chips:
            errors.append(ConfigError(f"unknown chip '{chip}'", key=f"params.{chip}", file=file, allowed=chips))
            continue
        key = "params" if chip is None else f"params.{chip}"
        for op, shape in _shapes(shapes or {}, key, file, errors).items():
            if chip is None or chip == hardware:
                params["shapes"][op].update(shape)
                provenance[f"shapes.{op}"] = file


def resolve_operation_selection(sel: Selection, vendor: VendorDescription, root: Path,
                                default_timeout_s: int | None = None) -> tuple[ResolvedConfig | None,
                                                                                 list[ConfigError]]:
    """(config, errors) for a selection with task: operation."""
    if sel.case != CASE:
        return None, [ConfigError(f"the operation task has one case, '{CASE}' (its operators: the suite, "
                                  f"oplibs, dtypes and params of vendor/{vendor.name}/{OPERATION_FILE} or the "
                                  f"overrides)", key=f"{sel.source}.case", file=RUN_VARS_FILE, allowed=[CASE])]
    errors = [e for e in [choose_hardware(sel, vendor, root)] if e]
    errors += selection_problems(sel, "the operation task is", "the operation task")
    table_file = display_path(TABLE_FILE, root)
    params: dict[str, Any] = {"suite": list(operators()), "oplibs": [NATIVE], "dtypes": None,
                              "shapes": {op: dict(spec.params) for op, spec in operators().items()},
                              **timing_defaults()}
    provenance = {key: table_file for key in ("suite", "oplibs", "dtypes", "shapes", *TIMING)}
    try:
        data, shown = vendor_operation(root, vendor.name)
        oplibs = VendorRuntime(vendor.name, vendor.device, vendor.dist_backend, root).oplibs
    except ConfigError as exc:
        return None, [*errors, exc]
    except PerfplayError as exc:  # the hook's own failure, named with its file (RuntimeHookError)
        return None, [*errors, ConfigError(str(exc))]
    if errors:
        return None, errors
    _layer(data, shown, str(sel.hardware), list(vendor.hardware), oplibs, params, provenance, errors)
    overrides_file = f"run overrides ({sel.source}.overrides)"
    _layer(sel.overrides, overrides_file, None, [], oplibs, params, provenance, errors)
    if errors:
        return None, errors
    params["shapes"] = {op: params["shapes"][op] for op in params["suite"]}
    sources = [table_file, *([shown] if data else []), *([overrides_file] if sel.overrides else [])]
    timeout = sel.timeout_s or default_timeout_s or DEFAULT_CASE_TIMEOUT_S
    flat = FlatParams(params, provenance, timeout, sources)
    return flat_config(sel, vendor, OPERATION, flat, CONVENTION,
                       "the operation task: each operator has its own FLOP/s and roofline fraction"), []

