"""The subcommand `compare REFERENCE CANDIDATE`: exit 0 PASS, 1 FAIL, 2 when the two cannot be compared (cli.main
prints the error)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from case_runners.core.errors import PerfplayError
from case_runners.views.compare.alignment import DEFAULT_TOLERANCE
from case_runners.views.compare.rounds import DEFAULT_ROUND


def cmd_compare(args: argparse.Namespace) -> int:
    from case_runners.views.compare.alignment import align, check_same_workload, workload
    from case_runners.views.compare.report import build, render_text
    from case_runners.views.compare.rounds import load_round
    if not (math.isfinite(args.tolerance) and args.tolerance >= 0):
        raise PerfplayError(f"--tolerance {args.tolerance}: expected a number >= 0 (a fraction: 0.01 is 1 %)")
    if args.round < 1:
        raise PerfplayError(f"--round {args.round}: rounds count from 1")
    if args.from_step < 0:
        raise PerfplayError(f"--from-step {args.from_step}: expected a step number >= 0")
    reference = load_round(Path(args.reference), args.round)
    candidate = load_round(Path(args.candidate), args.round)
    allowed = check_same_workload(workload(reference.config, reference.record),
                                  workload(candidate.config, candidate.record), args.allow_diff)
    loss = align(reference.loss, candidate.loss, args.from_step)
    if not loss.steps:
        since = f" from step {args.from_step} (--from-step)" if args.from_step else ""
        raise PerfplayError(f"{reference.events} (steps {_span(reference.loss)}) and {candidate.events} (steps "
                            f"{_span(candidate.loss)}): no step logged in both{since}, no loss to align")
    found = build(reference, candidate, loss, args.tolerance, allowed, args.from_step)
    if args.plot:
        from case_runners.views.compare.plot import plot
        plot(found, Path(args.plot))
    if args.json:
        json.dump(found.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render_text(found))
        if args.plot:
            print(f"plot: {args.plot}")
    return found.exit_code


def _span(curve: dict[int, float]) -> str:
    return f"{min(curve)}..{max(curve)}, {len(curve)} logged"


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="accuracy alignment: a candidate run's loss curve and final metric against a "
                                       "reference run's, with the same parameters (exit 0 PASS, 1 FAIL, 2 refused)",
                       description="Align the two rounds' rank-0 loss curves by step and compare their final "
                                   "metrics: PASS when the final metric's relative error and the mean relative "
                                   "error of the loss are both within the tolerance. Runs that differ in what "
                                   "they compute (case, world size, precision, params) are refused. "
                                   "docs/compare.md describes it.")
    for name in ("reference", "candidate"):
        p.add_argument(name, metavar=name.upper(),
                       help=f"the {name}: a round directory (results/<run>/<case_id>/round<N>), a case directory "
                            f"(its round --round) or a run directory of one case")
    p.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE, metavar="FRACTION",
                   help=f"the largest relative error that passes (default {DEFAULT_TOLERANCE:g}: 1 %%)")
    p.add_argument("--round", type=int, default=DEFAULT_ROUND, metavar="N",
                   help=f"the round of a case or run directory (default {DEFAULT_ROUND}); a round directory is "
                        f"taken as it is")
    p.add_argument("--from-step", type=int, default=0, metavar="STEP",
                   help="align the loss from this step on (FlagPerf's LLM rule: --from-step 21 --tolerance 0.02); "
                        "default: every step")
    p.add_argument("--allow-diff", action="append", default=[], metavar="KEY",
                   help="compare even though KEY (a param, world_size or precision) differs; repeatable; never case")
    p.add_argument("--json", action="store_true", help="print the comparison as one JSON document")
    p.add_argument("--plot", metavar="PNG", help="draw both loss curves and their relative error into this PNG file")
    p.set_defaults(func=cmd_compare)
