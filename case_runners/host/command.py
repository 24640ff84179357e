"""The host's checks as commands: `host-check` (the host preflight), `check-runtime`, `requirements`."""

from __future__ import annotations

import argparse
from pathlib import Path

from case_runners.core.cli_io import load_json, print_json


def cmd_host_check(args: argparse.Namespace) -> int:
    """The request's `requirements` first, with the stdlib only: while the venv lacks a pin, the answer is that
    (`unmet`, a problem per file naming the packages) and the checks that import what the pins install (yaml, torch)
    wait for the playbook's pip and its second call; then every check in the same process."""
    from case_runners.core.paths import project_root
    from case_runners.host.requirements import pins_answer
    request = load_json(args.request)
    pins = pins_answer(list(request.pop("requirements", None) or []), project_root())
    if pins["problems"]:
        print_json({"ok": False, **pins, "checked": False})
        return 0
    from case_runners.host.check import host_check
    result = host_check(request)
    print_json({**result, "unmet": pins["unmet"], "warnings": pins["warnings"] + result["warnings"], "checked": True})
    return 0


def cmd_check_runtime(args: argparse.Namespace) -> int:
    from case_runners.host.check import runtime_problems
    from case_runners.records.resolved import ResolvedConfig
    problems = runtime_problems(ResolvedConfig.load(args.config))
    print_json({"ok": not problems, "problems": problems})
    return 0 if not problems else 1


def cmd_requirements(args: argparse.Namespace) -> int:
    from case_runners.host.requirements import check_requirements
    print_json(check_requirements(Path(args.requirements)))
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("host-check", help="the host preflight: pins, python, devices, data dirs, master port (JSON)")
    p.add_argument("--request", required=True,
                   help="JSON file: vendor, nproc, cases, device_count, master_port, ..., requirements")
    p.set_defaults(func=cmd_host_check)

    p = sub.add_parser("check-runtime", help="the vendor's runtime hook, device and backend for a resolved config, "
                                             "in this Python (JSON; exit 1 on a problem)")
    p.add_argument("--config", required=True, help="a resolved config (resolved_config.json)")
    p.set_defaults(func=cmd_check_runtime)

    p = sub.add_parser("requirements", help="whether this Python has every pinned requirement (JSON)")
    p.add_argument("--requirements", required=True, help="a requirements.txt of name==version pins")
    p.set_defaults(func=cmd_requirements)
