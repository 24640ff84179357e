"""A generate selection resolved into the run's resolved config (the same outer shape as a training case's):
case_runners/cases/<case>/generate/config.yaml < vendor/<vendor>/cases/<case>/generate.yaml (optional: `params`
only) < run overrides, each value within its range; then the case's own checks (a prompt longer than the context).

A case offers the task when it has a generate/ folder with config.yaml. Refused here as well: more than one node
(each rank measures its own device: nproc says how many at once), an engine the vendor does not offer (one beside
torch is offered by the vendors that pin it: vendors/layout.py engine_requirements) or on more than one rank, and a
checkpoint "trained" without an earlier training selection of the case in the run that saves a checkpoint of the
same model (trained_checkpoints).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from case_runners.core.errors import RUN_VARS_FILE, ConfigError, shown
from case_runners.core.paths import display_path
from case_runners.plan.config.resolved import GENERATE, TRAINING
from case_runners.plan.config.selection import Selection
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.plan.flat import flat_config, flat_params, selection_problems
from case_runners.plan.layering import choose_hardware
from case_runners.records.resolved import ResolvedConfig
from case_runners.tasks.generate import CASE_MODULE, ENGINES, RANDOM, TORCH, TRAINED
from case_runners.vendors.description import VendorDescription
from case_runners.vendors.layout import GENERATE_FILE, engine_requirements, vendor_case_dir

GENERATE_DIR = "generate"  # case_runners/cases/<case>/generate/: config.yaml and the case's generate modules
SAVE_PARAM = "save_checkpoint"  # the training param that makes a training case save its checkpoint
CONVENTION = ("TTFT = the prefill and the first token; TPOT = each next token (greedy, KV cache); tokens/s = "
              "batch x output_len / generation time")


def generate_cases(root: Path) -> list[str]:
    """The cases that offer the generate task: those with generate/config.yaml."""
    cases = root / "case_runners" / "cases"
    return sorted(p.parent.parent.name for p in cases.glob(f"*/{GENERATE_DIR}/config.yaml"))


def vendor_generate(root: Path, vendor: str, case: str) -> tuple[dict[str, Any], str]:
    """The vendor's params for the case's generate task ({} without its generate.yaml) and its path as shown;
    ConfigError for a key other than params."""
    path = vendor_case_dir(root, vendor, case) / GENERATE_FILE
    shown = display_path(path, root)
    if not path.is_file():
        return {}, shown
    data = load_mapping(path, root)
    for key in data:
        if key != "params":
            raise ConfigError("unknown key", key=key, file=shown, allowed=["params"])
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise ConfigError("must map param names to values", key="params", file=shown)
    return params, shown


def resolve_generate_selection(sel: Selection, vendor: VendorDescription, root: Path,
                               default_timeout_s: int | None = None) -> tuple[ResolvedConfig | None,
                                                                                list[ConfigError]]:
    """(config, errors) for a selection with task: generate."""
    offered = generate_cases(root)
    if sel.case not in offered:
        return None, [ConfigError(f"case '{sel.case}' does not offer the generate task (no case_runners/cases/"
                                  f"{sel.case}/{GENERATE_DIR}/config.yaml)", key=f"{sel.source}.case",
                                  file=RUN_VARS_FILE, allowed=offered)]
    errors = [e for e in [choose_hardware(sel, vendor, root)] if e]
    errors += selection_problems(sel, "the generate task is", "generate")

    def vendor_layer() -> tuple[dict[str, Any], str, str]:
        params, shown = vendor_generate(root, vendor.name, sel.case)
        return params, shown, shown

    config_path = root / "case_runners" / "cases" / sel.case / GENERATE_DIR / "config.yaml"
    flat = flat_params(sel, config_path, root, default_timeout_s, vendor_layer, errors)
    if flat is None:
        return None, errors
    params, provenance = flat.params, flat.provenance
    if not errors:
        module = importlib.import_module(CASE_MODULE.format(case=sel.case))
        errors += [ConfigError(message, key=param, file=provenance[param])
                   for param, message in module.plan_problems(params)]
        checkpoint = str(params.get("checkpoint") or RANDOM)
        if checkpoint not in (RANDOM, TRAINED) and not Path(checkpoint).expanduser().is_absolute() \
                and not sel.data_dir:
            errors.append(ConfigError(f"'{checkpoint}' is relative to data_dir, and the selection has none: give "
                                      "data_dir or an absolute path", key="checkpoint", file=provenance["checkpoint"]))
    if errors:
        return None, errors
    config = flat_config(sel, vendor, GENERATE, flat, CONVENTION, "generate: latencies and tokens/s, no MFU")
    errors = engine_problems(config, sel, root)
    return (None, errors) if errors else (config, [])


def generate_engines(root: Path, vendor: str) -> list[str]:
    """The generate engines a vendor offers: torch, and each other engine it pins."""
    return [e for e in ENGINES if e == TORCH or engine_requirements(root, vendor, e).is_file()]


def engine_problems(config: ResolvedConfig, sel: Selection, root: Path) -> list[ConfigError]:
    """An engine the vendor does not offer, and an engine beside torch on more than one rank (it picks its own
    device), each naming the key."""
    engine, file = str(config.params["engine"]), config.provenance["engine"]
    if engine == TORCH:
        return []
    offered = generate_engines(root, config.vendor)
    if engine not in offered:
        pins = display_path(engine_requirements(root, config.vendor, engine), root)
        return [ConfigError(f"vendor '{config.vendor}' has no generate engine '{engine}' (a vendor offers it by "
                            f"pinning it: {pins})", key="engine", file=file, allowed=offered)]
    if config.nproc != 1:
        return [ConfigError(f"the {engine} engine measures one device per round (it picks its device itself); "
                            f"{config.case_id} has nproc {config.nproc}", key=f"{sel.source}.nproc",
                            file=RUN_VARS_FILE, allowed=[1])]
    return []


def trained_checkpoints(cases: list[ResolvedConfig]) -> list[ConfigError]:
    """Name, in each generate config whose checkpoint is "trained", the training case whose checkpoint it loads:
    the last training selection of the case before it in the run with the same model params. An error naming the
    key when there is none, or when that training does not save its checkpoint."""
    errors = []
    for at, config in enumerate(cases):
        if config.task_name != GENERATE or config.params.get("checkpoint") != TRAINED:
            continue
        module = importlib.import_module(CASE_MODULE.format(case=config.case))
        wanted = {key: config.params.get(key) for key in module.SHAPE_PARAMS}
        said = ", ".join(f"{key} {shown(value)}" for key, value in wanted.items())
        same = getattr(module, "shape_params", dict)  # the case's own comparison (a model named by an alias)
        trainings = [c for c in cases[:at] if c.task_name == TRAINING and c.case == config.case
                     and same({key: c.params.get(key) for key in wanted}) == same(wanted)]
        if not trainings:
            errors.append(ConfigError(
                f"'trained' loads the checkpoint of this run's earlier {config.case} training selection of {said}, "
                f"with {SAVE_PARAM}: true; {config.case_id} has none before it", key="checkpoint",
                file=config.provenance.get("checkpoint", config.case_id)))
            continue
        training = trainings[-1]
        if training.params.get(SAVE_PARAM) is not True:
            errors.append(ConfigError(
                f"{config.case_id} loads the checkpoint {training.case_id} saves, and it saves none: set "
                f"{SAVE_PARAM}: true in its overrides", key=SAVE_PARAM,
                file=training.provenance.get(SAVE_PARAM, f"case {training.case_id}")))
            continue
        config.checkpoint_case = training.case_id
    return errors
