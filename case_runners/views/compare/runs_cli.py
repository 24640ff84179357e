"""The subcommand `compare-runs BASELINE RUN...`: exit 0, 1 when --fail-on-regression finds a regression, 2 when the
runs cannot be compared (cli.main prints the error)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from case_runners.core.errors import PerfplayError
from case_runners.views.history.lookup import add_run_arguments

OPTION = "--fail-on-regression"


def percent_arg(text: str) -> float:
    """--fail-on-regression's value: a percentage >= 0; PerfplayError naming the option otherwise."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise PerfplayError(f"{OPTION} {text!r}: expected a percentage, a number >= 0 (5 for 5 %)")
    return value


def cmd_compare_runs(args: argparse.Namespace) -> int:
    from case_runners.views.compare.runs import compare_runs, resolve_runs
    from case_runners.views.compare.runs_text import render_text
    percent = None if args.fail_on_regression is None else percent_arg(args.fail_on_regression)
    found = compare_runs(resolve_runs(args.runs, Path(args.db) if args.db else None), percent)
    if args.json:
        json.dump(found.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render_text(found))
    return found.exit_code


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare-runs", help="two runs or more side by side, the first the baseline: per case and "
                                            "scale, each figure's mean ± std, ratio and whether the difference is "
                                            "beyond the round-to-round noise (exit 1 on a regression with "
                                            f"{OPTION}, 2 refused)",
                       description="Match the runs' cases by case, task and scale (nnodes x nproc), whatever their "
                                   "vendor and hardware, and compare each figure of their summaries with the "
                                   "baseline's: the ratio, and better, worse or within noise (the noise from the "
                                   "rounds' standard deviations; unknown with one round). Cases with nothing to "
                                   "compare with are listed as skipped. docs/compare.md describes it.")
    add_run_arguments(p, "the first is the baseline")
    p.add_argument(OPTION, metavar="PCT",
                   help="exit 1 when a figure of a later run is worse than the baseline's by more than PCT percent "
                        "and beyond the noise (with one round on a side the noise is unknown: said, not failed)")
    p.add_argument("--json", action="store_true", help="print the comparison as one JSON document")
    p.set_defaults(func=cmd_compare_runs)
