"""Runs named on a command line: a run directory, or a run id looked up in the history database."""

from __future__ import annotations

import argparse
from pathlib import Path

from case_runners.core.errors import PerfplayError
from case_runners.core.paths import RESULTS_NAME
from case_runners.records.history_db import DB_NAME, default_db, opened, select


def run_dirs(refs: list[str], db: Path | None = None) -> list[Path]:
    """Each ref's run directory, in order: an existing directory as it is, a ref without a slash a run id of the
    history database `db` (default: the checkout's results/perfplay.sqlite). PerfplayError naming a path that is no
    directory, a ref that is neither, or a run id that names runs in more than one directory."""
    found: list[Path] = []
    for ref in refs:
        if "/" in ref and not Path(ref).is_dir():  # a path (a run id has no slash)
            raise PerfplayError(f"{ref}: no such directory")
    ids = [ref for ref in refs if not Path(ref).is_dir()]
    known: dict[str, list[str]] = {}
    if ids:
        db = db or default_db()
        try:
            with opened(db, create=False) as conn:
                for ref in dict.fromkeys(ids):
                    known[ref] = sorted({row["run_dir"] for row in select(conn, run_id=ref)})
        except PerfplayError as exc:
            raise PerfplayError(f"{', '.join(ids)}: not a directory, and the history database cannot say which "
                                f"run it is: {exc}") from None
    for ref in refs:
        if ref not in known:
            found.append(Path(ref))
        elif not known[ref]:
            raise PerfplayError(f"{ref}: neither a directory nor a run id in the history database {db}")
        elif len(known[ref]) > 1:
            raise PerfplayError(f"{ref}: the history database {db} has runs of that id in more than one directory "
                                f"({', '.join(known[ref])}): give the directory")
        else:
            found.append(Path(known[ref][0]))
    return found


def add_run_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """The RUN... arguments of a command that reads runs (`what`: how it uses them), and --db for their run ids."""
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help=f"a run directory (results/<run_id>), or a run id of the history database; {what}")
    parser.add_argument("--db", metavar="PATH", help=f"the history database run ids are looked up in (default "
                                                     f"<checkout>/{RESULTS_NAME}/{DB_NAME})")


def runs_of(args: argparse.Namespace) -> list[Path]:
    """The run directories of add_run_arguments' arguments."""
    return run_dirs(args.runs, Path(args.db) if args.db else None)
