"""Resolve one selection: case base config < vendor hardware config < run overrides.

The case base declares its params (with defaults, whose types are enforced, and ranges: constraints.py), which
of them are `mutable` (a vendor config or a run override may set them: how the standard workload is run) and
which are `run_only` (only a run override may set them, for a smoke test: they change the workload, and a config
that changes one is non-standard: plan/config/standard.py). Its optional `functional:` block is the small, short shape
of the functional check (a selection's `functional: true`), laid under the run's overrides. Values stay within
their ranges. Every violation names the key and the file it came from.

Its optional `stacks:` lists the built-in stacks it runs on besides pytorch (plan/config/stacks.py): the selection's
framework picks one, whose vendor configs are in the vendor case's <stack>/ folder and whose params (zero_stage)
are vendor-mutable; another stack's params are the plan's error when a layer sets one, and are not resolved. The
framework may also name one of the vendor's own stacks whose `cases` list the case (vendors/vendor_stacks.py): its
vendor configs are in the same <stack>/ folder, its params vendor-mutable for that selection only. A built-in stack
builds the models its case package's stack_refusal hook allows (llama: shapes.py STACK_FAMILIES): a model case on
another is not among the case's frameworks, and a `model` a layer sets that the stack cannot build is an error.

A model case (cases/<case>/models/<name>.yaml: case_runners/cases/__init__.py) loads its package's base with
`model` set to its name and the file's params as their defaults; those and `model` become run-only: the standard
workload a vendor config may not change (it sets the rest: batch_size per rank, precision, sharding).
"""

from __future__ import annotations

import importlib
from collections.abc import Collection
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from case_runners.cases import case_dir, case_package, list_cases, model_file
from case_runners.core.errors import RUN_VARS_FILE, ConfigError, raise_all
from case_runners.core.paths import display_path
from case_runners.plan.config.constraints import Constraint, declare_params
from case_runners.plan.config.resolved import DEFAULT_CASE_TIMEOUT_S
from case_runners.plan.config.selection import BOUNDS, FUNCTIONAL, Selection
from case_runners.plan.config.shared_params import (
    DDP,
    GLOBAL_BATCH,
    GRAD_ACCUMULATION,
    SHARED_FILE,
    TRAINER_PARAMS,
    TRAINER_RUN_ONLY,
)
from case_runners.plan.config.stacks import (
    PYTORCH,
    STACK_CONFLICTS,
    STACK_FIXED,
    STACK_PARAMS,
    STACK_PEAKS,
    STACKS,
    STACKS_KEY,
    stack_of,
)
from case_runners.plan.config.standard import standard_fields
from case_runners.plan.config.types import to_float
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.plan.global_batch import FUNCTIONAL_BATCH, functional_batch, global_batch_problems
from case_runners.records.resolved import (
    FLOPS_COUNTED,
    SAMPLE,
    SAMPLE_UNITS,
    ResolvedConfig,
    Target,
    VendorInfo,
)
from case_runners.records.schema import ABSENT
from case_runners.vendors.description import VendorDescription, vendor_info
from case_runners.vendors.layout import vendor_config_dir
from case_runners.vendors.vendor_stacks import VendorStack, stacks_for_case


def load_case_base(case: str, root: Path) -> tuple[dict[str, Any], str]:
    """The case's base config.yaml, checked for the keys every case must declare, with the trainer's params
    (plan/config/shared_params.py) it does not give; its "params" are the defaults, "constraints" their ranges, and its
    "mutable" and "run_only" lists the trainer params' and its own. ConfigError for a param without a range or a
    default out of it, a trainer param given its own default again or listed as mutable or run-only again, and a
    `mutable` or `run_only` entry that is not a param or is in both lists. A model case's base is its package's made
    its own (_with_model)."""
    path = case_dir(case) / "config.yaml"
    shown = display_path(path, root)
    base = load_mapping(path, root)
    for key, kind in (("params", dict), ("mutable", list), ("run_only", list), ("target", dict),
                      ("flops_depend_on", list)):
        if not isinstance(base.get(key), kind):
            raise ConfigError(f"must be a {kind.__name__}", key=key, file=shown)
    base["params"], base["mutable"], base["run_only"] = _with_trainer_params(base, shown)
    base[STACKS_KEY] = _stacks(base, shown)
    for stack in base[STACKS_KEY]:  # each stack's params, vendor-mutable
        base["params"] = {**STACK_PARAMS[stack], **base["params"]}
        base["mutable"] = [*base["mutable"], *STACK_PARAMS[stack]]
    for listed in ("mutable", "run_only"):
        unknown = sorted(set(base[listed]) - set(base["params"]), key=str)
        if unknown:
            raise ConfigError(f"is listed as {listed} but is not a param", key=f"{listed}.{unknown[0]}", file=shown,
                              allowed=base["params"])
    problems = Target.problems(base["target"], "target")
    if problems:
        raise ConfigError(f"must be {{metric, value, higher_is_better}}: {'; '.join(problems)}", key="target",
                          file=shown)
    if base.setdefault("sample", SAMPLE) not in SAMPLE_UNITS:
        raise ConfigError(f"{base['sample']!r} is not a unit of samples", key="sample", file=shown,
                          allowed=SAMPLE_UNITS)
    both = sorted(set(base["mutable"]) & set(base["run_only"]))
    if both:
        raise ConfigError("is listed as mutable (a vendor may set it) and as run_only (only a run override may): "
                          "keep it in one", key=f"run_only.{both[0]}", file=shown)
    base["params"], base["constraints"] = declare_params(base["params"], file=shown, prefix="params.")
    base[FUNCTIONAL] = _functional_block(base, shown)
    model = model_file(case)
    if model is not None:
        _with_model(base, case, model, root)
    return base, shown


MODEL_PARAM = "model"  # the param a model case fixes to its name
MODEL_FILE_KEYS = ("description", "params")
MODEL_FILE, MODEL_PARAMS = "model_file", "model_params"  # a loaded model case's file (as shown) and the params it fixes


def _with_model(base: dict[str, Any], case: str, path: Path, root: Path) -> None:
    """A loaded case base made model case `case`'s, in place: `model` is its name and its file's params their
    defaults, each checked against its range and now run-only (a vendor config may not change them); its file's
    description. ConfigError naming the key and the file for anything else."""
    shown = display_path(path, root)
    layer = load_mapping(path, root)
    unknown = sorted(set(layer) - set(MODEL_FILE_KEYS), key=str)
    if unknown:
        raise ConfigError("is not a key of a model case's file", key=str(unknown[0]), file=shown,
                          allowed=MODEL_FILE_KEYS)
    params = layer.get("params") or {}
    if not isinstance(params, dict):
        raise ConfigError("must be a mapping of params to values", key="params", file=shown)
    if MODEL_PARAM in params or MODEL_PARAM not in base["params"]:
        why = "is the file's name: leave it out" if MODEL_PARAM in params else \
            f"case '{base.get('case')}' has no param '{MODEL_PARAM}': it has no model cases"
        raise ConfigError(why, key=f"params.{MODEL_PARAM}", file=shown)
    fixed = {MODEL_PARAM: case, **params}
    errors: list[ConfigError] = []
    for key, value in fixed.items():
        if key not in base["params"]:
            errors.append(ConfigError("unknown config key", key=f"params.{key}", file=shown, allowed=base["params"]))
            continue
        try:
            base["params"][key] = base["constraints"][key].check(value, key=f"params.{key}", file=shown)
        except ConfigError as exc:
            errors.append(exc)
    raise_all(errors)
    base["mutable"] = [name for name in base["mutable"] if name not in fixed]
    base["run_only"] = [*base["run_only"], *(name for name in fixed if name not in base["run_only"])]
    base.update({"case": case, "description": layer.get("description", base.get("description")),
                 MODEL_FILE: shown, MODEL_PARAMS: list(fixed)})


def _stacks(base: dict[str, Any], shown: str) -> list[str]:
    """The case's `stacks:` (none when absent): built-in stacks, each once, pytorch implicit."""
    stacks = base.get(STACKS_KEY) or []
    if not isinstance(stacks, list) or not all(isinstance(s, str) for s in stacks):
        raise ConfigError("must be a list of built-in stacks", key=STACKS_KEY, file=shown, allowed=STACKS)
    for stack in stacks:
        if stack not in STACKS or stacks.count(stack) > 1:
            why = "is listed twice" if stack in STACKS else f"is not a built-in stack ({PYTORCH} is implicit)"
            raise ConfigError(why, key=f"{STACKS_KEY}.{stack}", file=shown, allowed=STACKS)
    own = sorted(name for name in base["params"] if stack_of(name))
    if own:
        raise ConfigError("is a stack's param: case_runners/plan/config/stacks.py declares it once",
                          key=f"params.{own[0]}", file=shown)
    return list(stacks)


def frameworks(base: dict[str, Any]) -> list[str]:
    """The frameworks a loaded case base runs on: its own (pytorch) first, then its stacks; a model case's, those
    that build its model (the case package's stack_refusal hook)."""
    return [base.get("framework", PYTORCH), *(s for s in base[STACKS_KEY] if not model_refusal(base, s))]


def model_refusal(base: dict[str, Any], framework: str) -> str | None:
    """Why the built-in stack cannot build a model case's model (its package's stack_refusal hook: llama's shapes
    by family); None where it can, and for a case with no model cases."""
    if MODEL_PARAM not in base.get(MODEL_PARAMS, []):
        return None
    refusal = getattr(case_hooks(case_package(str(base["case"]))), "stack_refusal", lambda *_: None)
    return cast("str | None", refusal(str(base["params"][MODEL_PARAM]), framework))


def choose_framework(sel: Selection, base: dict[str, Any], base_file: str, vendor: str,
                     root: Path) -> VendorStack | None:
    """The selection's framework checked against the loaded case base's (its own and built-in stacks) and the
    vendor's own stacks for the case, read only when it names neither; a vendor stack's params joined to the base
    (with_vendor_stack) and the stack returned. ConfigError naming the key and the allowed frameworks."""
    own, *stacks = frameworks(base)
    if sel.framework in (own, *stacks) and (not sel.framework_version or sel.framework == own):
        return None
    refusal = model_refusal(base, sel.framework) if sel.framework in base[STACKS_KEY] else None
    if refusal and not sel.framework_version:  # a model case on a built-in stack that cannot build its model
        raise ConfigError(f"model case '{sel.case}' cannot run on the {sel.framework} stack: {refusal}",
                          key=f"{sel.source}.framework", file=RUN_VARS_FILE,
                          allowed=[own, f"{own}_<version>", *stacks])
    theirs = stacks_for_case(root, vendor, sel.case, case_package(sel.case))
    if sel.framework not in theirs or sel.framework_version:
        also = f" and the stacks {base_file} lists ({', '.join(stacks)})" if stacks else ""
        raise ConfigError(f"unknown framework '{sel.framework_key}': case '{sel.case}' is written for {own}{also}",
                          key=f"{sel.source}.framework", file=RUN_VARS_FILE,
                          allowed=[own, f"{own}_<version>", *stacks, *theirs])
    with_vendor_stack(base, theirs[sel.framework])
    return theirs[sel.framework]


def with_vendor_stack(base: dict[str, Any], stack: VendorStack) -> None:
    """A loaded case base with the vendor stack's params (vendors/vendor_stacks.py), vendor-mutable for this
    selection only; ConfigError for one the case or the trainer already has."""
    taken = sorted(name for name in set(stack.params) & set(base["params"]) if stack_of(name) is None)
    if taken:
        raise ConfigError(f"is already a param of case '{base.get('case')}' (or the trainer's): a stack's params are "
                          f"its own", key=f"params.{taken[0]}", file=stack.shown)
    base["params"] = {**base["params"], **stack.params}  # over a built-in stack's of the same name
    base["constraints"] = {**base["constraints"], **stack.constraints}
    base["mutable"] = [*base["mutable"], *(name for name in stack.params if name not in base["mutable"])]


def stack_problems(params: dict[str, Any], provenance: dict[str, str], base: dict[str, Any], base_file: str,
                   framework: str, own: Collection[str] = ()) -> list[ConfigError]:
    """Another stack's params set by a layer (an error each, naming the key and the file), then dropped from params
    and provenance: only their stack reads them (`own`: the selection's vendor stack's, which are its own whatever
    a built-in stack calls its). Another stack than pytorch shards with its own params, so data_parallel stays
    ddp."""
    errors = []
    for name in [name for name in params if stack_of(name, own) not in (None, framework)]:
        if provenance.get(name, base_file) != base_file:
            errors.append(ConfigError(f"is a param of the {stack_of(name)} stack, and this selection runs on "
                                      f"{framework}: set it in the {stack_of(name)} stack's configs only", key=name,
                                      file=provenance[name],
                                      allowed=[p for p in params if stack_of(p) == framework] or None))
        del params[name]
        provenance.pop(name, None)
    if framework != PYTORCH and params.get("data_parallel", DDP) != DDP:
        errors.append(ConfigError(f"the {framework} stack partitions the model its own way (its params, "
                                  f"plan/config/stacks.py): leave data_parallel {DDP}", key="data_parallel",
                                  file=provenance.get("data_parallel", base_file), allowed=[DDP]))
    for name, why in STACK_FIXED.get(framework, {}).items():
        default = TRAINER_PARAMS[name]["default"]
        if params.get(name, default) != default:
            errors.append(ConfigError(f"the {framework} stack cannot run it: {why}", key=name,
                                      file=provenance.get(name, base_file), allowed=[default]))
    stack = STACK_PARAMS.get(framework, {})

    def changed(param: str) -> bool:
        return params.get(param, stack[param]["default"]) != stack[param]["default"]

    for name, other, why in STACK_CONFLICTS.get(framework, ()):
        if changed(name) and changed(other):
            errors.append(ConfigError(f"the {framework} stack cannot run it with {other} {params[other]} "
                                      f"({provenance.get(other, base_file)}): {why}", key=name,
                                      file=provenance.get(name, base_file), allowed=[stack[name]["default"]]))
    return errors


def stack_peak_problems(params: dict[str, Any], provenance: dict[str, str], base_file: str, framework: str,
                        hardware: str, facts: dict[str, Any], vendor_file: str) -> list[ConfigError]:
    """A stack's param set true that needs a precision the chip has no peak for (STACK_PEAKS: torchtitan's float8
    on a chip without an fp8 peak), naming the key, the file that set it and the vendor file without the peak."""
    peaks = facts.get("peak_flops") or {}
    return [ConfigError(f"needs a chip that computes in {precision}: hardware {hardware} has no {precision} peak "
                        f"({vendor_file} hardware.{hardware}.peak_flops.{precision})", key=name,
                        file=provenance.get(name, base_file), allowed=[False])
            for name, precision in STACK_PEAKS.get(framework, {}).items()
            if params.get(name) and not peaks.get(precision)]


def _stack_params(framework: str, vendor_stack: VendorStack | None) -> list[str]:
    """The params of the selection's stack: a vendor stack's declared ones, or a built-in stack's."""
    return sorted(vendor_stack.params if vendor_stack is not None else STACK_PARAMS.get(framework, {}))


def stack_model_problems(hooks: ModuleType, params: dict[str, Any], provenance: dict[str, str],
                         framework: str) -> list[ConfigError]:
    """The error of a model a layer set (a vendor config, a run override) that the built-in stack cannot build,
    naming the file that set it and the models the stack builds (the case package's stack_models and stack_refusal
    hooks)."""
    if MODEL_PARAM not in params or not hasattr(hooks, "stack_refusal"):
        return []
    refusal = hooks.stack_refusal(str(params[MODEL_PARAM]), framework)
    if not refusal:
        return []
    return [ConfigError(refusal, key=MODEL_PARAM, file=provenance.get(MODEL_PARAM),
                        allowed=hooks.stack_models(framework))]


def accumulation_problems(params: dict[str, Any], provenance: dict[str, str], base_file: str) -> list[ConfigError]:
    """grad_accumulation that does not divide batch_size (the micro batches are equal): an error naming the key,
    the file that set it and the values that divide the batch."""
    batch, steps = params.get("batch_size"), params.get(GRAD_ACCUMULATION, 1)
    if not isinstance(batch, int) or not isinstance(steps, int) or batch % steps == 0:
        return []
    divisors = ", ".join(str(n) for n in range(1, batch + 1) if batch % n == 0)
    return [ConfigError(f"{steps} does not divide batch_size {batch} (set in "
                        f"{provenance.get('batch_size', base_file)}): the rank's batch is split into equal micro "
                        f"batches (allowed: {divisors})", key=GRAD_ACCUMULATION,
                        file=provenance.get(GRAD_ACCUMULATION, base_file))]


def batch_problems(sel: Selection, params: dict[str, Any], provenance: dict[str, str],
                   layers: list[str]) -> list[ConfigError]:
    """A training case's batch: a functional round's one micro batch (plan/global_batch.py functional_batch), the
    global batch's split over the selection's ranks, then the accumulation's of batch_size. `layers`: the files
    laid, first (the case base) to last (the run overrides)."""
    base_file = layers[0]
    if GLOBAL_BATCH in params:  # a training case
        if sel.functional:
            functional_batch(params, provenance, f"{base_file} ({FUNCTIONAL})")
        problems = global_batch_problems(params, provenance, base_file, sel.nnodes * sel.nproc, layers)
        if problems:
            return problems
    return accumulation_problems(params, provenance, base_file)


def _functional_block(base: dict[str, Any], shown: str) -> dict[str, Any]:
    """The case's `functional:` block ({} when it has none), checked as a run override is: the small, short shape of
    the functional check (a selection's `functional: true`), of run-only and trainer params only."""
    block = base.get(FUNCTIONAL) or {}
    if not isinstance(block, dict):
        raise ConfigError("must be a mapping of params to values", key=FUNCTIONAL, file=shown)
    allowed = sorted({*TRAINER_PARAMS, *base["run_only"]})
    errors: list[ConfigError] = []
    checked = dict(base["params"])
    apply_layer(checked, {}, block, constraints=base["constraints"], allowed=allowed, run_only=[],
                file=f"{shown} ({FUNCTIONAL})", errors=errors)
    raise_all(errors)
    return {key: checked[key] for key in block}


def _with_trainer_params(base: dict[str, Any], shown: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    """A case's params, mutable and run_only with the trainer's (TRAINER_PARAMS, declared once): its params the
    trainer's defaults and its own, each list the trainer's and its own."""
    errors = [ConfigError(f"is a trainer param: {SHARED_FILE} says who may set it", key=f"{listed}.{name}",
                          file=shown) for listed in ("mutable", "run_only") for name in base[listed]
              if name in TRAINER_PARAMS]
    errors += [ConfigError(f"repeats the trainer's default ({SHARED_FILE}): leave it out", key=f"params.{name}",
                           file=shown) for name, value in base["params"].items()
               if name in TRAINER_PARAMS and "default" in TRAINER_PARAMS[name]
               and _same(value, TRAINER_PARAMS[name]["default"])]
    errors += [ConfigError(f"is missing: the trainer's {name} has no default, every case gives its own",
                           key=f"params.{name}", file=shown)
               for name, spec in TRAINER_PARAMS.items() if "default" not in spec and name not in base["params"]]
    raise_all(errors)
    defaults = {name: spec["default"] for name, spec in TRAINER_PARAMS.items() if "default" in spec}
    mutable = [name for name in TRAINER_PARAMS if name not in TRAINER_RUN_ONLY]
    return {**defaults, **base["params"]}, [*mutable, *base["mutable"]], [*TRAINER_RUN_ONLY, *base["run_only"]]


def _same(value: Any, default: Any) -> bool:
    return type(value) is type(default) and value == default  # 0 is not false, 1.0 not 1


def apply_layer(params: dict[str, Any], provenance: dict[str, str], layer: dict[str, Any], *,
                constraints: dict[str, Constraint], allowed: list[str], run_only: list[str], file: str,
                errors: list[ConfigError]) -> None:
    """Apply one layer of overrides in place, recording every rejected key (unknown, not `allowed` in this layer:
    run-only or immutable, of the wrong type, out of range) in `errors`."""
    for key, value in layer.items():
        if key not in params:
            errors.append(ConfigError("unknown config key", key=key, file=file, allowed=params))
        elif key not in allowed and key in run_only:
            errors.append(ConfigError("is run-only: only a run override may set it, for a smoke test (it changes "
                                      "the standard workload)", key=key, file=file, allowed=allowed))
        elif key not in allowed:
            errors.append(ConfigError("is immutable: the case base does not allow overriding it",
                                      key=key, file=file, allowed=allowed))
        else:
            try:
                params[key] = constraints[key].check(value, key=key, file=file)
                provenance[key] = file
            except ConfigError as exc:
                errors.append(exc)




def case_hooks(case: str) -> ModuleType:
    """The case's package (stdlib only): its optional plan hooks flops_per_sample(params), FLOPS_CONVENTION and
    plan_problems(params) -> [(param, message)]. Found by name, as the trainer finds a case's build_case."""
    return importlib.import_module(f"case_runners.cases.{case}")


def hook_problems(hooks: ModuleType, params: dict[str, Any], provenance: dict[str, str],
                  base_file: str) -> list[ConfigError]:
    """The case's plan_problems of resolved params, (param, message) each, named with the file that set the param."""
    errors = []
    for param, message in getattr(hooks, "plan_problems", lambda _: [])(params):
        errors.append(ConfigError(message, file=provenance.get(param, base_file)))
    return errors


def vendor_config_path(root: Path, vendor: str, sel: Selection) -> Path:
    """The vendor's config of the selection: its framework's folder (vendors/layout.py vendor_config_dir)."""
    return vendor_config_dir(root, vendor, sel.case, sel.framework) / f"{sel.config_name}.yaml"


def choose_hardware(sel: Selection, vendor: VendorDescription, root: Path) -> ConfigError | None:
    """Set the selection's hardware (the vendor's default when it names none); the error if the vendor lacks it."""
    sel.hardware = sel.hardware or vendor.default_hardware
    if sel.hardware in vendor.hardware:
        return None
    return ConfigError(f"unknown hardware '{sel.hardware}' for vendor '{vendor.name}'", key=f"{sel.source}.hardware",
                       file=display_path(vendor.path, root), allowed=vendor.hardware)


def resolve(sel: Selection, vendor: VendorDescription, root: Path,
            default_timeout_s: int | None = None) -> tuple[ResolvedConfig | None, list[ConfigError]]:
    """Resolve a selection against a loaded vendor; return (config, errors)."""
    cases = list_cases()
    if sel.case not in cases:
        return None, [ConfigError(f"unknown case '{sel.case}'", key=f"{sel.source}.case", file=RUN_VARS_FILE,
                                  allowed=cases)]
    hardware_error = choose_hardware(sel, vendor, root)
    if hardware_error:
        return None, [hardware_error]
    try:
        base, base_file = load_case_base(sel.case, root)
    except ConfigError as exc:
        return None, [exc]
    try:
        vendor_stack = choose_framework(sel, base, base_file, vendor.name, root)
    except ConfigError as exc:
        return None, [exc]
    vendor_file = vendor_config_path(root, vendor.name, sel)
    if not vendor_file.is_file():
        available = sorted(p.stem.removeprefix("config_") for p in vendor_file.parent.glob("config_*.yaml"))
        return None, [ConfigError(
            f"vendor '{vendor.name}' has no config for {sel.hardware} at nnodes={sel.nnodes}, nproc={sel.nproc} "
            f"(no file {display_path(vendor_file, root)})", key=sel.source, allowed=available)]

    errors: list[ConfigError] = []
    params = dict(base["params"])
    provenance = {key: base_file for key in params}
    provenance.update(dict.fromkeys(base.get(MODEL_PARAMS, []), base.get(MODEL_FILE)))
    if vendor_stack is not None:
        provenance.update(dict.fromkeys(vendor_stack.params, vendor_stack.shown))
    vendor_shown = display_path(vendor_file, root)
    try:
        apply_layer(params, provenance, load_mapping(vendor_file, root), constraints=base["constraints"],
                    allowed=base["mutable"], run_only=base["run_only"], file=vendor_shown, errors=errors)
    except ConfigError as exc:
        errors.append(exc)
    if sel.functional:  # the case's declared small shape, under the run's overrides
        apply_layer(params, provenance, base[FUNCTIONAL], constraints=base["constraints"],
                    allowed=list(base[FUNCTIONAL]), run_only=[], file=f"{base_file} ({FUNCTIONAL})", errors=errors)
    overrides_file = f"run overrides ({sel.source}.overrides)"
    apply_layer(params, provenance, sel.overrides, constraints=base["constraints"],
                allowed=base["mutable"] + base["run_only"], run_only=base["run_only"], file=overrides_file,
                errors=errors)
    errors += stack_problems(params, provenance, base, base_file, sel.framework,
                             vendor_stack.params if vendor_stack is not None else ())
    hardware = str(sel.hardware)  # the vendor's default when the selection named none (choose_hardware)
    errors += stack_peak_problems(params, provenance, base_file, sel.framework, hardware, vendor.hardware[hardware],
                                  display_path(vendor.path, root))
    errors += stack_model_problems(case_hooks(case_package(sel.case)), params, provenance, sel.framework)
    layers = [base_file, base.get(MODEL_FILE, base_file), vendor_shown, f"{base_file} ({FUNCTIONAL})", overrides_file]
    errors += batch_problems(sel, params, provenance, layers)
    counted = base.get("flops_per_sample") == FLOPS_COUNTED  # rank 0 counts them at the run's shape
    try:
        flops = 0.0 if counted else to_float(base.get("flops_per_sample", 0), key="flops_per_sample", file=base_file)
        timeout = sel.timeout_s or default_timeout_s or BOUNDS["timeout_s"].check(
            base.get("timeout_s", DEFAULT_CASE_TIMEOUT_S), key="timeout_s", file=base_file)
    except ConfigError as exc:
        errors.append(exc)
    package = case_package(sel.case)
    hooks = case_hooks(package)
    if counted and hasattr(hooks, "flops_per_sample"):
        errors.append(ConfigError(f"is {FLOPS_COUNTED}, but the case's package has a flops_per_sample hook: keep one",
                                  key="flops_per_sample", file=base_file))
    if not errors:
        errors += hook_problems(hooks, params, provenance, base_file)
    if errors:
        return None, errors
    if hasattr(hooks, "flops_per_sample"):  # of these params: no default it assumes
        flops = float(hooks.flops_per_sample(params))
    changed = [] if counted else [k for k in base["flops_depend_on"] if params.get(k) != base["params"].get(k)]
    # a functional round is never a standard one
    shrunk = [*base[FUNCTIONAL], *(k for k in FUNCTIONAL_BATCH if k in params)] if sel.functional else []
    non_standard = [k for k in base["run_only"] + shrunk if params[k] != base["params"][k]]
    stack_params = _stack_params(sel.framework, vendor_stack)  # compare leaves them out of the workload
    config = ResolvedConfig(
        case=sel.case, case_id=sel.case_id, framework=sel.framework,
        framework_version=sel.framework_version or ABSENT, vendor=vendor.name, hardware=hardware,
        nnodes=sel.nnodes, nproc=sel.nproc, repeat=sel.repeat, data_dir=sel.data_dir, timeout_s=timeout,
        package=package if package != sel.case else ABSENT,
        sources=[base_file, *([base[MODEL_FILE]] if MODEL_FILE in base else []), vendor_shown]
        + ([f"{base_file} ({FUNCTIONAL})"] if sel.functional else []) + ([overrides_file] if sel.overrides else []),
        provenance=provenance, stack_params=stack_params or ABSENT,
        **standard_fields(non_standard), params=params, target=Target.from_json(base["target"], base_file),
        flops_per_sample=None if changed or counted else flops,
        flops_convention=getattr(hooks, "FLOPS_CONVENTION", ABSENT),
        sample=ABSENT if base["sample"] == SAMPLE else base["sample"],
        flops_note=f"the case's FLOPs figure assumes defaults for {', '.join(changed)}" if changed
        else "counted by rank 0 at the run's shape (config.yaml flops_per_sample: counted)" if counted else None,
        flops_counted=list(base["flops_depend_on"]) if counted else ABSENT,
        vendor_info=VendorInfo(**vendor_info(vendor, hardware)))
    return config, []
