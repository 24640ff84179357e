"""What check-vendor reads without running anything: the files of the vendor folder layout, vendor.yaml, the runtime
hook, the config file names against the hardware table, every config resolved (vendor-mutable keys only), the base
suite and params of base.yaml resolved, the base toolkits' toolkit.yaml, the README's sections, the engines'
InferModel contract and the extern adapters' points."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from case_runners.cases import case_package, list_cases
from case_runners.core.errors import ConfigError
from case_runners.core.paths import display_path
from case_runners.launch.env_file import syntax_problem
from case_runners.plan.base import base_suite, vendor_base
from case_runners.plan.config.resolved import BASE, GENERATE, OPERATION
from case_runners.plan.config.selection import parse_selections
from case_runners.plan.config.stacks import PYTORCH, STACKS
from case_runners.plan.generate import generate_cases
from case_runners.plan.inference_config import inference_cases, note_warnings
from case_runners.plan.layering import frameworks, load_case_base
from case_runners.plan.run_plan import make_plan
from case_runners.tasks.operation import CASE as OPERATION_CASE
from case_runners.tasks.training.adapter import adapter_source
from case_runners.vendors.check.findings import Finding, error, ok, warning
from case_runners.vendors.description import VendorDescription, load_vendor, vendor_names
from case_runners.vendors.layout import (
    ADAPTER_FILE,
    BASE_FILE,
    CONFIG_NAME,
    ENV_FILE,
    EXTERN_DIR,
    GENERATE_FILE,
    MONITOR_FILE,
    OPERATION_FILE,
    STACK_FILE,
    TOOLKIT_FILE,
    VENDOR_FILE,
    adapter_file,
    stacks_dir,
    toolkits_dir,
    vendor_dir,
)
from case_runners.vendors.plugin_source import Point, source_arity
from case_runners.vendors.scaffold import README_SECTIONS, missing_sections, smallest_selection
from case_runners.vendors.toolkits import load_toolkit, toolkit_names
from case_runners.vendors.vendor_stacks import load_stack, stack_names, stacks_for_case

README = "README.md"
REQUIRED = (VENDOR_FILE, README, MONITOR_FILE, "docker_image/pytorch/Dockerfile",
            "docker_image/pytorch/pytorch_install.sh")
ENGINE_POINTS = (Point("__init__", ("self", "config", "onnx_path", "model"), "compile once (not timed)"),
                 Point("__call__", ("self", "inputs"), "(outputs, foo_time)"))


def case_files(vendor: str) -> tuple[str, ...]:
    """The files a vendor case folder may hold besides its config_<HW>x<N>x<P>.yaml files."""
    return (ENV_FILE, "requirements.txt", f"{vendor}_requirements.txt", f"{vendor}_configurations.yaml", GENERATE_FILE,
            EXTERN_DIR, "csrc", README)


def check_structure(name: str, root: Path) -> list[Finding]:
    folder = vendor_dir(root, name)
    shown = display_path(folder, root)
    if not (folder / VENDOR_FILE).is_file():
        return [error(shown, f"no {VENDOR_FILE}: not a vendor (vendors: {', '.join(vendor_names(root))})")]
    found = [error(f"{shown}/{rel}", "is missing (the vendor folder layout: docs/adapting-a-chip.md)")
             for rel in REQUIRED if not (folder / rel).is_file()]
    try:
        vendor = load_vendor(name, root)
    except ConfigError as exc:
        return [*found, error(exc.file or f"{shown}/{VENDOR_FILE}", str(exc).removeprefix(f"{exc.file}: "))]
    found.append(ok(f"{shown}/{VENDOR_FILE}",
                    f"device {vendor.device}, backend {vendor.dist_backend}, hardware "
                    f"{', '.join(vendor.hardware)}; runtime.py's source fits the contract"))
    found += _readme(folder / README, root)
    found += _base(name, root)
    found += _toolkits(name, root)
    found += _operation(name, vendor, root)
    for engine in sorted((folder / "engines").glob("*.py")):
        found += _engine(engine, root)
    cases = sorted(p for p in (folder / "cases").iterdir() if p.is_dir()) if (folder / "cases").is_dir() else []
    if not cases:
        found.append(error(f"{shown}/cases", "adapts no case: add vendor/<vendor>/cases/<case>/config_<HW>x1x1.yaml"))
    found += _vendor_stacks(name, root)
    for case in cases:
        found += _case(name, vendor, case, root)
    return found


def _vendor_stacks(vendor: str, root: Path) -> list[Finding]:
    """The vendor's own stacks (vendors/vendor_stacks.py): each stack.yaml loads (its log parser a built-in one or a
    file of its folder defining the parser function), and the cases it lists exist."""
    found: list[Finding] = []
    for name in stack_names(root, vendor):
        shown = display_path(stacks_dir(root, vendor) / name / STACK_FILE, root)
        try:
            stack = load_stack(root, vendor, name)
        except ConfigError as exc:
            found.append(error(exc.file or shown, str(exc).removeprefix(f"{exc.file}: ")))
            continue
        unknown = [case for case in stack.cases if case not in list_cases()]
        if unknown:
            found.append(error(shown, f"key 'cases': unknown case '{unknown[0]}' (allowed: {', '.join(list_cases())})"))
            continue
        pins = " and its requirements.txt" if stack.requirements else ""
        parser = f"; its log read by the {stack.log_parser} parser" if stack.log_parser else ""
        found.append(ok(shown, f"runs {', '.join(stack.cases)}: {' '.join(stack.command)}{pins}; params "
                               f"{', '.join(stack.params) or 'none'}{parser}"))
    return found


def _readme(path: Path, root: Path) -> list[Finding]:
    if not path.is_file():
        return []
    missing = missing_sections(path.read_text(encoding="utf-8"), README_SECTIONS)
    shown = display_path(path, root)
    return [error(shown, f"has no section '{s}' (the vendor README: docs/adapting-a-chip.md)") for s in missing] or \
        [ok(shown, f"has the sections {', '.join(README_SECTIONS)}")]


def _base(vendor: str, root: Path) -> list[Finding]:
    """base.yaml: its keys and params' benchmarks (plan.base.vendor_base), then the base suite resolved as the base
    task resolves it, and the params of each benchmark the suite does not run resolved at its smallest scale. Without
    the file, the suite is every one-rank benchmark at its defaults: resolved too."""
    shown = display_path(vendor_dir(root, vendor) / BASE_FILE, root)
    try:
        data, _ = vendor_base(root, vendor)
    except ConfigError as exc:
        return [error(shown, _in_base(str(exc), shown))]
    suite_is = "its suite" if "suite" in data else "absent: the base suite, every one-rank benchmark at its defaults,"
    plan = make_plan({"vendor": vendor, "task": BASE}, check=True, root=root)
    found = [error(shown, _in_base(e, shown) if "suite" in data else f"{suite_is} does not resolve: {e}")
             for e in plan["errors"]]
    suite, _ = parse_selections(base_suite(root, vendor), source="suite", task=BASE)
    unrun = [name for name in data.get("params") or {} if name not in {sel.case for sel in suite}]
    if unrun:
        params = make_plan({"vendor": vendor, "task": BASE, "cases": [smallest_selection(n) for n in unrun]},
                           check=True, root=root)
        found += [error(shown, _in_base(e, shown)) for e in params["errors"]]
    if found:
        return found
    also = f"; the params of {', '.join(unrun)} too" if unrun else ""
    return [ok(shown, f"{suite_is} resolves ({', '.join(c['case_id'] for c in plan['cases'])}){also}")]


def _toolkits(vendor: str, root: Path) -> list[Finding]:
    """The vendor's base toolkits (vendors/toolkits.py): each folder a base benchmark's, its toolkit.yaml loads
    (keys, unit and peak, argv lists and their placeholders, the sources they name)."""
    found: list[Finding] = []
    for name in toolkit_names(root, vendor):
        shown = display_path(toolkits_dir(root, vendor) / name / TOOLKIT_FILE, root)
        try:
            toolkit = load_toolkit(root, vendor, name)
        except ConfigError as exc:
            found.append(error(exc.file or shown, str(exc).removeprefix(f"{exc.file}: ")))
            continue
        built = f"built with {toolkit.build[0]}" if toolkit.build else "nothing to build"
        found.append(ok(shown, f"{name} toolkit: {toolkit.metric} ({toolkit.unit}); {built}; runs per "
                               f"{toolkit.runs_on} (--set mode=toolkit or both)"))
    return found


def _operation(vendor: str, info: VendorDescription, root: Path) -> list[Finding]:
    """operation.yaml, where the vendor has one: the operation task resolved on each hardware of the vendor (an error
    of the file, the same on each, once)."""
    path = vendor_dir(root, vendor) / OPERATION_FILE
    if not path.is_file():
        return []
    shown = display_path(path, root)
    problems: dict[str, None] = {}
    for hardware in info.hardware:
        plan = make_plan({"vendor": vendor, "task": OPERATION, "cases": [{"case": OPERATION_CASE,
                                                                          "hardware": hardware}]},
                         check=True, root=root)
        problems.update(dict.fromkeys(_in_base(e, shown) for e in plan["errors"]))
    return [error(shown, p) for p in problems] or [ok(shown, f"the operation task resolves on "
                                                           f"{', '.join(info.hardware)}")]


def _in_base(message: str, shown: str) -> str:
    """A plan error about base.yaml without the file's name (the finding names it): "params.gemm: key ..." for
    "vendor/x/base.yaml (params.gemm): key ..."."""
    match = re.match(rf"^{re.escape(shown)}(?: \((?P<part>[^)]*)\))?: ", message)
    if not match:
        return message
    rest = message[match.end():]
    return f"{match['part']}: {rest}" if match["part"] else rest


def _engine(path: Path, root: Path) -> list[Finding]:
    """An engine: one class InferModel whose __init__(config, onnx_path, model) and __call__(inputs) the inference
    pipeline calls."""
    shown = display_path(path, root)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=shown)
    except SyntaxError as exc:
        return [error(shown, f"line {exc.lineno}: {exc.msg}")]
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "InferModel"]
    if not classes:
        return [error(shown, "defines no class InferModel (the engine contract: docs/adapting-a-chip.md)")]
    methods = {n.name: n for n in classes[0].body if isinstance(n, ast.FunctionDef)}
    problems = []
    for point in ENGINE_POINTS:
        node = methods.get(point.name)
        wrong = source_arity(node, point) if node else "is not defined"
        if wrong:
            problems.append(error(shown, f"InferModel.{point.name} {wrong}"))
    return problems or [ok(shown, "InferModel(config, onnx_path, model) and __call__(inputs)")]


def _case(vendor: str, info: VendorDescription, folder: Path, root: Path) -> list[Finding]:
    shown = display_path(folder, root)
    # a case may offer only its generate task, or its inference task
    known = sorted({*list_cases(), *generate_cases(root), *inference_cases(root)})
    if folder.name not in known:
        return [error(shown, f"unknown case '{folder.name}' (allowed: {', '.join(known)})")]
    found: list[Finding] = []
    allowed = case_files(vendor)
    for path in sorted(folder.iterdir()):
        match = CONFIG_NAME.match(path.name)
        if match:
            found += _config(vendor, info, folder.name, path, match, root)
        elif path.is_dir() and (path.name in STACKS or path.name in stack_names(root, vendor)):
            found += _stack_configs(vendor, info, folder.name, path, root)
        elif path.name.startswith("config_"):
            found.append(error(display_path(path, root), "is not named config_<HW>x<nnodes>x<nproc>.yaml"))
        elif path.name not in allowed and not path.name.startswith("."):
            found.append(warning(display_path(path, root), f"is not a file perfplay reads (known: config_*.yaml, "
                                                           f"{', '.join(allowed)})"))
    if (folder / f"{vendor}_configurations.yaml").is_file():
        found += _resolves(root, {"vendor": vendor, "task": "inference", "cases": [folder.name]},
                           display_path(folder / f"{vendor}_configurations.yaml", root))
    if (folder / GENERATE_FILE).is_file():
        found += _resolves(root, {"vendor": vendor, "task": GENERATE, "cases": [folder.name]},
                           display_path(folder / GENERATE_FILE, root))
    if (folder / EXTERN_DIR).is_dir():
        found += _adapter(vendor, folder.name, root)
    if (folder / ENV_FILE).is_file():
        found += _env_file(folder / ENV_FILE, root)
    return found


def _env_file(path: Path, root: Path) -> list[Finding]:
    """environment_variables.sh parses in bash (bash -n: checked, not run); a run sources it before the ranks."""
    shown = display_path(path, root)
    problem = syntax_problem(path)
    return [error(shown, problem)] if problem else [ok(shown, "parses in bash (bash -n)")]


def _stack_configs(vendor: str, info: VendorDescription, case: str, folder: Path, root: Path) -> list[Finding]:
    """A built-in stack's subfolder of a vendor case: its config_<HW>x<N>x<P>.yaml files, each resolved on the stack,
    where the case lists the stack in its config.yaml."""
    shown = display_path(folder, root)
    stacks = frameworks(load_case_base(case, root)[0])[1:] if case in list_cases() else []
    if folder.name not in stacks and folder.name in stack_names(root, vendor):  # the vendor's own
        try:
            stacks.extend(stacks_for_case(root, vendor, case, case_package(case)))
        except ConfigError:  # _vendor_stacks names it
            return []
    if folder.name not in stacks:
        return [error(shown, f"case '{case}' does not run on the {folder.name} stack (its config.yaml stacks: "
                             f"{', '.join(stacks) or 'none'})")]
    found: list[Finding] = []
    for path in sorted(folder.iterdir()):
        match = CONFIG_NAME.match(path.name)
        if match:
            found += _config(vendor, info, case, path, match, root, folder.name)
        elif not path.name.startswith("."):
            found.append(error(display_path(path, root), "is not named config_<HW>x<nnodes>x<nproc>.yaml (a stack's "
                                                         "folder holds its configs only)"))
    return found or [warning(shown, f"holds no config_<HW>x<nnodes>x<nproc>.yaml: the {folder.name} stack has no "
                                    f"config here")]


def _config(vendor: str, info: VendorDescription, case: str, path: Path, match: re.Match, root: Path,
            framework: str = PYTORCH) -> list[Finding]:
    shown = display_path(path, root)
    hardware, nnodes, nproc = match["hardware"], int(match["nnodes"]), int(match["nproc"])
    if hardware not in info.hardware:
        return [error(shown, f"hardware '{hardware}' is not in vendor.yaml's hardware table "
                             f"(allowed: {', '.join(info.hardware)})")]
    if nnodes < 1 or nproc < 1:
        return [error(shown, "nnodes and nproc must be at least 1")]
    selection = {"case": case, "framework": framework, "hardware": hardware, "nnodes": nnodes, "nproc": nproc}
    return _resolves(root, {"vendor": vendor, "cases": [selection]}, shown)


def _resolves(root: Path, request: dict, shown: str) -> list[Finding]:
    plan = make_plan(request, check=True, root=root)
    if plan["errors"]:
        return [error(shown, e) for e in plan["errors"]]
    config = plan["cases"][0]
    said = [warning(shown, w.removeprefix(f"{shown}: ")) for w in note_warnings(config.get("notes"))]
    return [*said, ok(shown, f"resolves ({config['case_id']}, vendor-mutable keys only)")]


def _adapter(vendor: str, case: str, root: Path) -> list[Finding]:
    path = adapter_file(root, vendor, case)
    shown = display_path(path, root)
    if not path.is_file():
        return [warning(display_path(path.parent, root),
                        f"has no {ADAPTER_FILE}: nothing of it runs")]
    problems, points = adapter_source(root, vendor, case)
    if problems:
        return [error(shown, p.removeprefix(f"{shown}: ")) for p in problems]
    return [ok(shown, f"adapts {', '.join(points) or 'nothing'}")]
