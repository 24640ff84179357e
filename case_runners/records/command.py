"""The record commands: `record` (a round's record from its node dirs) and `check-record`."""

from __future__ import annotations

import argparse
from pathlib import Path

from case_runners.core.cli_io import print_json


def cmd_record(args: argparse.Namespace) -> int:
    from case_runners.records.resolved import ResolvedConfig
    from case_runners.records.round_build import compact_record, write_round_record
    record = write_round_record(Path(args.round_dir), ResolvedConfig.load(args.config), args.round, args.run_id,
                                args.error)
    print_json({"record": record.to_json(), "compact": compact_record(record, args.error)})
    return 0


def cmd_check_record(args: argparse.Namespace) -> int:
    from case_runners.records.check import report
    lines, code = report(args.paths)
    print("\n".join(lines))
    return code


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("record", help="build a round's record from its node dirs, write it as round_record.json and "
                                      "print it with its compact digest (JSON: record, compact)")
    p.add_argument("--round-dir", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--round", type=int, required=True)
    p.add_argument("--run-id")
    p.add_argument("--error", action="append", default=[],
                   help="a problem the orchestration met in this round (a host that failed a task): fails the round")
    p.set_defaults(func=cmd_record)

    p = sub.add_parser("check-record", help="check that files are valid perfplay documents (resolved config, rank "
                                            "or node result, round record, run summary), each of the kind its "
                                            "schema names: one line per valid file, exit 1 naming every problem")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.set_defaults(func=cmd_check_record)
