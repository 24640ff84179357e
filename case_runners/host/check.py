"""The host preflight in one process: Python, devices, data dirs, results dir, the collectives' network interface
and the master port of one host.

Each problem is a sentence naming the key and the value at fault; the caller prefixes the host.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import itertools
import json
import os
import platform
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from case_runners.core import files
from case_runners.core.errors import PerfplayError
from case_runners.core.netutil import bind_tcp
from case_runners.core.paths import display_path, project_root
from case_runners.host.data_check import check_data, check_inference_files
from case_runners.host.devices import list_devices
from case_runners.plan.config.resolved import TRAINING
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.schema import ABSENT
from case_runners.vendors.calls import bounded
from case_runners.vendors.description import load_vendor
from case_runners.vendors.layout import RUNTIME_FILE, adapter_file, vendor_dir
from case_runners.vendors.runtime import VendorRuntime

MIN_PYTHON = (3, 10)
# A passed runtime probe of a CPU-backed vendor, remembered per venv (runtime_probe_file): the next host check with
# the same Python, installed distributions, hook and vendor keys answers without importing torch.
PROBE_FILE = "perfplay-runtime-probe.json"
PROBE_FILE_ENV = "PERFPLAY_RUNTIME_PROBE_FILE"
REQUEST_KEYS = ("vendor", "nproc", "cases", "device_count", "master_port", "master_addr", "results_dir",
                "min_free_bytes", "nic")


def check_python() -> list[str]:
    if sys.version_info[:2] < MIN_PYTHON:
        return [f"Python {platform.python_version()} ({sys.executable}) is older than "
                f"{'.'.join(map(str, MIN_PYTHON))} (host var perfplay_venv)"]
    return []


def check_devices(vendor: str, nproc: int, device_count: int | None) -> tuple[dict[str, Any], list[str]]:
    if nproc <= 0:
        return {}, []
    if device_count is not None:
        found: dict[str, Any] = {"count": int(device_count), "source": "host var perfplay_device_count"}
    else:
        found = {**list_devices(vendor), "source": "discovered"}
    if found["count"] >= nproc:
        return found, []
    why = f" ({found['error']})" if found.get("error") else ""
    return found, [f"a round needs nproc={nproc} {vendor} devices, the host has {found['count']}{why} "
                   f"({found['source']})"]


def adapter_problems(config: ResolvedConfig, root: Path | None = None) -> list[str]:
    """A training case's vendor adapter (extern/trainer_adapter.py) that does not import here or breaks the
    contract; imported after the vendor hook's prepare(), as the rank imports it, in a child process under the
    vendor-call timeout (vendor_calls.bounded)."""
    if config.task_name != TRAINING:
        return []
    from case_runners.tasks.training.adapter import load_adapter  # stdlib at import; torch only in the vendor's files

    def load(note: Callable[[str], None]) -> bool:
        info = config.vendor_info
        runtime = VendorRuntime(config.vendor, info.device, info.dist_backend, root)
        runtime.on_call = note
        runtime.prepare()
        note(f"{shown}: import")
        return load_adapter(config.vendor, config.case, root) is not None

    shown = display_path(adapter_file(root or project_root(), config.vendor, config.case), root)
    try:
        bounded(load, f"{shown}: import")
    except PerfplayError as exc:
        return [str(exc)]
    return []


def hook_problems(vendor: str, device: str, dist_backend: str, root: Path | None = None) -> list[str]:
    """The vendor's runtime hook fails in this Python, or torch cannot make its device or does not have its
    backend. Run in a child process under the vendor-call timeout (vendor_calls.bounded): a hook call that hangs is
    a problem naming the file and the call."""
    def check(note: Callable[[str], None]) -> list[str]:
        runtime = VendorRuntime(vendor, device, dist_backend, root)
        runtime.on_call = note
        return runtime.check()

    try:
        shown = display_path(vendor_dir(root or project_root(), vendor) / RUNTIME_FILE, root)
        return bounded(check, f"{shown}: loading it")
    except PerfplayError as exc:
        return [str(exc)]


def runtime_problems(config: ResolvedConfig, root: Path | None = None) -> list[str]:
    """What keeps a case's ranks from running in this Python (check-runtime): its vendor's hook_problems, or the
    case's vendor adapter does not import."""
    info = config.vendor_info
    return hook_problems(config.vendor, info.device, info.dist_backend, root) or adapter_problems(config, root)


def check_runtime(vendor: str, cases: list[ResolvedConfig]) -> list[str]:
    """hook_problems of the vendor (skipped where a passed probe with the same probe_key is remembered), then
    adapter_problems of each case that runs in this Python (host runtime; the docker runtime checks in the
    container, before the ranks start)."""
    here = [c for c in cases if c.runtime_kind == "host"]
    if not here:
        return []
    info = load_vendor(vendor)
    key = probe_key(vendor, info.device, info.dist_backend)
    if key is None or not _probed(key):
        problems = hook_problems(vendor, info.device, info.dist_backend)
        if problems:
            return problems
        if key is not None:
            _remember_probe(key)
    adapters = {c.case: c for c in here}  # each case's adapter once
    return [p for config in adapters.values() for p in adapter_problems(config)]


def runtime_probe_file() -> Path | None:
    """Where a passed probe is remembered: $PERFPLAY_RUNTIME_PROBE_FILE, else PROBE_FILE in this Python's venv;
    None (probe every time) in a Python that is not a venv's."""
    if os.environ.get(PROBE_FILE_ENV):
        return Path(os.environ[PROBE_FILE_ENV])
    return Path(sys.prefix) / PROBE_FILE if sys.prefix != sys.base_prefix else None


def probe_key(vendor: str, device: str, dist_backend: str, root: Path | None = None) -> str | None:
    """A digest of everything a passed hook_problems of a CPU-backed vendor depends on: this Python, every installed
    distribution's version (torch and the hook's IMPORTS among them), the hook's source and the vendor's device and
    backend. None for any other device: it can be lost between runs, so it is probed every time."""
    if device != "cpu":
        return None
    hook = vendor_dir(root or project_root(), vendor) / RUNTIME_FILE
    installed = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    parts = [sys.executable, platform.python_version(), vendor, device, dist_backend,
             hook.read_text(encoding="utf-8") if hook.is_file() else "", *installed]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _probed(key: str) -> bool:
    path = runtime_probe_file()
    try:
        return path is not None and json.loads(files.read_text_nofollow(path)).get("key") == key
    except (OSError, ValueError, AttributeError):
        return False  # none yet, or unreadable: probe


def _remember_probe(key: str) -> None:
    path = runtime_probe_file()
    if path is None:
        return
    try:
        files.atomic_write_json(path, {"key": key, "python": sys.executable})
    except (OSError, PerfplayError):
        pass  # a venv this user cannot write in: the next run probes again


def _release(version: str) -> tuple[int, ...]:
    """The leading numbers of a version: '2.13.0+cpu' -> (2, 13, 0)."""
    numbers = []
    for part in version.split("."):
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            break
        numbers.append(int(digits))
        if digits != part:
            break
    return tuple(numbers)


def framework_warnings(cases: list[ResolvedConfig]) -> list[str]:
    """The cases that run in this Python (host runtime) whose framework key names a torch version (pytorch_1.8)
    that is not this Python's torch, compared on major.minor. Warnings: the cases still run on the torch there is."""
    wanted = [c for c in cases if c.runtime_kind == "host" and c.framework == "pytorch"
              and c.framework_version is not ABSENT]
    if not wanted:
        return []
    try:
        have = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        have = None
    found = []
    for config in wanted:
        want = str(config.framework_version)
        if have is None or _release(have)[:2] != _release(want)[:2]:
            torch = f"torch {have}" if have else "no torch"
            found.append(f"case {config.case_id} asks for pytorch_{want} (perfplay_cases), this host has {torch} "
                         f"({sys.executable}): its results are for the torch it ran on")
    return found


def check_master_port(addr: str, port: int) -> tuple[int | None, list[str]]:
    """Port 0: pick a free one. Another: check it is free, bound as the launcher binds it (netutil.bind_tcp)."""
    try:
        with bind_tcp(addr, port) as sock:
            return sock.getsockname()[1], []
    except OSError as exc:
        return None, [f"key 'perfplay_master_port': port {port} on {addr} is not free "
                      f"({exc.strerror or exc}); another run may hold it: set another port or 0 (auto)"]


def check_nic(nic: str) -> list[str]:
    """The host var perfplay_nic names one of this host's network interfaces (the plan checked its form)."""
    names = sorted(name for _, name in socket.if_nameindex())
    if nic in names:
        return []
    return [f"key 'perfplay_nic': this host has no network interface '{nic}' (allowed: {', '.join(names)})"]


def check_results_dir(results_dir: str, min_free: int) -> list[str]:
    """The host's results dir: safe for this user to write in (created if missing) and with min_free bytes free."""
    try:
        files.secure_dir(results_dir)
    except PerfplayError as exc:
        return [f"key 'perfplay_host_results_dir': {exc}"]
    low = files.low_space_reason(Path(results_dir), min_free)
    return [low] if low else []


def _data_problem(case_id: str, problem: str) -> str:
    """A problem with a case's data, naming the key it is about: data_dir, or the one the problem names (a generate
    case's checkpoint)."""
    key, rest = ("key 'data_dir'", problem)
    if problem.startswith("key '") and ": " in problem:
        key, rest = problem.split(": ", 1)
    return f"{key} (run var perfplay_cases) of {case_id}: {rest}"


def host_check(request: dict[str, Any]) -> dict[str, Any]:
    """Everything the host preflight asserts, as data."""
    unknown = sorted(set(request) - set(REQUEST_KEYS))
    if unknown:
        raise ValueError(f"unknown host-check keys {unknown} (allowed: {', '.join(REQUEST_KEYS)})")
    cases = [ResolvedConfig.from_json(doc, f"host-check request: cases[{i}]")
             for i, doc in enumerate(request.get("cases") or [])]
    problems = check_python()
    devices, device_problems = check_devices(request["vendor"], int(request.get("nproc") or 0),
                                             request.get("device_count"))
    problems += device_problems
    if not device_problems and int(request.get("nproc") or 0) > 0:
        problems += check_runtime(request["vendor"], cases)
    data = []
    for config in cases:
        errors = check_data(config)
        data.append({"case_id": config.case_id, "errors": errors})
        problems += [_data_problem(config.case_id, e) for e in errors]
        problems += check_inference_files(config)
    if request.get("results_dir"):
        problems += check_results_dir(request["results_dir"], int(request.get("min_free_bytes") or 0))
    if request.get("nic"):
        problems += check_nic(str(request["nic"]))
    port = None
    if request.get("master_port") is not None:
        port, port_problems = check_master_port(request.get("master_addr") or "", int(request["master_port"]))
        problems += port_problems
    return {"ok": not problems, "problems": problems, "warnings": framework_warnings(cases),
            "python": platform.python_version(), "executable": sys.executable, "hostname": socket.gethostname(),
            "devices": devices, "data": data, "master_port": port}
