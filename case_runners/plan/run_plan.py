"""The run plan: every selected case resolved and checked on the controller before any host is touched.

Three steps, each its own function: check_request (the run vars, the results dir, the vendor, the selections),
resolve_cases (each selection into its resolved config, with the runtimes and what the hosts need) and
write_run_dir (results/<run_id>/ with each case's resolved config). make_plan takes all three; the single-host
runner checks this host between the second and the third, so it resolves the cases once.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path
from typing import Any, TypedDict

from case_runners.core import defaults, files
from case_runners.core.errors import RUN_VARS_FILE, ConfigError, PerfplayError, cut, shown
from case_runners.core.paths import RESOLVED_NAME, project_root, results_root
from case_runners.core.run_ids import check_run_id, new_run_id
from case_runners.launch.container.image import BUILD_KEYS, image_spec
from case_runners.plan.base import base_suite, resolve_base_selection, vendor_base
from case_runners.plan.bundle import BUNDLE_NAME, write_bundle
from case_runners.plan.config.parallel import data_parallel_problems
from case_runners.plan.config.resolved import BASE, GENERATE, INFERENCE, OPERATION, TRAINING
from case_runners.plan.config.selection import Selection, parse_selections
from case_runners.plan.generate import resolve_generate_selection, trained_checkpoints
from case_runners.plan.inference import resolve_inference_selection
from case_runners.plan.layering import resolve
from case_runners.plan.operation import resolve_operation_selection
from case_runners.plan.rounds import expand_rounds, host_needs, missing_hosts
from case_runners.plan.run_vars import RunRequest, check_run_vars
from case_runners.records.history_db import default_db, path_problems
from case_runners.records.resolved import ResolvedConfig, Runtime
from case_runners.tasks.operation import CASE as OPERATION_CASE
from case_runners.tasks.training.adapter import check_adapter_source
from case_runners.vendors.description import VendorDescription, load_vendor
from case_runners.vendors.layout import case_requirements


class Bundle(TypedDict):
    """The checkout remote hosts run (perfplay-src.tar), kept with the results."""
    path: str
    sha256: str


class Plan(TypedDict):
    """What make_plan returns (`python -m case_runners plan` prints it as JSON for the playbook)."""
    ok: bool
    errors: list[str]                   # every problem of the request at once
    run_id: str | None                  # None until the run directory exists
    run_dir: str | None
    cases: list[dict[str, Any]]         # each case's resolved config (ResolvedConfig.to_json)
    bundle: Bundle | None
    images: list[dict[str, Any]]        # runtime docker: each framework's image spec
    rounds: list[dict[str, Any]]        # rounds.py: an accepted plan's rounds in run order
    host_needs: dict[str, dict[str, Any]]  # with "hosts" in the request: what each host needs for them
    run_vars: dict[str, Any]            # checked, with their defaults


@dataclasses.dataclass
class CheckedRequest:
    """Step 1: a request's run vars, results dir, vendor and selections, and every problem found so far."""
    run_vars: dict[str, Any]
    errors: list[ConfigError]
    results_dir: Path
    run_id: str | None
    vendor: VendorDescription | None       # None: no vendor to resolve the cases with
    selections: list[Selection]
    suite_file: str | None              # the vendor's base.yaml, where the selections came from its suite
    image: Any                          # request["image"], checked with the runtimes
    bundle: bool


@dataclasses.dataclass
class ResolvedRun:
    """Step 2: the request's cases resolved, before anything is written."""
    request: CheckedRequest
    cases: list[ResolvedConfig]
    images: list[dict[str, Any]]
    errors: list[ConfigError]

    def plan(self) -> Plan:
        """The plan without a run directory: its errors, or an accepted plan's rounds and host needs."""
        run_vars = self.request.run_vars
        plan: Plan = {"ok": not self.errors, "errors": [str(e) for e in self.errors], "run_id": None,
                      "run_dir": None, "cases": [c.to_json() for c in self.cases], "bundle": None,
                      "images": self.images, "rounds": [], "host_needs": {}, "run_vars": run_vars}
        if self.errors:
            return plan
        hosts = run_vars["hosts"]
        plan["rounds"] = expand_rounds(self.cases, hosts or [], run_vars["master_port"])
        plan["host_needs"] = {} if hosts is None else host_needs(plan["rounds"], hosts, self.cases)
        return plan


def make_plan(request: RunRequest | dict[str, Any], *, check: bool = False, root: Path | None = None) -> Plan:
    """Resolve a run request (run_vars.py: its keys): every problem of the request at once, or, for an
    accepted one, its rounds (rounds.py; with "hosts" in the request, what each host needs for them) and its run
    vars, checked, with their defaults.

    With runtime "docker", each case's config names the image of its (vendor, framework) in "runtime", and
    "images" lists them with how to build them (request["image"]: the run var perfplay_image).

    With check=False and no errors, creates results/<run_id>/ and writes each case's resolved config there,
    and with request["bundle"] the checkout remote hosts run (perfplay-src.tar: what ran, kept with the results).
    A run directory that cannot be written completely is removed again: a rejected plan leaves nothing behind.
    """
    root = root or project_root()
    resolved = resolve_cases(check_request(request, root), root)
    return resolved.plan() if check or resolved.errors else write_run_dir(resolved, root)


def check_request(request: RunRequest | dict[str, Any], root: Path) -> CheckedRequest:
    """Step 1: the run vars, the run id, the results dir and history database, the vendor and the selections."""
    run_vars, errors = check_run_vars(request)
    run_id = request.get("run_id") or None
    if run_id is not None:
        try:
            check_run_id(run_id)
        except ConfigError as exc:
            errors.append(exc)
    results_dir = Path(request.get("results_dir") or results_root(root))
    refused = {e.key for e in errors}  # a path too long to look at
    run_vars["history_db"] = None
    if not refused & {"perfplay_results_dir", "perfplay_history_db"}:
        try:
            errors += _results_dir_errors(results_dir, run_id, run_vars["min_free_bytes"])
            run_vars["history_db"], db_errors = _history_db(request.get("history_db"), results_dir)
            errors += db_errors
        except OSError as exc:  # a name longer than the file system's
            errors.append(ConfigError(files.describe_os_error(exc, cut(str(exc.filename or results_dir))),
                                      key="perfplay_results_dir", file=RUN_VARS_FILE))
    vendor = None
    try:
        if not any(e.key == "perfplay_vendor" for e in errors):  # else no vendor to resolve the cases with
            vendor = load_vendor(run_vars["vendor"], root)
    except ConfigError as exc:
        errors.append(ConfigError(exc.message, key="perfplay_vendor", file=RUN_VARS_FILE, allowed=exc.allowed)
                      if exc.key == "vendor" else exc)
    cases_asked, source, suite_file = _cases_asked(request.get("cases"), run_vars["task"], vendor, root, errors)
    selections, selection_errors = parse_selections(cases_asked, source=source, task=run_vars["task"])
    errors += _in_file(selection_errors, suite_file)
    return CheckedRequest(run_vars=run_vars, errors=errors, results_dir=results_dir, run_id=run_id, vendor=vendor,
                          selections=selections, suite_file=suite_file, image=request.get("image"),
                          bundle=bool(request.get("bundle")))


def _cases_asked(cases: Any, task: str, vendor: VendorDescription | None, root: Path,
                 errors: list[ConfigError]) -> tuple[Any, str, str | None]:
    """The selections the run asks for, where they were given and the file they came from: perfplay_cases, or
    where the run names no case the default case, or the vendor's base suite (adding its errors to `errors`)."""
    if cases is not None:
        return cases, "perfplay_cases", None
    if task == OPERATION:
        return [OPERATION_CASE], "perfplay_cases", None
    if task != BASE or vendor is None:
        return defaults.CASE, "perfplay_cases", None
    try:
        data, shown_file = vendor_base(root, vendor.name)
        suite = base_suite(root, vendor.name)
    except ConfigError as exc:
        errors.append(exc)
        return defaults.CASE, "perfplay_cases", None
    if "suite" in data:  # its entries' errors name base.yaml and suite[i]
        return suite, "suite", shown_file
    return suite, f"the base suite of vendor '{vendor.name}'", None


def resolve_cases(checked: CheckedRequest, root: Path) -> ResolvedRun:
    """Step 2: each selection resolved into its config and checked (data parallelism, the vendor's adapter, the
    trained checkpoints a generate case needs, a case selected twice, the hosts), with the runtimes set."""
    vendor, run_vars = checked.vendor, checked.run_vars
    cases, errors = ([], list(checked.errors)) if vendor is None else _configs(checked, vendor, root)
    errors += trained_checkpoints(cases)  # a generate case on this run's trained model: which training saves it
    images, image_errors = _runtimes(cases, run_vars["runtime"], vendor, checked.image, root)
    errors += image_errors
    ids = [c.case_id for c in cases]
    errors += [ConfigError("is selected twice; give each selection a different hardware, nnodes or nproc",
                           key=f"case {cid}") for cid in sorted({i for i in ids if ids.count(i) > 1})]
    if run_vars["hosts"] is not None:
        errors += missing_hosts(cases, run_vars["hosts"])
    return ResolvedRun(request=checked, cases=cases, images=images, errors=errors)


def _configs(checked: CheckedRequest, vendor: VendorDescription,
             root: Path) -> tuple[list[ResolvedConfig], list[ConfigError]]:
    """Each selection's resolved config, and the request's errors with theirs."""
    errors = list(checked.errors)
    cases: list[ResolvedConfig] = []
    adapters_checked: set[str] = set()
    for sel in checked.selections:
        resolver = {INFERENCE: resolve_inference_selection, BASE: resolve_base_selection,
                    GENERATE: resolve_generate_selection, OPERATION: resolve_operation_selection}.get(sel.task,
                                                                                                    resolve)
        config, case_errors = resolver(sel, vendor, root, checked.run_vars["case_timeout_s"])
        errors += _in_file(case_errors, checked.suite_file)
        if config is None:
            continue
        if config.task_name == TRAINING:
            errors += data_parallel_problems(config.params, config.provenance, config.nnodes * config.nproc,
                                             vendor, root)
        if config.task_name == TRAINING and config.case not in adapters_checked:
            adapters_checked.add(config.case)  # the vendor's extern/ adapter, from its source
            errors += [ConfigError(p) for p in check_adapter_source(root, config.vendor, config.case)]
        # The vendor case's pip requirements (also installed into the host venv with the host runtime).
        config.requirements = [str(p.relative_to(root)) for p in
                               case_requirements(root, config.vendor, config.case, config.task_name,
                                                 config.framework, config.engine)]
        cases.append(config)
    return cases, errors


def write_run_dir(resolved: ResolvedRun, root: Path) -> Plan:
    """Step 3, for an accepted plan: create results/<run_id>/ and write each case's resolved config there (and the
    bundle when the request asks for it). A run directory that cannot be written completely is removed again."""
    plan = resolved.plan()
    if resolved.errors:
        return plan
    results_dir = resolved.request.results_dir
    try:
        run_dir = _new_run_dir(results_dir, resolved.request.run_id)
    except (OSError, PerfplayError) as exc:
        cause = files.describe_os_error(exc, results_dir) if isinstance(exc, OSError) else str(exc)
        return _rejected(plan, f"cannot create a run directory: {cause}")
    try:
        for config in resolved.cases:
            case_dir = run_dir / config.case_id
            os.mkdir(case_dir, files.NEW_DIR_MODE)
            config.config_path = str(case_dir / RESOLVED_NAME)
            files.atomic_write_json(case_dir / RESOLVED_NAME, config.to_json())
        if resolved.request.bundle:
            bundle = run_dir / BUNDLE_NAME
            plan["bundle"] = {"path": str(bundle), "sha256": write_bundle(root, bundle)}
    except (OSError, PerfplayError) as exc:
        shutil.rmtree(run_dir, ignore_errors=True)
        cause = files.describe_os_error(exc, run_dir) if isinstance(exc, OSError) else str(exc)
        return _rejected(plan, f"cannot write the run directory ({cause}); nothing was kept")
    written = resolved.plan()  # the configs' paths, in the cases and the rounds
    return {**written, "run_id": run_dir.name, "run_dir": str(run_dir), "bundle": plan["bundle"]}


def _rejected(plan: Plan, message: str) -> Plan:
    """A plan whose run directory could not be made: not ok, with only that error."""
    return {**plan, "ok": False, "bundle": None, "rounds": [], "host_needs": {},
            "errors": [str(ConfigError(message, key="perfplay_results_dir", file=RUN_VARS_FILE))]}


def _in_file(errors: list[ConfigError], file: str | None) -> list[ConfigError]:
    """Errors of selections that came from `file` (a vendor's base.yaml suite) name it instead of the run vars."""
    if file is None:
        return errors
    return [ConfigError(e.message, key=e.key, file=_suite_file(e.file, file), allowed=e.allowed) for e in errors]


def _suite_file(said: str | None, file: str) -> str | None:
    """The file an error of a base.yaml suite entry names: base.yaml for the run vars, "base.yaml (suite[3].overrides)"
    for the entry's overrides (plan/base.py names them "run overrides (suite[3].overrides)")."""
    if said == RUN_VARS_FILE:
        return file
    prefix = "run overrides (suite["
    return f"{file} ({said[len('run overrides ('):-1]})" if said and said.startswith(prefix) else said


def discard_unstarted_run(run_dir: Path) -> bool:
    """Remove a run directory in which no round started (its hosts' preflight failed): a rejected run leaves
    nothing behind. True when removed."""
    run_dir = Path(run_dir)
    if not (run_dir / BUNDLE_NAME).exists() and not list(run_dir.glob(f"*/{RESOLVED_NAME}")):
        return False  # not a run directory the plan made
    if list(run_dir.glob("*/round*")):
        return False
    shutil.rmtree(run_dir, ignore_errors=True)
    return True


def _results_dir_errors(results_dir: Path, run_id: str | None, min_free: int) -> list[ConfigError]:
    """What keeps a run from starting in results_dir: not a directory of ours to write in, a run id used
    before, or less free space than min_free. Checked before anything is written."""
    def error(message: str) -> ConfigError:
        return ConfigError(message, key="perfplay_results_dir", file=RUN_VARS_FILE)

    existing = next((p for p in (results_dir, *results_dir.parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        return [error(f"{existing or results_dir} is not a directory")]
    problem = files.unsafe_reason(results_dir) if existing == results_dir else files.link_reason(results_dir)
    if problem:
        return [error(problem)]
    if not os.access(existing, os.W_OK | os.X_OK):
        return [error(f"{existing} is not writable by this user")]
    if run_id and os.path.lexists(results_dir / run_id):
        return [ConfigError(f"run {shown(run_id)} exists already in {results_dir}: choose another run id or none",
                            key="perfplay_run_id", file=RUN_VARS_FILE)]
    low = files.low_space_reason(existing, min_free)
    return [error(low)] if low else []


def _history_db(value: Any, results_dir: Path) -> tuple[str, list[ConfigError]]:
    """The history database the run is indexed into (default: perfplay.sqlite in the results dir), absolute, and
    what keeps the run from using it: not a path, a directory, another program's database or a newer perfplay's."""
    if value in (None, ""):
        value = str(default_db(results_dir))
    if not isinstance(value, str):
        return str(default_db(results_dir).absolute()), [ConfigError(
            f"expected the path of a file, got {shown(value)}", key="perfplay_history_db", file=RUN_VARS_FILE)]
    path = Path(value).expanduser().absolute()
    return str(path), [ConfigError(p, key="perfplay_history_db", file=RUN_VARS_FILE) for p in path_problems(path)]


def _runtimes(cases: list[ResolvedConfig], runtime: str, vendor: VendorDescription | None, image: Any,
              root: Path) -> tuple[list[dict[str, Any]], list[ConfigError]]:
    """Set each case's runtime; with docker, the image spec of each framework. (images, errors)"""
    if image not in (None, "", {}) and not isinstance(image, dict):
        return [], [ConfigError("must be a mapping of image settings", key="perfplay_image", file=RUN_VARS_FILE,
                                allowed=BUILD_KEYS)]
    if runtime != "docker" or vendor is None:
        for config in cases:
            config.runtime = Runtime(kind="host")
        return [], []
    specs: dict[str, dict[str, Any]] = {}
    for config in cases:
        framework = config.framework
        if framework not in specs:
            try:
                specs[framework] = image_spec(root, vendor, framework, image or {})
            except ConfigError as exc:
                return [], [exc]
        config.runtime = Runtime(kind="docker", image=specs[framework]["ref"],
                                 run=vendor.container.get("run") or {})
    return list(specs.values()), []


def _new_run_dir(results_dir: Path, run_id: str | None) -> Path:
    """Create results/<run_id>/ (mode 0700), by default run<YYYYmmddHHMMSS>-<random>: two runs started in the
    same second get different directories, and an existing directory is never taken over."""
    files.secure_dir(results_dir)
    for _ in range(1 if run_id else 100):
        path = results_dir / (run_id or new_run_id())
        try:
            os.mkdir(path, files.NEW_DIR_MODE)
        except FileExistsError:
            if run_id:
                raise PerfplayError(f"run {shown(run_id)} exists already in {results_dir}") from None
            continue
        files.secure_dir(path)
        return path
    raise PerfplayError(f"no free run id under {results_dir}")
