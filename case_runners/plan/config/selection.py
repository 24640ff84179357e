"""Case selections: what a run asks for, in any of the forms users write.

Accepted forms of the run's case list (`perfplay_cases`):
- a list of mappings: {case, task, framework, hardware, nnodes, nproc, repeat, data_dir, overrides, timeout_s,
  functional}
  (task: training, the default; inference: the case's inference pipeline, steps a-g; base: a hardware
  microbenchmark, case_runners/tasks/base/)
- FlagPerf's mapping: {"resnet50:pytorch:A100:1:8:3": "/data/imagenet"}

A framework may carry a version as FlagPerf's keys do (`pytorch_1.8`): the framework (`pytorch`) resolves the
case, the version is kept in the resolved config and checked against the host's torch at preflight.
- a list of strings (a case name, or the FlagPerf key without a data dir), or one such string;
- any of these written as JSON or YAML text, as an AWX survey's text field gives it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from case_runners.core.errors import MAX_NAME_CHARS, RUN_VARS_FILE, ConfigError, path_too_long, shown, too_long
from case_runners.plan.config.constraints import make_constraint
from case_runners.plan.config.resolved import INFERENCE, TASKS, TRAINING
from case_runners.plan.config.stacks import stack_folder
from case_runners.plan.config.yaml_io import VALUE_LIMIT, load_yaml

FUNCTIONAL = "functional"  # a selection's key, and the block of a case's config that it applies
FUNCTIONAL_TASKS = (TRAINING, INFERENCE)  # the tasks whose cases declare a functional shape
SELECTION_KEYS = ("case", "task", "framework", "hardware", "nnodes", "nproc", "repeat", "data_dir", "overrides",
                  "timeout_s", FUNCTIONAL)
# A versioned framework: name_version, the version digits and dots (pytorch_1.8, pytorch_2.1.0).
VERSIONED_FRAMEWORK = re.compile(r"(?P<name>.+)_(?P<version>[0-9]+(?:\.[0-9]+)*)")
FORMS = ("a list of cases, a case name, or FlagPerf's {'case:framework:hardware:nnodes:nproc:repeat': data_dir} "
         "mapping; or one of these written as JSON or YAML text")
# The ranges of a selection's numbers (timeout_s also bounds perfplay_case_timeout_s and a case's own timeout_s):
# the controller expands one item per round, and no node has more than 256 devices.
BOUNDS = {name: make_constraint({"type": "int", "min": 1, "max": high}, None, key=name, file=__name__)
          for name, high in (("nnodes", 4096), ("nproc", 256), ("repeat", 1000), ("timeout_s", 7 * 24 * 3600))}


@dataclass
class Selection:
    """One case to run, before its config is resolved."""

    case: str
    source: str                      # where it was given, for messages: "perfplay_cases[0]"
    framework: str = "pytorch"
    hardware: str | None = None      # None: the vendor's default hardware
    nnodes: int = 1
    nproc: int = 1
    repeat: int = 1
    data_dir: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    timeout_s: int | None = None
    task: str = TRAINING
    framework_version: str | None = None  # of a versioned framework key: pytorch_1.8 -> 1.8
    functional: bool = False  # the case's declared functional shape (check-vendor --functional): non-standard

    @property
    def framework_key(self) -> str:
        """The framework as the selection wrote it (pytorch_1.8)."""
        return f"{self.framework}_{self.framework_version}" if self.framework_version else self.framework

    @property
    def config_name(self) -> str:
        return f"config_{self.hardware}x{self.nnodes}x{self.nproc}"

    @property
    def case_id(self) -> str:
        # resnet50_inference_A100x1x1, gemm_base_A100x1x1; a stack's training: llama_deepspeed_CPUx1x2
        infix = f"_{self.task}" if self.task != TRAINING else stack_folder(self.framework) and f"_{self.framework}"
        return f"{self.case}{infix}_{self.hardware}x{self.nnodes}x{self.nproc}"


def parse_selections(raw: Any, source: str = "perfplay_cases",
                     task: str = TRAINING) -> tuple[list[Selection], list[ConfigError]]:
    """Normalise every accepted form into Selections; collect every error instead of stopping at the first.
    `task` is the default of selections that do not name theirs (run var perfplay_task)."""
    items: list[tuple[str, Any]]
    if isinstance(raw, str):
        try:
            raw = _from_text(raw, source)
        except ConfigError as exc:
            return [], [exc]
    if isinstance(raw, str):
        items = [(source, raw)]
    elif isinstance(raw, dict):
        items = [(f"{source}['{key}']", _flagperf_key(key, value)) for key, value in raw.items()]
    elif isinstance(raw, list):
        items = [(f"{source}[{i}]", item) for i, item in enumerate(raw)]
    else:
        return [], [ConfigError(f"must be {FORMS}, not {type(raw).__name__}", key=source, file=RUN_VARS_FILE)]
    if not items:
        return [], [ConfigError("no case selected", key=source, file=RUN_VARS_FILE)]
    selections, errors = [], []
    for where, item in items:
        try:
            selection, number_errors = _one(item, where, task)
        except ConfigError as exc:
            exc.file = exc.file or RUN_VARS_FILE
            errors.append(exc)
            continue
        errors += number_errors
        if selection is not None:
            selections.append(selection)
    return selections, errors


def split_framework(framework: str) -> tuple[str, str | None]:
    """'pytorch_1.8' -> ('pytorch', '1.8'); a framework without a version as it is, with None."""
    match = VERSIONED_FRAMEWORK.fullmatch(framework)
    return (match["name"], match["version"]) if match else (framework, None)


def _from_text(text: str, source: str) -> Any:
    """The selection a string holds, read as JSON or YAML: a list, a mapping or a string (a case name or a FlagPerf
    key); blank text selects nothing. ConfigError when it is not valid JSON or YAML."""
    try:
        data = load_yaml(text, source=f"{RUN_VARS_FILE} ({source})", limit=VALUE_LIMIT)
    except ConfigError as exc:
        raise ConfigError(f"is not valid JSON or YAML ({exc.message}); expected {FORMS}", key=source,
                          file=RUN_VARS_FILE) from None
    if data is None:
        return []
    return data if isinstance(data, (list, dict, str)) else text


def _flagperf_key(key: str, data_dir: Any) -> dict[str, Any]:
    item = _split_key(key)
    item["data_dir"] = data_dir
    return item


def _split_key(key: str) -> dict[str, Any]:
    """'resnet50:pytorch:A100:1:8:3' (or a prefix of it) to a selection mapping."""
    parts = key.split(":")
    if len(parts) > 6 or not parts[0]:
        raise ConfigError(f"{shown(key)} is not of the form case[:framework[:hardware[:nnodes[:nproc[:repeat]]]]]",
                          key="case")
    names = ("case", "framework", "hardware", "nnodes", "nproc", "repeat")
    return {name: part for name, part in zip(names, parts) if part != ""}


def _one(item: Any, where: str, default_task: str) -> tuple[Selection | None, list[ConfigError]]:
    """The selection and the errors of its numbers; ConfigError if it cannot be read. A selection whose scale
    (nnodes, nproc) is out of range is None; one whose repeat or timeout_s is, is still resolved, so the errors
    of its config are reported with them."""
    item = _as_mapping(item, where)
    case, overrides, data_dir = _names_and_paths(item, where)
    task = item.get("task") or default_task
    if task not in TASKS:
        raise ConfigError(f"unknown task {shown(task)}", key=f"{where}.task", allowed=TASKS)
    functional = item.get(FUNCTIONAL, False)
    if not isinstance(functional, bool) or (functional and task not in FUNCTIONAL_TASKS):
        raise ConfigError(f"must be true or false, and true only for a task of {', '.join(FUNCTIONAL_TASKS)}",
                          key=f"{where}.{FUNCTIONAL}", allowed=[True, False])
    numbers, errors = _numbers(item, where)
    if any(exc.key in (f"{where}.nnodes", f"{where}.nproc") for exc in errors):
        return None, errors
    framework, version = split_framework(str(item.get("framework") or "pytorch"))
    return Selection(case=case, source=where, framework=framework, framework_version=version,
                     hardware=str(item["hardware"]) if item.get("hardware") else None, data_dir=data_dir or None,
                     overrides=dict(overrides), task=task, functional=functional, **numbers), errors


def _as_mapping(item: Any, where: str) -> dict[str, Any]:
    """A selection as a mapping of SELECTION_KEYS: a "case:framework:..." string split, a mapping's such case too."""
    if isinstance(item, str):
        try:
            item = _split_key(item)
        except ConfigError as exc:
            raise ConfigError(exc.message, key=f"{where}.case") from None
    elif isinstance(item, dict) and isinstance(item.get("case"), str) and ":" in item["case"]:
        item = {**item, **_split_key(item["case"])}
    if not isinstance(item, dict):
        raise ConfigError(f"must be a mapping or a string, not {type(item).__name__}", key=where)
    unknown = sorted(set(item) - set(SELECTION_KEYS))
    if unknown:
        raise ConfigError(f"unknown key '{unknown[0]}'", key=f"{where}.{unknown[0]}", allowed=SELECTION_KEYS)
    return item


def _names_and_paths(item: dict[str, Any], where: str) -> tuple[str, dict[str, Any], str | None]:
    """(case, overrides, data_dir) of a selection, each of the right type and no name or path too long."""
    case = item.get("case")
    if not isinstance(case, str) or not case:
        raise ConfigError("is required and must be a case name", key=f"{where}.case")
    overrides = item.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise ConfigError("must be a mapping of config keys to values", key=f"{where}.overrides")
    data_dir = item.get("data_dir")
    if data_dir is not None and not isinstance(data_dir, str):
        raise ConfigError("must be a path", key=f"{where}.data_dir")
    for name in ("case", "hardware", "framework"):
        long = too_long(item.get(name), MAX_NAME_CHARS, key=f"{where}.{name}")
        if long:
            raise long
    long = path_too_long(data_dir, key=f"{where}.data_dir")
    if long:
        raise long
    return case, overrides, data_dir


def _numbers(item: dict[str, Any], where: str) -> tuple[dict[str, Any], list[ConfigError]]:
    """nnodes, nproc, repeat and timeout_s of a selection (its defaults where unset, or out of range), and the
    errors of those out of range."""
    numbers: dict[str, Any] = {"nnodes": 1, "nproc": 1, "repeat": 1, "timeout_s": None}  # the defaults
    errors = []
    for name, default in list(numbers.items()):
        value = item.get(name, default)
        if value is None and default is None:
            continue  # timeout_s: the run's or the case's
        try:
            numbers[name] = BOUNDS[name].check(value, key=f"{where}.{name}", file=RUN_VARS_FILE)
        except ConfigError as exc:
            errors.append(exc)
    return numbers, errors
