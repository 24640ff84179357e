"""`new-vendor NAME --device D --backend B [--hardware H]`: vendor/<NAME>/, complete and valid, to adapt from.

    vendor.yaml                         device, backend, the hardware table to fill (null peaks: MFU and the base
                                        benchmarks' fractions of peak null)
    base.yaml                           the base suite (every benchmark; collectives on two ranks), params to size
    runtime.py                          the hook's points, commented, with torch's defaults named
    monitor.py                          a monitor that runs (None readings) with the library calls to fill
    docker_image/pytorch/               Dockerfile and pytorch_install.sh (the cpu vendor's pattern)
    cases/<case>/config_<HW>x1x1.yaml   per standard training case: the case's defaults, mutable keys only; a
                                        stack's (cases/<case>/<stack>/config_<HW>x1x1.yaml) per stack it lists
    README.md                           chip, software stack, results beside NVIDIA's, adaptations
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import yaml

from case_runners.cases import code_cases
from case_runners.core.paths import display_path, project_root
from case_runners.plan.config.benchmarks import BENCHMARKS
from case_runners.plan.config.stacks import PYTORCH, stack_of
from case_runners.plan.layering import frameworks, load_case_base
from case_runners.vendors.layout import (
    BASE_FILE,
    HARDWARE,
    HARDWARE_RULE,
    MONITOR_FILE,
    RUNTIME_FILE,
    VENDOR_FILE,
    vendor_config_dir,
    vendor_dir,
)
from case_runners.vendors.runtime import NAME as TORCH_NAME
from case_runners.vendors.scaffold import smallest_selection
from case_runners.vendors.scaffold.writer import (
    ScaffoldError,
    Staging,
    check_name,
    check_root,
    refuse_existing,
    render,
)

RESERVED = ("host",)  # the host monitor's name (case_runners.monitors.loader)
REFERENCE = ("nvidia", "A100")  # the vendor and hardware whose results each case's table shows beside the new ones
STARTER_KEYS = ("batch_size",)  # set in each 1x1 config (at the case's default) when the case allows it
SMOKE_CASE = "digits_cnn"  # the README's example: the default case, which converges anywhere in seconds
INSTALL_SCRIPT = "docker_image/pytorch/pytorch_install.sh"
TORCH_RULE = "lower case letters, digits and _, starting with a letter, e.g. {}"


def _default(value: Any) -> Any:
    """A param's default: the value itself, or `default` of a {default, min, max, ...} spec."""
    return value.get("default") if isinstance(value, dict) else value


def case_config(base: dict[str, Any], case: str, hardware: str, framework: str = PYTORCH) -> str:
    """vendor/<vendor>/cases/<case>/[<stack>/]config_<HW>x1x1.yaml from the case's resolved base
    (plan.layering.load_case_base): the starter keys at their defaults, every key the plan lets a vendor config of
    the framework set (the case's mutable params, the trainer's and the stack's) listed."""
    mutable = [str(key) for key in base.get("mutable") or [] if stack_of(str(key)) in (None, framework)]
    params = base.get("params") or {}
    settings = [f"{key}: {json.dumps(_default(params[key]))}" for key in STARTER_KEYS
                if key in mutable and key in params]
    listed = textwrap.wrap(", ".join(mutable) or "(none)", width=112, initial_indent="#   ",
                           subsequent_indent="#   ")
    shown = case if framework == PYTORCH else f"{case} on the {framework} stack"
    return render("vendor/case_config.yaml.tmpl", case=shown, hardware=hardware, mutable="\n".join(listed),
                  settings="\n".join(settings) or "{}")


def case_results(base: dict[str, Any], case: str, hardware: str) -> str:
    """The README's results section of one case, from its config.yaml."""
    target = base.get("target") or {}
    return render("vendor/results.md.tmpl", case=case, hardware=hardware, metric=target.get("metric", "?"),
                  comparison="≥" if target.get("higher_is_better", True) else "≤",
                  target_value=target.get("value", "?"), reference_hardware=REFERENCE[1])


def base_suite_lines() -> str:
    """base.yaml's suite: every base benchmark at its smallest scale, one YAML list item a line."""
    def item(selection: str | dict[str, Any]) -> str:
        if isinstance(selection, str):
            return selection
        return "{" + ", ".join(f"{key}: {value}" for key, value in selection.items()) + "}"

    return "\n".join(f"  - {item(smallest_selection(name))}" for name in BENCHMARKS)


def monitor_class(name: str) -> str:
    return "".join(word.capitalize() for word in name.split("_")) + "Monitor"


def new_vendor(name: str, device: str, backend: str, hardware: str | None = None,
               root: Path | None = None) -> list[Path]:
    """Write vendor/<name>/ under root (default: this checkout); the files written. ScaffoldError, with nothing
    written, for a name that is not a plain identifier, a device or backend that is not a torch name, or a vendor
    that exists."""
    root = check_root(root or project_root())
    check_name(name, "vendor name")
    if name in RESERVED:
        raise ScaffoldError(f"vendor name '{name}' is reserved (the host monitor's); nothing was written")
    check_name(device, "device", TORCH_NAME, TORCH_RULE.format("cuda, musa, sdaa"))
    check_name(backend, "backend", TORCH_NAME, TORCH_RULE.format("nccl, hccl, mccl"))
    hardware = check_name(hardware or name.upper(), "hardware", HARDWARE, HARDWARE_RULE)
    target = vendor_dir(root, name)
    refuse_existing([target], root, "new-vendor")
    files = vendor_texts(name, device, backend, hardware, root)
    with Staging(root) as stage:
        staged = stage.folder(target)
        for relative, text in files.items():
            stage.write(staged, relative, text, executable=relative == INSTALL_SCRIPT)
        return stage.commit()


def yaml_string(value: str) -> str:
    """`value` as a YAML plain string where it reads as one, else quoted (a hardware name 9100 is a string key)."""
    return value if isinstance(yaml.safe_load(value), str) else json.dumps(value)


def vendor_texts(name: str, device: str, backend: str, hardware: str, root: Path) -> dict[str, str]:
    """The files of vendor/<name>/, relative path: text (import-flagperf fills them further from FlagPerf's
    tree); ScaffoldError when the checkout has no standard case."""
    target = vendor_dir(root, name)
    cases = code_cases(root)  # not the model cases: a model's configs depend on the chip's memory
    if not cases:
        raise ScaffoldError(f"no standard cases in {display_path(root / 'case_runners' / 'cases', root)}; "
                            f"nothing was written")
    bases = {case: load_case_base(case, root)[0] for case in cases}  # mutable: the case's and the trainer's
    values = {"name": name, "NAME": name.upper(), "device": device, "backend": backend, "hardware": hardware}
    first_case = SMOKE_CASE if SMOKE_CASE in cases else cases[0]
    files = {  # relative path: text
        VENDOR_FILE: render("vendor/vendor.yaml.tmpl", **values, hardware_key=yaml_string(hardware)),
        BASE_FILE: render("vendor/base.yaml.tmpl", **values, suite=base_suite_lines()),
        RUNTIME_FILE: render("vendor/runtime.py.tmpl", **values),
        MONITOR_FILE: render("vendor/monitor.py.tmpl", **values, monitor_class=monitor_class(name)),
        "docker_image/pytorch/Dockerfile": render("vendor/Dockerfile.tmpl", **values),
        INSTALL_SCRIPT: render("vendor/pytorch_install.sh.tmpl", **values),
        "README.md": render("vendor/README.md.tmpl", **values, first_case=first_case,
                            hardware_lower=hardware.lower().replace("-", "_"),  # in an Ansible group name: no -
                            reference_hardware=REFERENCE[1],
                            results="\n".join(case_results(bases[case], case, hardware) for case in cases)),
    }
    for case in cases:
        for framework in frameworks(bases[case]):  # pytorch's in the case folder, a stack's in its subfolder
            config_file = vendor_config_dir(root, name, case, framework).relative_to(target) / \
                f"config_{hardware}x1x1.yaml"
            files[str(config_file)] = case_config(bases[case], case, hardware, framework)
    return files
