"""The run plan: every selected case resolved and checked on the controller before any host is touched."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from case_runners.bundle import BUNDLE_NAME, write_bundle
from case_runners.config.layering import resolve
from case_runners.config.selection import BOUNDS, TASKS, parse_selections
from case_runners.container.image import BUILD_KEYS, image_spec
from case_runners.errors import ConfigError
from case_runners.inference.plan import resolve_inference_selection
from case_runners.paths import project_root
from case_runners.vendors import load_vendor

RUNTIMES = ("host", "docker")
REQUEST_KEYS = ("vendor", "runtime", "image", "cases", "task", "results_dir", "run_id", "timeout_s", "bundle")
RESOLVED_NAME = "resolved_config.json"


def make_plan(request: dict[str, Any], *, check: bool = False, root: Path | None = None) -> dict[str, Any]:
    """Resolve a run request. Returns {"ok", "errors", "run_id", "run_dir", "cases", "bundle", "images"}.

    With runtime "docker", each case's config names the image of its (vendor, framework) in "runtime", and
    "images" lists them with how to build them (request["image"]: the run var perfplay_image).

    With check=False and no errors, creates results/<run_id>/ and writes each case's resolved config there,
    and with request["bundle"] the checkout remote hosts run (perfplay-src.tar: what ran, kept with the results).
    """
    root = root or project_root()
    errors: list[ConfigError] = []
    unknown = sorted(set(request) - set(REQUEST_KEYS))
    errors += [ConfigError("unknown request key", key=k, allowed=REQUEST_KEYS) for k in unknown]
    runtime = request.get("runtime", "host")
    if runtime not in RUNTIMES:
        errors.append(ConfigError(f"unknown runtime '{runtime}'", key="perfplay_runtime", allowed=RUNTIMES))
    timeout = None
    if request.get("timeout_s") not in (None, ""):
        try:
            timeout = BOUNDS["timeout_s"].check(request["timeout_s"], key="perfplay_case_timeout", file="run vars")
        except ConfigError as exc:
            errors.append(exc)
    run_id = request.get("run_id")
    if run_id and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", str(run_id)):
        errors.append(ConfigError(f"'{run_id}' is not a plain name (letters, digits, '_', '.', '-')",
                                  key="perfplay_run_id"))
    vendor = None
    try:
        vendor = load_vendor(str(request.get("vendor", "cpu")), root)
    except ConfigError as exc:
        errors.append(ConfigError(exc.message, key="perfplay_vendor", file="run vars", allowed=exc.allowed)
                      if exc.key == "vendor" else exc)
    task = request.get("task") or "training"
    if task not in TASKS:
        errors.append(ConfigError(f"unknown task '{task}'", key="perfplay_task", file="run vars", allowed=TASKS))
        task = "training"
    selections, selection_errors = parse_selections(request.get("cases"), task=task)
    errors += selection_errors
    cases: list[dict[str, Any]] = []
    if vendor is not None:
        for sel in selections:
            resolver = resolve_inference_selection if sel.task == "inference" else resolve
            config, case_errors = resolver(sel, vendor, root, timeout)
            errors += case_errors
            if config is not None:
                cases.append(config)
    images, image_errors = _runtimes(cases, runtime, vendor, request.get("image"), root)
    errors += image_errors
    ids = [c["case_id"] for c in cases]
    errors += [ConfigError("is selected twice; give each selection a different hardware, nnodes or nproc",
                           key=f"case {cid}") for cid in sorted({i for i in ids if ids.count(i) > 1})]
    result: dict[str, Any] = {"ok": not errors, "errors": [str(e) for e in errors], "run_id": None,
                              "run_dir": None, "cases": cases, "bundle": None, "images": images}
    if errors or check:
        return result
    run_dir = _new_run_dir(Path(request.get("results_dir") or root / "results"), request.get("run_id"))
    for config in cases:
        case_dir = run_dir / config["case_id"]
        case_dir.mkdir()
        config["config_path"] = str(case_dir / RESOLVED_NAME)
        (case_dir / RESOLVED_NAME).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    result.update(run_id=run_dir.name, run_dir=str(run_dir))
    if request.get("bundle"):
        bundle = run_dir / BUNDLE_NAME
        result["bundle"] = {"path": str(bundle), "sha256": write_bundle(root, bundle)}
    return result


def _runtimes(cases: list[dict[str, Any]], runtime: str, vendor: dict[str, Any] | None, image: Any,
              root: Path) -> tuple[list[dict[str, Any]], list[ConfigError]]:
    """Set each case's "runtime"; with docker, the image spec of each framework. (images, errors)"""
    if image not in (None, "", {}) and not isinstance(image, dict):
        return [], [ConfigError("must be a mapping of image settings", key="perfplay_image", file="run vars",
                                allowed=BUILD_KEYS)]
    if runtime != "docker" or vendor is None:
        for config in cases:
            config["runtime"] = {"kind": "host"}
        return [], []
    specs: dict[str, dict[str, Any]] = {}
    for config in cases:
        framework = config["framework"]
        if framework not in specs:
            try:
                specs[framework] = image_spec(root, vendor, framework, image or {})
            except ConfigError as exc:
                return [], [exc]
        config["runtime"] = {"kind": "docker", "image": specs[framework]["ref"],
                             "run": (vendor.get("container") or {}).get("run") or {}}
    return list(specs.values()), []


def _new_run_dir(results_dir: Path, run_id: str | None) -> Path:
    """Create results/run<YYYYmmddHHMMSS>/ (a suffix is added if another run took that second)."""
    results_dir.mkdir(parents=True, exist_ok=True)
    if run_id:
        path = results_dir / run_id
        path.mkdir()
        return path
    stamp = "run" + time.strftime("%Y%m%d%H%M%S")
    for n in range(1, 1000):
        path = results_dir / (stamp if n == 1 else f"{stamp}_{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"cannot create a run directory under {results_dir}")
