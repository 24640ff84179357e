"""The catalogue document (`perfplay.case_catalogue/1`, what `perfplay cases --json` prints), found with the
discovery each task's planning uses:

- training: the cases (list_cases) and each vendor case folder's config_<HW>x<nnodes>x<nproc>.yaml (CONFIG_NAME), an
  entry per stack the case runs on (pytorch's configs in the folder, a stack's in its <stack>/ subfolder);
- inference: the cases with inference/configurations.yaml, on the vendors where the case's config resolves (with
  the vendor's <vendor>_configurations.yaml, or without one where the vendor has the engine of the case's
  compiler), for every hardware of the vendor's table at 1x1 (an inference round's only scale);
- base: the benchmarks, at the scales of each vendor's base suite (base.yaml, else every one-rank benchmark);
- generate: the cases with generate/config.yaml, on the vendors with the case's generate.yaml (every hardware,
  at 1x1, its default scale).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from case_runners.cases import list_cases
from case_runners.core.errors import ConfigError, PerfplayError
from case_runners.plan.base import base_suite, benchmark_config_path
from case_runners.plan.config.benchmarks import BENCHMARKS
from case_runners.plan.config.resolved import BASE, GENERATE, INFERENCE, OPERATION, TASKS, TRAINING
from case_runners.plan.config.selection import parse_selections
from case_runners.plan.config.stacks import PYTORCH
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.plan.generate import GENERATE_DIR, generate_cases
from case_runners.plan.inference_config import inference_cases, resolve_inference, vendor_overrides_path
from case_runners.plan.layering import frameworks, load_case_base
from case_runners.records.resolved import Target
from case_runners.records.schema import Document, choices
from case_runners.tasks.operation import CASE as OPERATION_CASE
from case_runners.vendors.description import VendorDescription, load_vendor, vendor_names
from case_runners.vendors.layout import (
    CONFIG_NAME,
    GENERATE_FILE,
    OPERATION_FILE,
    vendor_case_dir,
    vendor_config_dir,
    vendor_dir,
)

SCALE = "{nnodes}x{nproc}"
# An inference case has no description of its own: its model is its training case's.
INFERENCE_DESCRIPTION = "The {case} case's model through the inference pipeline (export, compile, evaluate: steps a-g)."
# The first sentence of a description: up to a full stop followed by a capital, a parenthesis or the end.
_SENTENCE = re.compile(r"^(?P<first>.+?[.!?])(?=\s+[A-Z(]|\s*$)", re.S)


@dataclasses.dataclass(kw_only=True)
class HardwareScales(Document):
    hardware: str
    scales: list[str]  # nnodes x nproc: "1x1", "1x8", "2x8", smallest first


@dataclasses.dataclass(kw_only=True)
class VendorConfigs(Document):
    vendor: str
    hardware: list[HardwareScales]  # in the order of the vendor's hardware table


@dataclasses.dataclass(kw_only=True)
class Entry(Document):
    task: str = dataclasses.field(metadata=choices(*TASKS))
    case: str  # a base entry's is the benchmark
    description: str  # the first sentence of the case's description
    target: Target | None  # a training case's; null for the other tasks
    vendors: list[VendorConfigs]  # only the vendors that have configs for it
    framework: str = PYTORCH  # a training entry's stack (plan/config/stacks.py); pytorch for the other tasks


@dataclasses.dataclass(kw_only=True)
class Catalogue(Document):
    SCHEMA = "perfplay.case_catalogue/1"

    vendors: list[str]  # the vendors listed (all, or the one --vendor named)
    entries: list[Entry]  # by task (TASKS' order), then case


def first_sentence(text: Any) -> str:
    flat = " ".join(str(text or "").split())
    match = _SENTENCE.match(flat)
    return match["first"] if match else flat


def _scale_key(scale: str) -> tuple[int, ...]:
    return tuple(int(n) for n in scale.split("x"))


def _configs(vendor: VendorDescription, found: dict[str, set[str]]) -> VendorConfigs | None:
    """The vendor's entry for {hardware: scales}, hardware in its table's order; None when there is none."""
    order = [hw for hw in vendor.hardware if hw in found] + sorted(set(found) - set(vendor.hardware))
    if not order:
        return None
    return VendorConfigs(vendor=vendor.name, hardware=[
        HardwareScales(hardware=hw, scales=sorted(found[hw], key=_scale_key)) for hw in order])


def _everywhere(vendor: VendorDescription) -> dict[str, set[str]]:
    """A hardware-independent vendor file: every hardware of the vendor's table, at 1x1."""
    return {hw: {SCALE.format(nnodes=1, nproc=1)} for hw in vendor.hardware}


def _training(root: Path, case: str, vendor: VendorDescription, framework: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    folder = vendor_config_dir(root, vendor.name, case, framework)
    for path in sorted(folder.glob("config_*.yaml")):
        if match := CONFIG_NAME.match(path.name):
            found.setdefault(match["hardware"], set()).add(SCALE.format(nnodes=int(match["nnodes"]),
                                                                        nproc=int(match["nproc"])))
    return found


def _inference(root: Path, case: str, vendor: VendorDescription) -> dict[str, set[str]]:
    """Where the case's inference config resolves on the vendor; a vendor file that does not resolve is an error."""
    try:
        resolve_inference(case, vendor.name, root)
    except ConfigError:
        if vendor_overrides_path(root, vendor.name, case).is_file():
            raise
        return {}  # the standard config's compiler is not one of the vendor's engines
    return _everywhere(vendor)


def _base(root: Path, benchmark: str, vendor: VendorDescription) -> dict[str, set[str]]:
    suite, errors = parse_selections(base_suite(root, vendor.name), source="suite", task=BASE)
    if errors:
        raise errors[0]
    found: dict[str, set[str]] = {}
    for sel in suite:
        if sel.case == benchmark:
            found.setdefault(sel.hardware or vendor.default_hardware, set()).add(
                SCALE.format(nnodes=sel.nnodes, nproc=sel.nproc))
    return found


OPERATION_DESCRIPTION = ("FlagPerf's 52 single operators: correctness against float64, latency and roofline "
                         "fraction, natively and with the vendor's operator library.")


def _entries(root: Path, vendors: list[VendorDescription]) -> list[Entry]:
    entries = []

    def add(task: str, case: str, description: Any, target: Target | None, found: Any,
            framework: str = PYTORCH) -> None:
        listed = [c for c in (_configs(v, found(v)) for v in vendors) if c]
        entries.append(Entry(task=task, case=case, description=first_sentence(description), target=target,
                             vendors=listed, framework=framework))

    for case in list_cases(root):
        base, shown = load_case_base(case, root)
        for framework in frameworks(base):
            add(TRAINING, case, base.get("description"), Target.from_json(base["target"], shown),
                lambda v, c=case, f=framework: _training(root, c, v, f), framework)
    for case in inference_cases(root):
        add(INFERENCE, case, INFERENCE_DESCRIPTION.format(case=case), None, lambda v, c=case: _inference(root, c, v))
    for name in BENCHMARKS:
        add(BASE, name, load_mapping(benchmark_config_path(root, name), root).get("description"), None,
            lambda v, n=name: _base(root, n, v))
    for case in generate_cases(root):
        config = root / "case_runners" / "cases" / case / GENERATE_DIR / "config.yaml"
        add(GENERATE, case, load_mapping(config, root).get("description"), None,
            lambda v, c=case: _everywhere(v) if (vendor_case_dir(root, v.name, c) / GENERATE_FILE).is_file()
            else {})
    add(OPERATION, OPERATION_CASE, OPERATION_DESCRIPTION, None,
        lambda v: _everywhere(v) if (vendor_dir(root, v.name) / OPERATION_FILE).is_file() else {})
    return entries


def build_catalogue(root: Path, vendor: str | None = None) -> Catalogue:
    """Every case of every task; with `vendor`, only its configs and the cases it has configs for (PerfplayError
    naming the vendors for one that is not)."""
    names = vendor_names(root)
    if vendor is not None and vendor not in names:
        raise PerfplayError(f"--vendor {vendor!r}: no vendor/{vendor}/vendor.yaml (vendors: {', '.join(names)})")
    chosen = [vendor] if vendor is not None else names
    entries = _entries(root, [load_vendor(name, root) for name in chosen])
    if vendor is not None:
        entries = [e for e in entries if e.vendors]
    return Catalogue(vendors=chosen, entries=entries)
