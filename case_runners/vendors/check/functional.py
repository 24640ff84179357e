"""check-vendor --functional: every case the vendor adapted, run for real on this host through the same path as a
run (`python -m case_runners run`: plan, host preflight with the runtime hook, launcher, monitors, record).

First the vendor's runtime hook must give its device and have its backend available here (the host preflight's
check). Every round runs the case's declared functional shape (a selection's `functional: true`: the case's
config.yaml `functional:` block, or its inference parameters.yaml's), which bounds its work, and its record must
show it. Training: each case with a config_<HW>x1x1.yaml runs max_steps steps (synthetic data where the case needs
a data dir it was not given), at 1x2 where the vendor's device probe (its hook's device_count()) counts two devices
and the case has a config_<HW>x1x2.yaml, so that the vendor's collective backend runs (a warning says when none
did). Each must leave a valid record, the lifecycle events, a world of that many ranks on the vendor's backend,
with an extern adapter its points loaded by rank 0 and only those recorded as adapted (the ones that ran), and rank
0's dllogger stream (the unified log) with the loss, the ips and the eval metric. Inference: each case with
a <vendor>_configurations.yaml runs steps a-g on the case's small built-in input.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from case_runners.core.paths import display_path
from case_runners.host.check import hook_problems
from case_runners.host.data_check import data_problems
from case_runners.host.devices import list_devices
from case_runners.plan.config.selection import FUNCTIONAL
from case_runners.plan.inference_config import resolve_inference
from case_runners.plan.layering import load_case_base
from case_runners.rank.driver import dllogger
from case_runners.rank.driver import events as ev
from case_runners.records import names
from case_runners.records.round import RoundRecord, find_records
from case_runners.records.schema import RecordError
from case_runners.tasks.training.adapter import adapter_source
from case_runners.vendors.check.findings import Finding, error, ok, warning
from case_runners.vendors.description import load_vendor
from case_runners.vendors.layout import CONFIG_NAME, EXTERN_DIR, VENDOR_FILE, vendor_dir

TRAINING_EVENTS = (ev.INIT_START, ev.INIT_END, ev.TRAIN_START, ev.STEP_END, ev.EVALUATE, ev.TRAIN_END, ev.FINISHED)
INFERENCE_EVENTS = (ev.LAUNCH_INFERENCE, ev.INFERENCE_STEP, ev.FINISHED)
DEFAULT_STEPS = 5
FUNCTIONAL_RUN_TIMEOUT_S = 1800  # the case timeout of each of check-vendor's runs


def adapted_cases(name: str, root: Path, devices: int = 1) -> tuple[list[tuple[str, str, int]], list[str]]:
    """([(case, hardware, nproc)] with a 1x1 training config: nproc 2 where the host has two devices and the case a
    1x2 config for that hardware, [cases] with an inference configuration)."""
    training, inference = [], []
    for folder in sorted((vendor_dir(root, name) / "cases").glob("*/")):
        shapes = [(m["hardware"], int(m["nproc"])) for p in sorted(folder.glob("config_*.yaml"))
                  if (m := CONFIG_NAME.match(p.name)) and m["nnodes"] == "1"]
        ones = [hardware for hardware, nproc in shapes if nproc == 1]
        if ones:
            two = devices >= 2 and (ones[0], 2) in shapes
            training.append((folder.name, ones[0], 2 if two else 1))
        if (folder / f"{name}_configurations.yaml").is_file():
            inference.append(folder.name)
    return training, inference


def _run(root: Path, argv: list[str], results: Path) -> tuple[int, str, RoundRecord | None, Path | None, float]:
    """(exit code, output tail, the round record, its node dir, the seconds it took) of one `case_runners run`."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "case_runners", "run", *argv, "--results-dir", str(results),
                           "--timeout-s", str(FUNCTIONAL_RUN_TIMEOUT_S)], cwd=root, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, check=False)
    said = (done.stderr.strip().splitlines() or [""])[-1]
    records = find_records(results, "*/*/round1")
    if not records:
        return done.returncode, said, None, None, time.monotonic() - started
    nodes = sorted(p for p in records[0].parent.iterdir() if p.is_dir())
    try:
        record = RoundRecord.load(records[0])
    except RecordError as exc:
        return done.returncode, str(exc), None, None, time.monotonic() - started
    return done.returncode, said, record, nodes[0] if nodes else None, time.monotonic() - started


def _events(node: Path | None) -> dict[str, object]:
    """Rank 0's events: {name: the first one's value}."""
    path = node / "rank0.events.jsonl" if node else None
    if path is None or not path.is_file():
        return {}
    found: dict[str, object] = {}
    for event in ev.read_events(path):
        found.setdefault(str(event.get("event")), event.get("value"))
    return found


def check_training(name: str, case: str, hardware: str, root: Path, steps: int, data_dir: str | None,
                   nproc: int = 1) -> list[Finding]:
    where = f"{case} {hardware}x1x{nproc}"
    base, _ = load_case_base(case, root)
    sets = [f"max_steps={steps}", "log_freq=1"]
    if data_problems(case, base["params"], data_dir):
        if "synthetic" not in base["params"]:
            return [warning(where, "skipped: the case needs a data dir (--data-dir CASE=DIR)")]
        sets.append("synthetic=true")
    argv = [case, "--functional", "--vendor", name, "--hardware", hardware, "--nproc", str(nproc),
            *(["--data-dir", data_dir] if data_dir else []), *[a for s in sets for a in ("--set", s)]]
    with tempfile.TemporaryDirectory(prefix="perfplay-check-") as tmp:
        code, said, record, node, seconds = _run(root, argv, Path(tmp))
        if record is None:
            return [error(where, f"left no round record (exit code {code}): {said}")]
        found = []
        status = record.status
        if status not in names.VALID_STATUSES or (status == names.NOT_CONVERGED
                                                   and record.metrics.get("stop_reason") != names.MAX_STEPS):
            found.append(error(where, f"round {status}: {record.reason}"))
        events = _events(node)
        missing = [e for e in TRAINING_EVENTS if e not in events]
        if missing:
            found.append(error(where, f"rank 0 logged no {', '.join(missing)} event"))
        backend = load_vendor(name, root).dist_backend
        found += _world(events.get(ev.SUBMIT_INFO), nproc, backend, where)
        found += _unified_log(node, record, where)
        found += _adapted(name, case, record, events.get(ev.VENDOR_ADAPTER), root, where)
        own = {s.partition("=")[0] for s in sets}  # the check's own, over the shape
        shape = {k: v for k, v in base[FUNCTIONAL].items() if k not in own}
        found += _shape(record, shape, where)
        if not found:
            rate = record.metrics.get("p_train")
            ranks = f"{nproc} ranks on {backend}" if nproc > 1 else "1 rank"
            found.append(ok(where, f"{steps} steps, {ranks}, status {status}, p_train {rate:.1f} samples/s"
                                   + (f", adapted: {', '.join(record.adapted)}" if record.adapted else "")
                                   + f", functional shape: {_shown(shape)}, {seconds:.0f} s"))
        return found


def _shape(record: RoundRecord, shape: dict[str, object], where: str) -> list[Finding]:
    """The round ran the case's declared functional shape: its record's params have its values."""
    wrong = {k: record.params.get(k) for k, v in shape.items() if record.params.get(k) != v}
    return [error(where, f"the round did not run the functional shape: {_shown(wrong)}, not "
                         f"{_shown({k: shape[k] for k in wrong})}")] if wrong else []


def _shown(params: dict[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "none"


def _world(info: object, nproc: int, backend: str, where: str) -> list[Finding]:
    """Rank 0 ran in a world of nproc ranks on the vendor's backend (its SUBMIT_INFO event)."""
    info = info if isinstance(info, dict) else {}
    world = (info.get("world_size"), info.get("dist_backend"))
    if world != (nproc, backend):
        return [error(where, f"rank 0 ran in a world of {world[0]} on {world[1]}, not {nproc} on {backend}")]
    return []


def _unified_log(node: Path | None, record: RoundRecord, where: str) -> list[Finding]:
    """Rank 0's dllogger stream parses and has train.loss, train.ips and the eval metric."""
    path = dllogger.dllogger_path(node, 0) if node else None
    if path is None or not path.is_file():
        return [error(where, f"rank 0 wrote no {dllogger.dllogger_path('', 0).name}")]
    try:
        entries = dllogger.read_dllogger(path)
    except dllogger.DlloggerError as exc:
        return [error(where, str(exc))]
    wanted = (dllogger.TRAIN_LOSS, dllogger.TRAIN_IPS, dllogger.eval_metric(str(record.metrics.get("metric"))))
    missing = [m for m in wanted if not dllogger.metric_series(entries, m)]
    return [error(where, f"rank 0's {path.name} has no {', '.join(missing)} line")] if missing else []


def _adapted(name: str, case: str, record: RoundRecord, loaded: object, root: Path, where: str) -> list[Finding]:
    """Rank 0 loaded the extern adapter with the points it defines (its VENDOR_ADAPTER event), and the record's
    adapted points (those that ran) are among them."""
    if not (vendor_dir(root, name) / "cases" / case / EXTERN_DIR).is_dir():
        return []
    _, points = adapter_source(root, name, case)
    said = loaded.get("points") if isinstance(loaded, dict) else None
    if sorted(said or []) != sorted(points):
        return [error(where, f"rank 0 loaded the adapter with the points {said or 'none'}; the extern adapter "
                             f"defines {sorted(points)}")]
    extra = sorted(set(record.adapted) - set(points))
    if extra:
        return [error(where, f"the record says adapted {extra}, which the extern adapter does not define")]
    return []


def check_inference(name: str, case: str, root: Path, data_dir: str | None) -> list[Finding]:
    where = f"{case} inference"
    argv = [case, "--functional", "--task", names.INFERENCE, "--vendor", name,
            *(["--data-dir", data_dir] if data_dir else [])]
    with tempfile.TemporaryDirectory(prefix="perfplay-check-") as tmp:
        code, said, record, node, seconds = _run(root, argv, Path(tmp))
        if record is None:
            return [error(where, f"left no round record (exit code {code}): {said}")]
        if record.status != names.SUCCESS:
            return [error(where, f"round {record.status}: {record.reason}")]
        events = _events(node)
        missing = [e for e in INFERENCE_EVENTS if e not in events]
        if missing:
            return [error(where, f"rank 0 logged no {', '.join(missing)} event")]
        shape = resolve_inference(case, name, root, functional=True)[0].parameters
        standard = resolve_inference(case, name, root)[0].parameters
        wrong = _shape(record, shape, where)
        if wrong:
            return wrong
        metrics = record.metrics
        return [ok(where, f"steps a-g, compiler {metrics.get('compiler')}, "
                          f"p_inference_core {metrics.get('p_inference_core')}, functional shape: "
                          f"{_shown({k: v for k, v in shape.items() if v != standard[k]})}, {seconds:.0f} s")]


def check_functional(name: str, root: Path, steps: int = DEFAULT_STEPS, cases: list[str] | None = None,
                     data_dirs: dict[str, str] | None = None) -> list[Finding]:
    vendor = load_vendor(name, root)
    shown = display_path(vendor_dir(root, name) / VENDOR_FILE, root)
    problems = hook_problems(name, vendor.device, vendor.dist_backend, root)
    if problems:  # the host preflight of every run would refuse it
        return [error(shown, p.removeprefix(f"{shown}: ")) for p in problems]
    devices = list_devices(name, root)
    training, inference = adapted_cases(name, root, devices["count"])
    data_dirs = data_dirs or {}
    found: list[Finding] = []
    if not training and not inference:
        return [error(display_path(vendor_dir(root, name), root), "has no 1x1 config to run")]
    training = [t for t in training if cases is None or t[0] in cases]
    found += _backend_run(training, devices, vendor.dist_backend, shown)
    for case, hardware, nproc in training:
        found += check_training(name, case, hardware, root, steps, data_dirs.get(case), nproc)
    for case in inference:
        if cases is None or case in cases:
            found += check_inference(name, case, root, data_dirs.get(case))
    return found


def _backend_run(training: list[tuple[str, str, int]], devices: dict, backend: str, shown: str) -> list[Finding]:
    """A warning where no training case runs on two ranks: the vendor's collective backend is then not exercised."""
    if not training or any(nproc > 1 for _, _, nproc in training):
        return []
    if devices["count"] < 2:
        why = f" ({devices['error']})" if devices.get("error") else ""
        return [warning(shown, f"the device probe counts {devices['count']} device(s) here{why}: the cases ran 1x1 "
                               f"only, the backend '{backend}' was not exercised")]
    return [warning(shown, f"no case has a config_<HW>x1x2.yaml: the cases ran 1x1 only, the backend '{backend}' "
                           "was not exercised")]
