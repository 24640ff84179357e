"""A FlagPerf vendor as perfplay's: its settings compared with vendor/<vendor>/vendor.yaml where perfplay has the
vendor; where it does not, vendor/<vendor>/ as `new-vendor` writes it (the scaffold's texts), filled with what
FlagPerf's tree knows (vendor_facts.py), TODO(vendor) only where it says nothing. And, per FlagPerf case folder of a
case perfplay has, its set-up files copied (environment_variables.sh, requirements.txt) and its extern adapter's
functions listed with perfplay's points (plan/config/flagperf_names.py ADAPTER_POINTS).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from case_runners.plan.config.flagperf_names import AUTOCAST, COMMAND, adapter_point
from case_runners.vendors.flagperf.report import MAPPED, NONE, SKIPPED, Output, Report
from case_runners.vendors.flagperf.vendor_facts import VendorFacts
from case_runners.vendors.layout import ADAPTER_FILE, ENV_FILE, EXTERN_DIR, MONITOR_FILE, VENDOR_FILE
from case_runners.vendors.scaffold.new_vendor import INSTALL_SCRIPT, vendor_texts, yaml_string

PORT = "to port"  # a FlagPerf adapter function and the perfplay point it becomes, by hand (the signatures differ)
SET_UP_FILES = (ENV_FILE, "requirements.txt")  # copied from <case>-pytorch/config/ to vendor/<v>/cases/<case>/
TODO = "TODO(vendor)"


def _yaml(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=1000).strip().removesuffix("...").strip()


def compare_vendor(report: Report, facts: VendorFacts, vendor: dict[str, Any], written: bool) -> None:
    """Each FlagPerf setting of `facts` against the vendor.yaml `vendor`: perfplay's own (not rewritten), or the
    one this import writes (`written`), which holds the first run settings file's values."""
    file = f"vendor/{facts.name}/{VENDOR_FILE}"
    run = (vendor.get("container") or {}).get("run") or {}
    found: list[tuple[str, Any, Any, str]] = []  # key, FlagPerf's value, perfplay's, where
    if facts.dist_backend:
        found.append(("dist_backend", facts.dist_backend[0], vendor.get("dist_backend"), facts.dist_backend[1]))
    if facts.visible_env:
        found.append(("visible_devices.env", facts.visible_env[0], (vendor.get("visible_devices") or {}).get("env"),
                      facts.visible_env[1]))
    for key, value in facts.container_run.items():
        where = facts.shm_where if key == "shm_size" and facts.shm_where else facts.container_where
        found.append((f"container.run.{key}", value, run.get(key), where))
    for key, theirs, ours, where in found:
        if str(theirs).lower() == str(ours).lower():
            report.add(MAPPED, where, f"-> {file} {key}: {_yaml(theirs)}{'' if written else ' (as it is there)'}")
        else:
            report.add(NONE, where, f"FlagPerf's {key} is {_yaml(theirs)}, {file} has {_yaml(ours)}: change it "
                                    f"there if FlagPerf's is right for this lab")
    for option in facts.unmapped_options:
        report.add(NONE, facts.container_where, f"ACCE_CONTAINER_OPT {option}: container.run has no key for it")


def new_vendor_outputs(report: Report, facts: VendorFacts, root: Path) -> list[Output]:
    """vendor/<vendor>/ for a FlagPerf vendor perfplay lacks: the scaffold's files, filled from FlagPerf's tree."""
    name = facts.name
    folder = f"vendor/{name}"
    hardware = facts.hardware or [name.upper()]
    device = facts.device[0] if facts.device else name
    backend = facts.dist_backend[0] if facts.dist_backend else "gloo"
    texts = vendor_texts(name, device, backend, hardware[0], root)
    told: list[str] = []  # what FlagPerf's tree said, for the report

    def known(key: str, fact: tuple[str, str] | None, what: str) -> str:
        if fact:
            told.append(f"{key}: {fact[0]} ({fact[1]})")
            return f"  # FlagPerf: {fact[1]}"
        report.add(NONE, f"{folder}/{VENDOR_FILE}", f"{key}: FlagPerf's tree says nothing of {what}: {TODO}")
        return f"  # {TODO}: FlagPerf's tree names no {what}"

    text = texts[VENDOR_FILE].replace("written by `python -m case_runners new-vendor`",
                                      f"written by `{COMMAND}` from FlagPerf's training/{name}/")
    text = text.replace(f"\ndevice: {device}\n",
                        f"\ndevice: {device}{known('device', facts.device, 'torch device (torch.<device>)')}\n")
    text = text.replace(f"\ndist_backend: {backend}\n",
                        f"\ndist_backend: {backend}{known('dist_backend', facts.dist_backend, 'dist_backend')}\n")
    if not facts.visible_env:
        report.add(NONE, f"{folder}/{VENDOR_FILE}", f"visible_devices.env: FlagPerf's run settings give {name} no "
                                                    f"ACCE_VISIBLE_DEVICE_ENV_NAME (their VENDOR is another, and "
                                                    f"test_conf.py's comments list none for it): {TODO}")
    else:
        text = re.sub(r"  # TODO\(vendor\): the variable .*?\n  env: null\n",
                      f"  env: {facts.visible_env[0]}  # FlagPerf: {facts.visible_env[1]}\n", text, flags=re.S)
        told.append(f"visible_devices.env: {facts.visible_env[0]}")
    text = _hardware(text, hardware)
    told.append(f"hardware: {', '.join(hardware)} (its config_<HW>x<N>x<P>.py)")
    if facts.base_image:
        text = re.sub(r"    # TODO\(vendor\): your SDK's image .*?\n    base_image: \S+\n",
                      f"    base_image: {facts.base_image[0]}  # FlagPerf: {facts.base_image[1]}\n", text, flags=re.S)
        told.append(f"container.build.base_image: {facts.base_image[0]}")
    if not facts.container_run and not facts.unmapped_options:
        report.add(NONE, f"{folder}/{VENDOR_FILE}", f"container.run: FlagPerf's run settings give {name} no "
                                                    f"ACCE_CONTAINER_OPT or SHM_SIZE (their VENDOR is another, and "
                                                    f"test_conf.py's comments list none for it): {TODO}")
    text = _run_options(text, facts, told)
    monitor = texts[MONITOR_FILE]
    if facts.monitor_tool:
        tool, where = facts.monitor_tool
        monitor = monitor.replace('\nBACKEND = "', f"\n# FlagPerf's monitor ({where}) calls {tool}: read the same "
                                                   f"figures through the library behind it.\nBACKEND = \"", 1)
        told.append(f"monitor: FlagPerf's calls {tool}")
    else:
        report.add(NONE, f"{folder}/{MONITOR_FILE}", f"FlagPerf's tree has no {name}_monitor.py: {TODO}")
    texts[VENDOR_FILE], texts[MONITOR_FILE] = text, monitor
    report.add(MAPPED, f"training/{name}/", f"-> {folder}/ (a new vendor folder, the new-vendor scaffold): "
                                            f"{'; '.join(told)}")
    return [Output(f"{folder}/{relative}", "", {}, text=body, executable=relative == INSTALL_SCRIPT)
            for relative, body in texts.items()]


def _hardware(text: str, names: list[str]) -> str:
    """The scaffold's one hardware entry, once per FlagPerf hardware name, each name a YAML string (9100 quoted, as
    the scaffold writes default_hardware and its key)."""
    head, _, rest = text.partition("\nhardware:\n")
    block, marker, tail = rest.partition("\n# The docker runtime")
    first = f"  {yaml_string(names[0])}:"  # as the scaffold wrote it
    if not block.startswith(first):
        return text
    entries = [f"  {yaml_string(name)}:{block.removeprefix(first)}" for name in names]
    return f"{head}\nhardware:\n{chr(10).join(entries)}{marker}{tail}"


def _run_options(text: str, facts: VendorFacts, told: list[str]) -> str:
    """container.run from FlagPerf's ACCE_CONTAINER_OPT and SHM_SIZE; the scaffold's TODO where they say nothing."""
    run = dict(facts.container_run)
    if "shm_size" in run:
        text = re.sub(r"    shm_size: \S+[^\n]*\n", f"    shm_size: {_yaml(run.pop('shm_size'))}  # FlagPerf: "
                                                     f"{facts.shm_where or facts.container_where}\n", text)
    if not run and not facts.unmapped_options:
        return text
    lines = [f"    # FlagPerf's ACCE_CONTAINER_OPT ({facts.container_where})"]
    lines += [f"    {key}: {_yaml(value)}" for key, value in run.items()]
    lines += [f"    # {TODO}: {option} has no container.run key (docs/flagperf-migration.md)"
              for option in facts.unmapped_options]
    if "devices" not in run:
        lines.append("    devices: []")
    told.append(f"container.run: {_yaml(run)}")
    return re.sub(r"    # TODO\(vendor\): the device nodes .*?\n    devices: \[\]\n", "\n".join(lines) + "\n", text,
                  flags=re.S)


def set_up_outputs(report: Report, case_dir: Path, vendor: str, case: str,
                   shown: Callable[[Path], str]) -> list[Output]:
    """A FlagPerf case folder's environment_variables.sh and requirements.txt, as the vendor case's."""
    outputs = []
    for name in SET_UP_FILES:
        path = case_dir / "config" / name
        if not path.is_file():
            continue
        target = f"vendor/{vendor}/cases/{case}/{name}"
        body = path.read_text(encoding="utf-8", errors="replace")
        shebang = body.split("\n", 1)[0] + "\n" if body.startswith("#!") else ""
        header = f"# From FlagPerf's {shown(path)}, written by {COMMAND}.\n"
        outputs.append(Output(target, "", {}, text=shebang + header + body[len(shebang):]))
        report.add(MAPPED, shown(path), f"-> {target}")
        report.file(shown(path), MAPPED, "a vendor case's set-up file", f"-> {target}")
    return outputs


def list_adapter(report: Report, case_dir: Path, vendor: str, case: str, shown: Callable[[Path], str]) -> None:
    """Each function of FlagPerf's extern/trainer_adapter.py with the perfplay point it becomes (read, not run)."""
    path = case_dir / EXTERN_DIR / ADAPTER_FILE
    if not path.is_file():
        return
    where = shown(path)
    target = f"vendor/{vendor}/cases/{case}/{EXTERN_DIR}/{ADAPTER_FILE}"
    source = path.read_text(encoding="utf-8", errors="replace")
    try:
        tree = ast.parse(source, filename=where)
    except SyntaxError as exc:
        report.add(SKIPPED, where, f"cannot be read as Python ({exc.msg}, line {exc.lineno})")
        return
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        signature = f"{node.name}({', '.join(a.arg for a in node.args.args)})"
        row = adapter_point(node.name)
        if row is None:
            report.add(SKIPPED, f"{where}:{node.lineno}", f"{signature}: not one of FlagPerf's adapter points "
                                                         f"(a helper: port it with the points that call it)")
        elif row.perfplay is None:
            report.add(NONE, f"{where}:{node.lineno}", f"{signature}: refused: {row.note}")
        else:
            report.add(PORT, f"{where}:{node.lineno}", f"FlagPerf's {signature} -> perfplay's {row.note}, in "
                                                      f"{target}")
    for number, line in enumerate(source.splitlines(), 1):
        if AUTOCAST in line and not line.lstrip().startswith("#"):
            row = adapter_point(AUTOCAST)
            assert row is not None
            report.add(PORT, f"{where}:{number}", f"`{line.strip()}` -> perfplay's {row.note}, in {target}")
            break
