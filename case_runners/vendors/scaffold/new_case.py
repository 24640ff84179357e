"""`new-case NAME [--metric M] [--target V] [--lower-is-better]`: a standard training case to write from.

    case_runners/cases/<case>/{__init__.py, case.py, config.yaml, data.py, README.md}
    vendor/cpu/cases/<case>/config_CPUx1x1.yaml        so that it runs here, as written
    vendor/nvidia/cases/<case>/config_A100x1x8.yaml    the reference configuration (1x8 first)

As written it is a stand-in that resolves, trains and converges: a two-layer MLP on a synthetic task it can learn,
with `TODO(case author):` where the real model, dataset, evaluator and FLOPs go.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from case_runners.core.paths import display_path, project_root
from case_runners.vendors.layout import VENDOR_FILE, vendor_case_dir, vendor_dir
from case_runners.vendors.scaffold.writer import ScaffoldError, Staging, check_name, check_root, refuse_existing, render

METRIC = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
METRIC_RULE = "letters, digits and _, starting with a letter, e.g. accuracy, acc1, mlm_accuracy"
DEFAULT_METRIC = "accuracy"
DEFAULT_TARGETS = {True: 0.9, False: 0.5}  # the stand-in task reaches both: accuracy >= 0.9, eval_loss <= 0.5
LOCAL = ("cpu", "CPU", 1, 1)          # vendor, hardware, nnodes, nproc: a config that runs on this host
REFERENCE = ("nvidia", "A100", 1, 8)  # the reference configuration of a standard case: NVIDIA at 1x8
CASE_FILES = ("__init__.py", "case.py", "config.yaml", "data.py", "README.md")


def _number(value: float | str, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise ScaffoldError(f"{what} '{value}' is not a finite number; nothing was written")
    return number


def case_files(name: str, metric: str = DEFAULT_METRIC, target: float = DEFAULT_TARGETS[True],
               higher_is_better: bool = True) -> dict[str, str]:
    """The texts new_case writes: CASE_FILES by name, and the two vendor configs as cpu_config.yaml and
    reference_config.yaml."""
    values = {"name": name, "metric": metric, "target": repr(target), "stand_in": "accuracy" if higher_is_better
              else "eval_loss", "higher_is_better": str(higher_is_better).lower(),
              "comparison": "≥" if higher_is_better else "≤", "reference_hardware": REFERENCE[1],
              "local_vendor": LOCAL[0], "local_hardware": LOCAL[1],
              "case_class": "".join(w.capitalize() for w in name.split("_")) + "Case"}
    files = {file: render(f"case/{file}.tmpl", **values) for file in CASE_FILES}
    return {**files, **{config: render(f"case/{config}.tmpl", **values)
                        for config in ("cpu_config.yaml", "reference_config.yaml")}}


def new_case(name: str, metric: str = DEFAULT_METRIC, target: float | str | None = None,
             higher_is_better: bool = True, root: Path | None = None) -> list[Path]:
    """Write the case and its two vendor configs under root (default: this checkout); the files written.
    ScaffoldError, with nothing written, for a name that is not a plain identifier or that any of them has."""
    root = check_root(root or project_root())
    check_name(name, "case name")
    check_name(metric, "metric", METRIC, METRIC_RULE)
    value = _number(DEFAULT_TARGETS[higher_is_better] if target is None else target, "target")
    cases = root / "case_runners" / "cases"
    case_dir = cases / name
    configs = [(vendor_case_dir(root, vendor, name), f"config_{hardware}x{nnodes}x{nproc}.yaml")
               for vendor, hardware, nnodes, nproc in (LOCAL, REFERENCE)]
    for vendor in (LOCAL[0], REFERENCE[0]):
        if not (vendor_dir(root, vendor) / VENDOR_FILE).is_file():
            raise ScaffoldError(f"{display_path(vendor_dir(root, vendor) / VENDOR_FILE, root)} not found: a case "
                                f"gets configs for the vendors {LOCAL[0]} and {REFERENCE[0]}; nothing was written")
    refuse_existing([case_dir, cases / f"{name}.py", *(folder for folder, _ in configs)], root, "new-case")
    files = case_files(name, metric, value, higher_is_better)
    local, reference = files.pop("cpu_config.yaml"), files.pop("reference_config.yaml")
    with Staging(root) as stage:
        staged = stage.folder(case_dir)
        for relative, text in files.items():
            stage.write(staged, relative, text)
        for (folder, config), text in zip(configs, (local, reference)):
            stage.write(stage.folder(folder), config, text)
        return stage.commit()
