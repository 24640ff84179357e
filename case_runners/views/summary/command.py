"""`summary`: a run directory summarised over rounds, as JSON or its table; with --history-db and --report, the run's
end in one process: the run indexed into the history and its report.html written after the summary."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from case_runners.core.cli_io import print_json
from case_runners.core.errors import PerfplayError


def _index(run_dir: Path, db: Path, check: bool) -> dict[str, Any]:
    """`history add --json`'s answer for the run, or its index_error: a failed index never fails the summary."""
    from case_runners.views.history.cli import add_runs
    try:
        return add_runs([run_dir], db, check)
    except PerfplayError as exc:  # what `history add` names as its error (exit 2)
        return {"index_error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a bug: said in index_error, and the run's end goes on
        return {"index_error": f"{type(exc).__name__}: {exc}"}


def _report(run_dir: Path, check: bool) -> dict[str, Any]:
    """`report --json`'s answer for the run: a report that cannot be rendered or written never fails the summary."""
    from case_runners.views.report.cli import write_report
    try:
        return write_report([run_dir], check=check).to_json()
    except Exception as exc:  # noqa: BLE001 - a bug in a figure: said in write_error, and the run's end goes on
        return {"path": None, "changed": False, "write_error": f"not rendered: {type(exc).__name__}: {exc}"}


def cmd_summary(args: argparse.Namespace) -> int:
    from case_runners.records.run_dir import check_run_dir
    from case_runners.records.summary_build import summarize_run
    from case_runners.views.summary.files import write_run_summary
    from case_runners.views.summary.text import render_table
    run_dir = check_run_dir(Path(args.run_dir))  # a mistyped path is refused, as report and history refuse it
    summary, written = write_run_summary(run_dir) if args.write else (summarize_run(run_dir), None)
    # After the summary, in this order, as the playbook's end: without --write they write nothing either.
    ends = {**({"history": _index(run_dir, Path(args.history_db), not args.write)} if args.history_db else {}),
            **({"report": _report(run_dir, not args.write)} if args.report else {})}
    if args.table:
        print(render_table(summary))
    else:
        print_json({**summary.to_json(), **({"written": written} if written is not None else {}),
                    "table": render_table(summary), **ends})
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("summary", help="summarise a run directory over rounds")
    p.add_argument("run_dir")
    p.add_argument("--write", action="store_true",
                   help="write summary.json and summary.md where their content changed (listed in \"written\")")
    p.add_argument("--table", action="store_true", help="print the table instead of JSON (which holds it as 'table')")
    p.add_argument("--history-db", metavar="PATH",
                   help="then index the run into this history database, as `history add --json` (its answer in "
                        "\"history\", or \"index_error\" there)")
    p.add_argument("--report", action="store_true",
                   help="then write the run's report.html, as `report --json` (its answer in \"report\")")
    p.set_defaults(func=cmd_summary)
