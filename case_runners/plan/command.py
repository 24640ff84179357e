"""The planning commands: `plan` (a run request to a run directory), `discard-run`, `check-run-id`."""

from __future__ import annotations

import argparse
from pathlib import Path

from case_runners.core.cli_io import EXIT_BAD_INPUT, load_json, print_json


def cmd_plan(args: argparse.Namespace) -> int:
    from case_runners.plan.run_plan import make_plan
    plan = make_plan(load_json(args.request), check=args.check)
    print_json(plan)
    return 0 if plan["ok"] else EXIT_BAD_INPUT


def cmd_discard_run(args: argparse.Namespace) -> int:
    from case_runners.plan.run_plan import discard_unstarted_run
    print_json({"removed": discard_unstarted_run(Path(args.run_dir))})
    return 0


def cmd_check_run_id(args: argparse.Namespace) -> int:
    from case_runners.core.run_ids import check_run_id
    print(check_run_id(args.run_id, key=args.key))
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="resolve and check a run request (JSON) and create the run directory")
    p.add_argument("--request", required=True)
    p.add_argument("--check", action="store_true", help="validate only; write nothing")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("discard-run", help="remove a run directory in which no round started (JSON)")
    p.add_argument("run_dir")
    p.set_defaults(func=cmd_discard_run)

    p = sub.add_parser("check-run-id", help="exit 2 with the rule unless RUN_ID is a valid run id")
    p.add_argument("run_id")
    p.add_argument("--key", default="perfplay_run_id", help="the name to put in the message")
    p.set_defaults(func=cmd_check_run_id)
