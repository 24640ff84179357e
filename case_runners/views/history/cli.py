"""The subcommand `history`: `list` the indexed rounds (a table, --json or --csv), `add` run directories,
`reindex` the database from the run directories of a results dir. Exit 0; 1 when a round's record could not be read
(reported, by file, and the rest indexed); 2 for what cannot be done at all (cli.main prints the error)."""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import sys
from pathlib import Path
from typing import Any

from case_runners.core.cli_io import ArgumentParser
from case_runners.core.errors import PerfplayError
from case_runners.core.paths import RESULTS_NAME, results_root
from case_runners.core.text import number_text, percent_text, text_columns
from case_runners.plan.config.resolved import OPERATION, TASKS
from case_runners.records import names
from case_runners.records.history_db import (
    COLUMNS,
    DB_NAME,
    JSON_COLUMNS,
    SCHEMA_VERSION,
    HistoryError,
    Row,
    default_db,
    opened,
    rebuild,
    replace_run,
    schema_version,
    select,
)
from case_runners.views.compare.operators import ROWS_KEY, roofline_geomean, rows_of
from case_runners.views.history.index import DATE_FORMAT, index_run

# The table's throughput column: each task's headline figure (a base round's are its benchmark's, per kind).
TABLE_FIGURE = {names.TRAINING: names.THROUGHPUT_BASIS, names.INFERENCE: "p_inference_core",
                names.GENERATE: "tokens_per_s"}
TABLE_COLUMNS = ("date", "run_id", "case_id", "round", "status", "standard", "vendor", "hardware", "scale",
                 "throughput", "MFU")
_DATE_FORMS = ("%Y-%m-%d", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", DATE_FORMAT, "%Y-%m-%dT%H:%M:%S")


def parse_date(text: str, option: str, *, end: bool) -> str:
    """A --since/--until DATE as a row's date text; a date alone or a minute is its first second (--since) or its
    last (--until)."""
    for form in _DATE_FORMS:
        try:
            parsed = datetime.datetime.strptime(text, form)
        except ValueError:
            continue
        if end and "%M" not in form:
            parsed = parsed.replace(hour=23, minute=59, second=59)
        elif end and "%S" not in form:
            parsed = parsed.replace(second=59)
        return parsed.strftime(DATE_FORMAT)
    raise PerfplayError(f"{option} {text!r}: expected a date, YYYY-MM-DD or YYYY-MM-DD HH:MM[:SS]")


def _db(args: argparse.Namespace) -> Path:
    return Path(args.db) if args.db else default_db()


def cmd_list(args: argparse.Namespace) -> int:
    filters = {"case": args.case, "vendor": args.vendor, "hardware": args.hardware, "task": args.task,
               "status": args.status,
               "since": parse_date(args.since, "--since", end=False) if args.since else None,
               "until": parse_date(args.until, "--until", end=True) if args.until else None}
    with opened(_db(args), create=False) as conn:
        rows = select(conn, **filters)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows([_csv_cell(row[c], c) for c in COLUMNS] for row in rows)
    else:
        if rows:
            print("\n".join(text_columns(list(TABLE_COLUMNS), [_table_row(row) for row in rows])))
        else:
            print("no round matches" if any(v is not None for v in filters.values()) else "no round indexed")
    return 0


def _csv_cell(value: Any, column: str) -> Any:
    if column in JSON_COLUMNS:
        return "" if value is None else json.dumps(value, sort_keys=True)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else value


def _table_row(row: Row) -> list[str]:
    figure = TABLE_FIGURE.get(row["task"])
    # An operation round's MFU: the geometric mean of its correct operators' fraction of the roofline, comparable
    # across chips whatever their peaks and their shapes (views/compare/operators.py).
    mfu = roofline_geomean(rows_of(row["metrics"].get(ROWS_KEY))) if row["task"] == OPERATION else \
        row["metrics"].get("mfu")
    return [row["date"] or "-", row["run_id"], row["case_id"], str(row["round"]), row["status"],
            "yes" if row["standard"] else "no", row["vendor"] or "-", row["hardware"] or "-",
            f"{row['nnodes']}x{row['nproc']}", number_text(row["metrics"].get(figure)) if figure else "-",
            percent_text(mfu)]


def add_runs(run_dirs: list[Path], db: Path, check: bool) -> dict[str, Any]:
    """`history add --json`'s answer: the runs indexed into db, each run's rows replaced (with check: nothing
    written, whether they would change), and each round whose record could not be read (indexed as unreadable).
    Every run is checked before anything is written; what cannot be done at all raises a PerfplayError."""
    indexed = [index_run(path) for path in run_dirs]
    changed = [bool(rows) for _, rows, _ in indexed]  # --check without a database yet: every row would be added
    if not check:
        with opened(db) as conn:
            changed = [replace_run(conn, str(run_dir), rows) for run_dir, rows, _ in indexed]
    elif db.exists():
        with opened(db, read_only=True) as conn:  # an older schema would be migrated: a change
            current = schema_version(conn) == SCHEMA_VERSION
            changed = [not current or replace_run(conn, str(run_dir), rows, write=False)
                       for run_dir, rows, _ in indexed]
    runs = [{"run_dir": str(run_dir), "run_id": run_dir.name, "rounds": len(rows), "changed": change}
            for (run_dir, rows, _), change in zip(indexed, changed)]
    problems = [problem for _, _, found in indexed for problem in found]
    return {"db": str(db), "changed": any(changed), "runs": runs, "problems": problems}


def cmd_add(args: argparse.Namespace) -> int:
    done = add_runs([Path(path) for path in args.run_dirs], _db(args), args.check)
    if args.json:
        json.dump(done, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        verb = "would be" if args.check else "were"
        for run in done["runs"]:
            state = f"its rows {verb} added or replaced" if run["changed"] else "already indexed, unchanged"
            print(f"{run['run_dir']}: {run['rounds']} round(s), {state} ({done['db']})")
    _warn_unreadable(done["problems"])
    return 1 if done["problems"] else 0


def cmd_reindex(args: argparse.Namespace) -> int:
    folders = [Path(d) for d in args.results] or [results_root()]
    runs, skipped = [], []
    for folder in folders:
        if not folder.is_dir():
            raise PerfplayError(f"--results {folder}: not a directory")
        for path in sorted(p for p in folder.iterdir() if p.is_dir()):
            try:
                runs.append(index_run(path))
            except HistoryError as exc:  # not a run directory: said, and the others indexed
                skipped.append(str(exc))
    rows = [row for _, found, _ in runs for row in found]
    problems = [problem for _, _, found in runs for problem in found]
    db = _db(args)
    with opened(db) as conn:
        rebuild(conn, rows)
    if args.json:
        json.dump({"db": str(db), "runs": [str(d) for d, _, _ in runs], "rounds": len(rows), "skipped": skipped,
                   "problems": problems}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(f"{db}: {len(rows)} round(s) of {len(runs)} run(s) from {', '.join(map(str, folders))}")
        for skip in skipped:
            print(f"skipped {skip}")
    _warn_unreadable(problems)
    return 1 if problems else 0


def _warn_unreadable(problems: list[str]) -> None:
    """Each round record that could not be read, on stderr: indexed all the same, as unreadable."""
    for problem in problems:
        print(f"warning: {problem} (indexed as unreadable)", file=sys.stderr)


def index_into(run_dir: Path, db: Path) -> bool:
    """Index one finished run (`case_runners run`'s last step) and say so; a failure is a warning on stderr, never a
    failed run. True when the run was indexed."""
    try:
        run_dir, rows, problems = index_run(run_dir)
        with opened(db) as conn:
            replace_run(conn, str(run_dir), rows)
    except PerfplayError as exc:
        print(f"warning: the run was not indexed into the history: {exc}", file=sys.stderr)
        return False
    _warn_unreadable(problems)
    print(f"history: {len(rows)} round(s) indexed into {db}")
    return True


def add_command(sub: argparse._SubParsersAction) -> None:
    db = ArgumentParser(add_help=False)
    db.add_argument("--db", metavar="PATH", help=f"the history database (default <checkout>/{RESULTS_NAME}/{DB_NAME})")
    p = sub.add_parser("history", help="the history of runs: list the indexed rounds, add runs, reindex",
                       description="Every finished run's rounds are indexed into an SQLite database, one row per "
                                   "round; the run directories stay the source of truth. docs/history.md "
                                   "describes it.")
    commands = p.add_subparsers(dest="history_command", metavar="COMMAND", required=True)

    c = commands.add_parser("list", parents=[db], help="the indexed rounds, by date (a table, --json or --csv)")
    c.add_argument("--case", metavar="CASE", help="a case (digits_cnn) or case id (digits_cnn_CPUx1x1)")
    c.add_argument("--vendor", metavar="NAME")
    c.add_argument("--hardware", metavar="MODEL")
    c.add_argument("--task", choices=TASKS)
    c.add_argument("--status", choices=names.SUMMARY_ROUND_STATUSES)
    c.add_argument("--since", metavar="DATE", help="runs started on or after DATE (YYYY-MM-DD[ HH:MM[:SS]])")
    c.add_argument("--until", metavar="DATE", help="runs started on or before DATE")
    form = c.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="the rows as a JSON list")
    form.add_argument("--csv", action="store_true", help="the rows as CSV (metrics and environment as JSON text)")
    c.set_defaults(func=cmd_list)

    c = commands.add_parser("add", parents=[db], help="index run directories (their rows replaced; exit 1 when a "
                                                      "round's record could not be read)")
    c.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    c.add_argument("--json", action="store_true", help="print what was done as one JSON document")
    c.add_argument("--check", action="store_true", help="write nothing: say whether the rows would change")
    c.set_defaults(func=cmd_add)

    c = commands.add_parser("reindex", parents=[db], help="rebuild the database from the run directories of the "
                                                          "results dir(s)")
    c.add_argument("--results", action="append", default=[], metavar="DIR",
                   help=f"a results dir (repeatable; default <checkout>/{RESULTS_NAME})")
    c.add_argument("--json", action="store_true", help="print what was done as one JSON document")
    c.set_defaults(func=cmd_reindex)
