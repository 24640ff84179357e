"""The subcommand `report RUN... [-o PATH]`: render the runs' report and write it where its content changed.
Exit 0 with the report written (or up to date), 2 for a directory that is not a run (cli.main prints the error).
--json answers with the path, whether it was (or, with --check, would be) written, and a write error."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from case_runners.core import files
from case_runners.core.errors import PerfplayError
from case_runners.views.history.lookup import add_run_arguments, runs_of
from case_runners.views.report import REPORT_NAME


@dataclasses.dataclass
class Written:
    path: Path
    changed: bool  # written (with check: would be)
    write_error: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"path": str(self.path), "changed": self.changed, "write_error": self.write_error}


def default_path(run_dirs: list[Path]) -> Path:
    """A single run's report.html; several runs need -o."""
    if len(run_dirs) > 1:
        raise PerfplayError(f"{len(run_dirs)} runs: -o PATH says where their report goes")
    return run_dirs[0] / REPORT_NAME


def write_report(run_dirs: list[Path], path: Path | None = None, check: bool = False) -> Written:
    """Render the report of the runs and write it to `path` (default: the run's report.html) unless it holds that
    already; with check, write nothing. A directory that is not a run is a PerfplayError naming it; a report that
    cannot be written is returned with the reason."""
    from case_runners.views.report.data import read_run
    from case_runners.views.report.sections import render_report
    runs = [read_run(Path(d)) for d in run_dirs]
    path = Path(path) if path is not None else default_path([r.run_dir for r in runs])
    text = render_report(runs)
    if check:
        try:
            same = path.read_text(encoding="utf-8") == text
        except (OSError, UnicodeDecodeError):
            same = False
        return Written(path, not same)
    try:
        return Written(path, files.atomic_update_text(path, text))
    except PerfplayError as exc:
        return Written(path, False, str(exc))


def cmd_report(args: argparse.Namespace) -> int:
    written = write_report(runs_of(args), Path(args.output) if args.output else None, args.check)
    if args.json:
        json.dump(written.to_json(), sys.stdout)
        sys.stdout.write("\n")
        return 0
    if written.write_error:
        print(f"error: report not written: {written.write_error}", file=sys.stderr)
        return 1
    print(f"report: {written.path}" + ("" if written.changed else " (up to date)"))
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write one self-contained HTML report of one or more run directories "
                                      "(tables, throughput, scaling, MFU, loss, monitors, environment, failures)",
                       description="Render the runs' report: one static HTML file with its figures embedded (no "
                                   "server, no network), written only when its content changed. "
                                   "docs/report.md describes each section.")
    add_run_arguments(p, "several: side by side")
    p.add_argument("-o", "--output", metavar="PATH",
                   help=f"where to write it (default: RUN/{REPORT_NAME} for one run; required for several)")
    p.add_argument("--check", action="store_true", help="write nothing; say whether the file would change")
    p.add_argument("--json", action="store_true",
                   help="print {path, changed, write_error} as JSON; a failed write is reported there (exit 0)")
    p.set_defaults(func=cmd_report)
