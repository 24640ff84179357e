"""`check-vendor`: a vendor folder against the vendor folder layout; --functional runs its cases."""

from __future__ import annotations

import argparse
from pathlib import Path

from case_runners.core.errors import PerfplayError


def cmd_check_vendor(args: argparse.Namespace) -> int:
    from case_runners.core.paths import project_root
    from case_runners.vendors.check.run import check_vendor, report
    data_dirs = {}
    for item in args.data_dir:
        case, sep, path = item.partition("=")
        if not sep:
            raise PerfplayError(f"--data-dir wants CASE=DIR, got {item!r}")
        data_dirs[case] = path
    found = check_vendor(args.name, Path(args.root) if args.root else project_root(), args.functional,
                         args.steps, args.case or None, data_dirs)
    text, code = report(args.name, found)
    print(text)
    return code


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check-vendor", help="check a vendor folder against the vendor folder layout "
                                            "(docs/adapting-a-chip.md): files, configs, README, monitor, engines, "
                                            "extern; --functional runs its cases (exit 1 on an error)")
    p.add_argument("name", help="vendor/<name>/")
    p.add_argument("--functional", action="store_true",
                   help="also run every adapted case for a few steps in its functional shape (at 1x2 where the "
                        "vendor's probe counts two devices, else 1x1) and every inference case through a-g")
    p.add_argument("--steps", type=int, default=5, help="training steps per case with --functional (default 5)")
    p.add_argument("--case", action="append", default=[], help="with --functional: only this case (repeatable)")
    p.add_argument("--data-dir", action="append", default=[], metavar="CASE=DIR",
                   help="a case's data dir for --functional (else synthetic data where the case has it)")
    p.add_argument("--root", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_check_vendor)
