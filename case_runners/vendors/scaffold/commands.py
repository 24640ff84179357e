"""The scaffolds' commands of `python -m case_runners`: new-vendor and new-case. Each prints the files it wrote and
the next step; bad input is one line on stderr and exit status 2 (cli.main), with nothing written."""

from __future__ import annotations

import argparse
from pathlib import Path

from case_runners.core.paths import display_path, project_root


def _root(args: argparse.Namespace) -> Path:
    return Path(args.root).resolve() if args.root else project_root()


def _print_written(written: list[Path], root: Path, next_step: str) -> None:
    for path in written:
        print(f"wrote {display_path(path, root)}")
    print(f"next: {next_step}")


def cmd_new_vendor(args: argparse.Namespace) -> int:
    from case_runners.vendors.scaffold.new_vendor import new_vendor
    root = _root(args)
    _print_written(new_vendor(args.name, args.device, args.backend, args.hardware, root), root,
                   f"edit the TODO(vendor) lines, then python -m case_runners check-vendor {args.name}")
    return 0


def cmd_new_case(args: argparse.Namespace) -> int:
    from case_runners.vendors.scaffold.new_case import new_case
    root = _root(args)
    _print_written(new_case(args.name, args.metric, args.target, not args.lower_is_better, root), root,
                   f"python -m case_runners run {args.name} (the stand-in trains as written), then edit the "
                   f"TODO(case author) lines: model, data, evaluator, target, FLOPs, README")
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("new-vendor", help="write vendor/NAME/, complete and valid, with TODO(vendor) lines to fill")
    p.add_argument("name", help="the vendor: lower case letters and digits, words joined by single underscores")
    p.add_argument("--device", required=True, help="the torch device type after the vendor's imports, e.g. musa")
    p.add_argument("--backend", required=True, help="the torch.distributed backend, e.g. mccl")
    p.add_argument("--hardware", help="the hardware model of its first configs, e.g. S4000 (default: NAME in upper "
                                      "case)")
    p.add_argument("--root", help="the checkout to write into (default: this one)")
    p.set_defaults(func=cmd_new_vendor)

    p = sub.add_parser("new-case", help="write a standard training case that trains as written (a stand-in), with "
                                        "TODO(case author) lines to fill, and its cpu and nvidia configs")
    p.add_argument("name", help="the case: lower case letters and digits, words joined by single underscores")
    p.add_argument("--metric", default="accuracy", help="the target metric (default: accuracy)")
    p.add_argument("--target", help="the target value (default: 0.9, or 0.5 with --lower-is-better)")
    p.add_argument("--lower-is-better", action="store_true", help="the target is reached at or below its value")
    p.add_argument("--root", help="the checkout to write into (default: this one)")
    p.set_defaults(func=cmd_new_case)
