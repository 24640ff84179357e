"""`summary`: a run directory summarised over rounds, as JSON or its table."""

from __future__ import annotations

import argparse
from pathlib import Path

from case_runners.core.cli_io import print_json


def cmd_summary(args: argparse.Namespace) -> int:
    from case_runners.records.run_dir import check_run_dir
    from case_runners.records.summary_build import summarize_run
    from case_runners.views.summary.files import write_run_summary
    from case_runners.views.summary.text import render_table
    run_dir = check_run_dir(Path(args.run_dir))  # a mistyped path is refused, as report and history refuse it
    summary, written = write_run_summary(run_dir) if args.write else (summarize_run(run_dir), None)
    if args.table:
        print(render_table(summary))
    else:
        print_json({**summary.to_json(), **({"written": written} if written is not None else {}),
                     "table": render_table(summary)})
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("summary", help="summarise a run directory over rounds")
    p.add_argument("run_dir")
    p.add_argument("--write", action="store_true",
                   help="write summary.json and summary.md where their content changed (listed in \"written\")")
    p.add_argument("--table", action="store_true", help="print the table instead of JSON (which holds it as 'table')")
    p.set_defaults(func=cmd_summary)
