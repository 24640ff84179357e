"""An inference case's config, FlagPerf's way: three files, strict override rules.

- `case_runners/cases/<case>/inference/configurations.yaml`: the same keys in every case (CONFIG_KEYS);
- `case_runners/cases/<case>/inference/parameters.yaml`: the case's own, hardware-independent params,
  never overridden; its `functional:` block is the small shape of the functional check (a selection's
  `functional: true`), which replaces them and makes the round non-standard;
- `vendor/<vendor>/cases/<case>/<vendor>_configurations.yaml`: the vendor's overrides. A key not in
  configurations.yaml is added with a warning; a changed key is logged; a key set to the value it already
  has is an error (an override must change something); a key of parameters.yaml is an error.

A model case, `case_runners/cases/<case>/inference/models/<name>.yaml` (mmlu's llama3_8b_mmlu), is an inference case of
its own named <name>: the folder's code and files with the model file's `parameters` and `configurations` laid over
theirs; its vendor file is vendor/<vendor>/cases/<name>/. An inference case needs no training case beside it.

Every value is checked against its range (case_runners/plan/config/constraints.py): the keys of configurations.yaml
have theirs in shared_params.py; a parameter has the range of the training param of the same name in the case's
config.yaml, or its own (`train_epochs: {default: 15, min: 1, max: 1000}`). A key a vendor adds has none.
`flops` (per item; 1 multiply-add = 2 FLOPs unless the case says otherwise) is a number or a product such as
`2*512*0.33e9`, parsed as numbers joined by `*`, never evaluated.

A config that changes a key of WORKLOAD_KEYS (the vendor's file or the run's overrides) is non-standard
(case_runners/plan/config/standard.py); the other keys say how the standard workload is run.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from case_runners.cases import MODELS_DIR, list_cases
from case_runners.core.errors import ConfigError, raise_all, shown
from case_runners.core.paths import display_path
from case_runners.plan.config.constraints import Constraint, declare_params
from case_runners.plan.config.selection import FUNCTIONAL
from case_runners.plan.config.standard import standard_fields
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.plan.layering import load_case_base
from case_runners.records.resolved import InferenceConfig
from case_runners.records.schema import ABSENT
from case_runners.vendors.layout import vendor_engines

CONFIG_KEYS = ("batch_size", "flops", "fp16", "compiler", "num_workers", "log_freq", "repeat", "no_validation",
               "exist_onnx_path", "exist_compiler_path")
# The FLOPs figure the results are reported with, and a model file the run did not export from the case's model.
WORKLOAD_KEYS = ("flops", "exist_onnx_path", "exist_compiler_path")
_NUMBER = re.compile(r"^[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?$|^\.[0-9]+([eE][+-]?[0-9]+)?$")


def inference_dir(root: Path, case: str) -> Path:
    """The inference folder of case `case`: its package's (a model case's is its package's)."""
    return root / "case_runners" / "cases" / inference_package(root, case) / "inference"


def inference_models(root: Path) -> dict[str, str]:
    """{inference model case: its package}: every cases/<package>/inference/models/<name>.yaml (mmlu's
    llama3_8b_mmlu: FlagPerf's case, mmlu's code with the file's parameters and configurations)."""
    found = (root / "case_runners" / "cases").glob(f"*/inference/{MODELS_DIR}/*.yaml")
    return {path.stem: path.parent.parent.parent.name for path in sorted(found)}


def inference_package(root: Path, case: str) -> str:
    """The case package whose inference code runs `case`."""
    return inference_models(root).get(case, case)


def vendor_overrides_path(root: Path, vendor: str, case: str) -> Path:
    return root / "vendor" / vendor / "cases" / case / f"{vendor}_configurations.yaml"


def parse_flops(value: Any, *, file: str) -> float:
    """FLOPs per item from a number or a product of numbers ("2*512*0.33e9"); ConfigError otherwise."""
    if isinstance(value, bool) or value is None:
        raise ConfigError(f"expected a number or a product like 2*512*0.33e9, got {shown(value)}", key="flops",
                          file=file)
    if isinstance(value, (int, float)):
        factors = [float(value)]
    else:
        parts = [p.strip() for p in str(value).split("*")]
        if not all(_NUMBER.match(p) for p in parts):
            raise ConfigError(f"{shown(value)} is not a number or a product of numbers like 2*512*0.33e9",
                              key="flops", file=file)
        factors = [float(p) for p in parts]
    flops = math.prod(factors)
    if not math.isfinite(flops) or flops <= 0:
        raise ConfigError(f"{shown(value)} must be a positive, finite number of FLOPs", key="flops", file=file)
    return flops


def resolve_inference(case: str, vendor: str | None, root: Path, overrides: dict[str, Any] | None = None,
                      overrides_file: str = "run overrides", functional: bool = False) -> tuple[InferenceConfig,
                                                                                              list[str]]:
    """The case's resolved inference config and the notes (warnings, changes) its overrides produced.

    `overrides` (the run's, laid over the vendor's file) may change the keys of configurations.yaml and the
    keys the vendor added, never a parameter. `functional`: the parameters of parameters.yaml's `functional:`
    block replace theirs (the functional check's small shape; non-standard). Raises ConfigError; the problems of
    both layers are raised together.
    """
    folder = inference_dir(root, case)
    if not (folder / "configurations.yaml").is_file():
        raise ConfigError(f"unknown inference case '{case}'", key="case", allowed=inference_cases(root))
    base_path, params_path = folder / "configurations.yaml", folder / "parameters.yaml"
    base_file, params_file = display_path(base_path, root), display_path(params_path, root)
    base = load_mapping(base_path, root)
    raw_params = load_mapping(params_path, root) if params_path.is_file() else {}
    block = raw_params.pop(FUNCTIONAL, None) or {}
    missing = [k for k in CONFIG_KEYS if k not in base]
    extra = sorted(set(base) - set(CONFIG_KEYS))
    if missing or extra:
        raise ConfigError(f"must have exactly the keys every inference case has; missing {missing}, "
                          f"unknown {extra}", key="configurations", file=base_file, allowed=CONFIG_KEYS)
    shared = sorted(set(raw_params) & set(base))
    if shared:
        raise ConfigError(f"keys {shared} are in both {base_file} and {params_file}", key=shared[0],
                          file=params_file)
    package = inference_package(root, case)
    if package != case:  # a model case: its file's parameters and configurations over the package's
        model_path = inference_dir(root, case) / MODELS_DIR / f"{case}.yaml"
        model_file = display_path(model_path, root)
        raw_params, base, model_keys = _model_layer(load_mapping(model_path, root), raw_params, base, model_file,
                                                    params_file)
        model_sources = [model_file]
    else:
        model_sources, model_keys = [], []
    inherited, inherited_file = _training_ranges(package, root)
    params, param_ranges = declare_params(raw_params, file=params_file, inherited=inherited,
                                          inherited_file=inherited_file)
    shape = _functional_shape(block, params, param_ranges, params_file)
    shrunk = [key for key, value in shape.items() if value != params[key]] if functional else []
    if functional:
        params.update(shape)
    defaults, constraints = declare_params({k: v for k, v in base.items() if k != "flops"}, file=base_file)
    config = {key: defaults.get(key, value) for key, value in base.items()}
    provenance = dict.fromkeys(base, base_file)  # which file set each key: errors name it
    provenance.update(dict.fromkeys(model_keys, model_sources[-1] if model_keys else base_file))
    notes: list[str] = []
    sources = [base_file] + ([params_file] if params_path.is_file() else []) + model_sources + (
        [f"{params_file} ({FUNCTIONAL})"] if functional else [])
    errors: list[ConfigError] = []
    over_path = vendor_overrides_path(root, vendor, case) if vendor is not None else None
    if over_path is not None and over_path.is_file():
        over_file = display_path(over_path, root)
        sources.append(over_file)
        layer = load_mapping(over_path, root)
        errors += _apply_layer(config, notes, layer, params, constraints, vendor_file=True,
                               files=(base_file, params_file, over_file))
        provenance.update(dict.fromkeys(layer, over_file))
    if overrides:
        sources.append(overrides_file)
        errors += _apply_layer(config, notes, overrides, params, constraints, vendor_file=False,
                               files=(base_file, params_file, overrides_file))
        provenance.update(dict.fromkeys(overrides, overrides_file))
    raise_all(errors)
    config["flops"] = parse_flops(config["flops"], file=provenance["flops"])
    base_values = {**defaults, "flops": parse_flops(base["flops"], file=base_file)}
    changed = [key for key in WORKLOAD_KEYS if config[key] != base_values[key]] + shrunk
    _check_switches(config, provenance)
    engines = vendor_engines(root, vendor) if vendor is not None else []
    if vendor is not None and config["compiler"] is not None and config["compiler"] not in engines:
        raise ConfigError(f"vendor '{vendor}' has no engine '{config['compiler']}' (vendor/{vendor}/engines/)",
                          key="compiler", file=provenance["compiler"], allowed=engines + ["null"])
    return InferenceConfig(case=case, package=package if package != case else ABSENT, vendor=vendor or "",
                           configurations=config, parameters=params, sources=sources, provenance=provenance,
                           **standard_fields(changed)), notes


def _model_layer(layer: dict[str, Any], raw_params: dict[str, Any], base: dict[str, Any], model_file: str,
                 params_file: str) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """A model case's file laid over its package's: `parameters` (values of the package's parameters, their
    ranges kept) and `configurations` (keys of configurations.yaml), nothing else."""
    unknown = sorted(set(layer) - {"parameters", "configurations"})
    if unknown:
        raise ConfigError("unknown key of a model case's file", key=unknown[0], file=model_file,
                          allowed=["configurations", "parameters"])
    params, configurations = layer.get("parameters") or {}, layer.get("configurations") or {}
    errors = [ConfigError(f"is not a parameter of the case ({params_file})", key=key, file=model_file,
                          allowed=raw_params) for key in params if key not in raw_params]
    errors += [ConfigError("is not a key of configurations.yaml", key=key, file=model_file, allowed=CONFIG_KEYS)
               for key in configurations if key not in CONFIG_KEYS]
    raise_all(errors)
    laid = {key: {**spec, "default": params[key]} if isinstance(spec, dict) and key in params
            else params.get(key, spec) for key, spec in raw_params.items()}
    return laid, {**base, **configurations}, list(configurations)


def _training_ranges(case: str, root: Path) -> tuple[dict[str, Constraint], str]:
    """The ranges an inference case's parameters inherit, and their file: its training case's; none for an
    inference-only case (inference/ but no config.yaml, as vit_l_16), whose parameters declare their own."""
    if case not in list_cases():
        return {}, ""
    training, training_file = load_case_base(case, root)
    return training["constraints"], training_file


def _functional_shape(block: Any, params: dict[str, Any], ranges: dict[str, Constraint],
                      params_file: str) -> dict[str, Any]:
    """parameters.yaml's `functional:` block, checked: parameters of the case only, each within its range."""
    where = f"{params_file} ({FUNCTIONAL})"
    if not isinstance(block, dict):
        raise ConfigError("must be a mapping of parameters to values", key=FUNCTIONAL, file=params_file)
    errors, shape = [], {}
    for key, value in block.items():
        if key not in params:
            errors.append(ConfigError("is not a parameter of the case", key=key, file=where, allowed=params))
            continue
        try:
            shape[key] = ranges[key].check(value, key=key, file=where)
        except ConfigError as exc:
            errors.append(exc)
    raise_all(errors)
    return shape


WARNING = "warning: "  # the notes of a resolved inference config that warn (a key the vendor's file adds)


def note_warnings(notes: list[str] | None) -> list[str]:
    """The warnings among a resolved inference config's notes, without their prefix: what a run prints (the rank log,
    the play's warnings) and check-vendor shows."""
    return [note.removeprefix(WARNING) for note in notes or [] if note.startswith(WARNING)]


def inference_cases(root: Path) -> list[str]:
    found = (root / "case_runners" / "cases").glob("*/inference/configurations.yaml")
    return sorted([p.parent.parent.name for p in found] + list(inference_models(root)))


def _apply_layer(config: dict[str, Any], notes: list[str], layer: dict[str, Any], params: dict[str, Any],
                 constraints: dict[str, Constraint], *, vendor_file: bool,
                 files: tuple[str, str, str]) -> list[ConfigError]:
    """Lay one file of overrides over config in place; return the errors. Neither may set a parameter, nor a
    value out of its key's range. The vendor's <vendor>_configurations.yaml: a new key is a warning, a
    key set to the value it has an error. The run's overrides: only keys the config has, and a value it already
    has changes nothing."""
    base_file, params_file, over_file = files
    errors = []
    for key, value in layer.items():
        if key in params:
            errors.append(ConfigError(f"is a parameter of the case ({params_file}): hardware-independent, "
                                      "never overridden", key=key, file=over_file))
            continue
        if key not in config and vendor_file:
            notes.append(f"{WARNING}{over_file}: key '{key}' is not in {base_file}; added as {shown(value)}")
            config[key] = value
            continue
        if key not in config:
            errors.append(ConfigError("unknown inference config key", key=key, file=over_file, allowed=sorted(config)))
            continue
        if key in constraints:
            try:
                value = constraints[key].check(value, key=key, file=over_file)
            except ConfigError as exc:
                errors.append(exc)
                continue
        if value == config[key] and vendor_file:
            errors.append(ConfigError(f"sets the value {shown(value)} it already has in {base_file}; remove it "
                                      "(an override must change something)", key=key, file=over_file))
        elif value != config[key]:
            notes.append(f"info: {over_file}: key '{key}' changed from {shown(config[key])} to {shown(value)}")
            config[key] = value
    return errors


def _check_switches(config: dict[str, Any], provenance: dict[str, str]) -> None:
    """The switches that need another key (each key's own range is checked as it is set)."""
    if config["no_validation"] and config["exist_onnx_path"] is None:
        raise ConfigError("no_validation: true needs exist_onnx_path (without the model there is nothing to "
                          "export)", key="exist_onnx_path", file=provenance["no_validation"])
    if config["exist_compiler_path"] is not None and config["compiler"] is None:
        raise ConfigError("exist_compiler_path needs a compiler to load it", key="compiler",
                          file=provenance["exist_compiler_path"])
