"""The subcommand `cases`: the case catalogue as a table, `--json` (perfplay.case_catalogue/1) or `--markdown` (the
page docs/catalogue.md). Exit 0; 2 for a vendor that is not one or a config that cannot be read (cli.main prints
the error)."""

from __future__ import annotations

import argparse
import json
import sys


def cmd_cases(args: argparse.Namespace) -> int:
    from case_runners.core.paths import project_root
    from case_runners.views.catalogue.build import build_catalogue
    from case_runners.views.catalogue.render import render_markdown, render_text
    root = project_root()
    catalogue = build_catalogue(root, args.vendor)
    if args.json:
        json.dump(catalogue.to_json(), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    elif args.markdown:
        sys.stdout.write(render_markdown(catalogue, root))
    else:
        print(render_text(catalogue))
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cases", help="the case catalogue: every case per task (training, inference, base, generate) "
                                     "with its target and the hardware and scales each vendor has configs for",
                       description="List every case per task with the first sentence of its description, its target "
                                   "and, per vendor, the hardware x scales (nnodes x nproc) that have configs. "
                                   "docs/catalogue.md is its --markdown output.")
    p.add_argument("--vendor", metavar="V", help="only this vendor's configs, and the cases it has configs for")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print the catalogue as one JSON document")
    form.add_argument("--markdown", action="store_true", help="print the catalogue page (docs/catalogue.md)")
    p.set_defaults(func=cmd_cases)
