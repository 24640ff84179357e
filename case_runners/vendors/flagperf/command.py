"""`python -m case_runners import-flagperf PATH [--out DIR] [--force]`: the report on stdout, one line per item.
Exit status 0 when a file was written, 1 when none was (nothing mapped, or every file exists), 2 on input that
cannot be read (cli.main: nothing is written then)."""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_OUT = "flagperf-import"


def cmd_import_flagperf(args: argparse.Namespace) -> int:
    from case_runners.vendors.flagperf.importer import (
        BASE_INVENTORY,
        BASE_VARS,
        INFERENCE_INVENTORY,
        INFERENCE_VARS,
        INVENTORY,
        TRAINING_VARS,
        import_flagperf,
    )
    out = Path(args.out)
    report = import_flagperf(Path(args.path), out, force=args.force)
    for item in report.items:
        print(item)
    for line in report.counts():
        print(line)
    if not report.written:
        print("nothing written")
        return 1
    print(f"next: ansible-playbook -i {out / INVENTORY} run_case.yml -e @{out / TRAINING_VARS} (inference: "
          f"-i {out / INFERENCE_INVENTORY} -e @{out / INFERENCE_VARS}; base: -i {out / BASE_INVENTORY} -e "
          f"@{out / BASE_VARS}), with {out / 'vendor'}/ copied into the checkout's vendor/ (or --out .)")
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import-flagperf", help="read a FlagPerf checkout's configs (never running them) and write "
                                               "perfplay's: inventory, run vars, vendor configs; report each item")
    p.add_argument("path", help="a FlagPerf checkout, or one of its config files (test_conf.py, cluster_conf.py, "
                                "inference/configs/host.yaml, base/configs/host.yaml, training/<vendor>/"
                                "<case>-<framework>/config/config_<HW>x<N>x<P>.py, training/<vendor>/"
                                "<case>-in_container/config.py)")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"the folder to write into (default: ./{DEFAULT_OUT}); "
                                                      f"'.' in a perfplay checkout puts vendor configs in place")
    p.add_argument("--force", action="store_true", help="replace files that exist (default: keep them)")
    p.set_defaults(func=cmd_import_flagperf)
