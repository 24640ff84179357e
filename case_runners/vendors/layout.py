"""Where a vendor's files are: one definition of the layout of vendor/<vendor>/ (docs/adapting-a-chip.md).

vendor/<vendor>/vendor.yaml, runtime.py, monitor.py, base.yaml (the base suite and the benchmarks' params on this
vendor), operation.yaml and operation_requirements.txt (the operation task's operators and pins),
engines/<compiler>.py, engines/<engine>-requirements.txt (an engine's pins: an inference compiler's or a
generate engine's), docker_image/<framework>/ and, per case,
vendor/<vendor>/cases/<case>/: config_<HW>x<nnodes>x<nproc>.yaml, generate.yaml (the case's generate task),
environment_variables.sh, requirements.txt, <vendor>_requirements.txt, extern/ (trainer adapter, converter, layers),
csrc/setup.py and <stack>/config_<HW>x<nnodes>x<nproc>.yaml (a stack's configs: a built-in stack's,
plan/config/stacks.py, or the vendor's own); the vendor's own stacks, stacks/<name>/stack.yaml and requirements.txt
(vendors/vendor_stacks.py); the vendor's base toolkits, base/toolkits/<benchmark>/toolkit.yaml and its sources
(vendors/toolkits.py).
Stdlib only.
"""

from __future__ import annotations

import re
from pathlib import Path

from case_runners.plan.config.resolved import INFERENCE, OPERATION
from case_runners.plan.config.stacks import PYTORCH, requirements_file, stack_folder

VENDOR_FILE = "vendor.yaml"
RUNTIME_FILE = "runtime.py"
MONITOR_FILE = "monitor.py"
BASE_FILE = "base.yaml"
OPERATION_FILE = "operation.yaml"  # the operation task on this vendor: suite, oplibs, dtypes, shapes per chip
OPERATION_REQUIREMENTS = "operation_requirements.txt"  # its pins (the operator library: flag_gems on nvidia)
GENERATE_FILE = "generate.yaml"  # per case: the params of the case's generate task on this vendor
ENV_FILE = "environment_variables.sh"
EXTERN_DIR = "extern"
ADAPTER_FILE = "trainer_adapter.py"
STACKS_DIR = "stacks"  # the vendor's own stacks: stacks/<name>/
STACK_FILE = "stack.yaml"
STACK_REQUIREMENTS = "requirements.txt"
TOOLKITS_DIR = ("base", "toolkits")  # the vendor's base toolkits: base/toolkits/<benchmark>/
TOOLKIT_FILE = "toolkit.yaml"
ENGINES_DIR = "engines"
ENGINE_REQUIREMENTS = "{engine}-requirements.txt"  # in engines/: the pins a round on that engine needs
# A hardware name (a vendor.yaml hardware key, the <HW> of config files; FlagPerf's names too: BI-V100, 9100, a
# vendor.yaml key written as a YAML string).
HARDWARE_NAME = r"[A-Za-z0-9][A-Za-z0-9_-]*"
HARDWARE = re.compile(rf"^{HARDWARE_NAME}$")
HARDWARE_RULE = "letters, digits, _ and -, starting with a letter or digit, e.g. A100, MLU370, BI-V100, 9100"
# A training config of a vendor case, for one hardware at one scale: config_<HW>x<nnodes>x<nproc>.yaml
CONFIG_NAME = re.compile(rf"^config_(?P<hardware>{HARDWARE_NAME})x(?P<nnodes>[0-9]+)x(?P<nproc>[0-9]+)\.yaml$")


def vendor_dir(root: Path, vendor: str) -> Path:
    return root / "vendor" / vendor


def vendor_engines(root: Path, vendor: str) -> list[str]:
    """The compilers of a vendor: vendor/<vendor>/engines/<compiler>.py."""
    return sorted(p.stem for p in (vendor_dir(root, vendor) / ENGINES_DIR).glob("*.py") if p.stem != "__init__")


def engine_requirements(root: Path, vendor: str, engine: str) -> Path:
    """The pins of a vendor's engine: vendor/<vendor>/engines/<engine>-requirements.txt (may be absent). A generate
    engine other than torch is offered by the vendors that pin it (plan/generate.py)."""
    return vendor_dir(root, vendor) / ENGINES_DIR / ENGINE_REQUIREMENTS.format(engine=engine)


def stacks_dir(root: Path, vendor: str) -> Path:
    return vendor_dir(root, vendor) / STACKS_DIR


def toolkits_dir(root: Path, vendor: str) -> Path:
    return vendor_dir(root, vendor).joinpath(*TOOLKITS_DIR)


def vendor_case_dir(root: Path, vendor: str, case: str) -> Path:
    return vendor_dir(root, vendor) / "cases" / case


def vendor_config_dir(root: Path, vendor: str, case: str, framework: str = PYTORCH) -> Path:
    """Where a vendor case's training configs for a framework are: the case folder (pytorch), or its stack's
    subfolder."""
    folder = vendor_case_dir(root, vendor, case)
    return folder / stack_folder(framework) if stack_folder(framework) else folder


def env_file(root: Path, vendor: str, case: str) -> Path | None:
    """The vendor case's environment_variables.sh, sourced before its ranks start (host and container)."""
    path = vendor_case_dir(root, vendor, case) / ENV_FILE
    return path if path.is_file() else None


def adapter_file(root: Path, vendor: str, case: str) -> Path:
    return vendor_case_dir(root, vendor, case) / EXTERN_DIR / ADAPTER_FILE


def case_requirements(root: Path, vendor: str, case: str, task: str | None,
                      framework: str = PYTORCH, engine: str | None = None) -> list[Path]:
    """The requirements files of a case of `task` (training when None) on `framework`, in install order: the
    standard case's requirements.txt (case_runners/cases/<case>/[inference/]requirements.txt), which
    vendor/<v>/cases/<case>/<v>_requirements.txt replaces when present (a vendor that needs other pins), the
    stack's pins (a built-in stack's, plan/config/stacks.py requirements_file, or the vendor stack's
    stacks/<name>/requirements.txt), then the vendor case's requirements.txt, then the engine's pins
    (engine_requirements) when the config names an engine. The operation task's: the vendor's
    operation_requirements.txt."""
    if task == OPERATION:
        pins = vendor_dir(root, vendor) / OPERATION_REQUIREMENTS
        return [pins] if pins.is_file() else []
    standard = root / "case_runners" / "cases" / case
    if task == INFERENCE:
        standard /= "inference"  # the folder of the case's inference pipeline
    case_dir = vendor_case_dir(root, vendor, case)
    replacement = case_dir / f"{vendor}_requirements.txt"
    found = [replacement if replacement.is_file() else standard / "requirements.txt",
             root / requirements_file(framework), case_dir / "requirements.txt"]
    if framework != PYTORCH:  # a vendor stack's pins, where the framework is one (built-in ones have no such folder)
        found.insert(2, stacks_dir(root, vendor) / framework / STACK_REQUIREMENTS)
    if engine:
        found.append(engine_requirements(root, vendor, engine))
    return [f for f in found if f.is_file()]
