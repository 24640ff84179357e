"""`image` (docker runtime): build a vendor's image unless its tag exists."""

from __future__ import annotations

import argparse
from pathlib import Path

from case_runners.core.cli_io import load_json, print_json
from case_runners.core.errors import PerfplayError


def cmd_image(args: argparse.Namespace) -> int:
    from case_runners.core.paths import project_root
    from case_runners.launch.container.image import ensure_image, image_spec
    from case_runners.vendors.description import load_vendor
    request = load_json(args.request)
    unknown = sorted(set(request) - {"vendor", "framework", "settings", "log"})
    if unknown:
        raise PerfplayError(f"unknown image request keys {unknown} (allowed: framework, log, settings, vendor)")
    root = project_root()
    spec = image_spec(root, load_vendor(request["vendor"], root), request["framework"], request.get("settings"))
    log_path = Path(request["log"]) if request.get("log") else None
    print_json(ensure_image(root, spec, check=args.check, log_path=log_path))
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("image", help="(docker runtime) build a vendor's image unless its tag exists (JSON)")
    p.add_argument("--request", required=True, help="JSON file: vendor, framework, settings (run var perfplay_image)")
    p.add_argument("--check", action="store_true", help="report whether it would build; build nothing")
    p.set_defaults(func=cmd_image)
