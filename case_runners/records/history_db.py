"""The history database: one table, `rounds`, one row per round (COLUMNS), its schema version in `PRAGMA
user_version` and perfplay's mark in `PRAGMA application_id`.

Opening a database applies the MIGRATIONS it lacks, in order, in one transaction; a database written by a newer
perfplay (a higher version) is refused, naming both versions and the file. Every write is one transaction that
waits up to BUSY_TIMEOUT_S for another writer (two runs finishing at once both land).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from case_runners.core import files
from case_runners.core.errors import PerfplayError
from case_runners.core.paths import results_root

DB_NAME = "perfplay.sqlite"  # in the results dir: <checkout>/results/perfplay.sqlite by default
APPLICATION_ID = 0x70657266  # "perf": PRAGMA application_id of a perfplay history database
BUSY_TIMEOUT_S = 60.0
# A round's row: which run and round, what ran, how it ended, and its figures and environment (JSON text).
COLUMNS = ("run_id", "run_dir", "case_id", "case", "task", "vendor", "hardware", "nnodes", "nproc", "round", "status",
           "reason", "standard", "non_standard", "date", "metrics", "environment")
JSON_COLUMNS = ("non_standard", "metrics", "environment")
# Each version's statements, applied in order to a database of the version before; never edit one, add one.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    ("""CREATE TABLE rounds (
            run_id TEXT NOT NULL, run_dir TEXT NOT NULL, case_id TEXT NOT NULL, "case" TEXT NOT NULL,
            task TEXT NOT NULL, vendor TEXT, hardware TEXT, nnodes INTEGER NOT NULL, nproc INTEGER NOT NULL,
            round INTEGER NOT NULL, status TEXT NOT NULL, reason TEXT, standard INTEGER NOT NULL,
            non_standard TEXT NOT NULL, date TEXT, metrics TEXT NOT NULL, environment TEXT,
            PRIMARY KEY (run_dir, case_id, round))""",),
    ("CREATE INDEX rounds_by_run_id ON rounds (run_id)",  # version 2: what lookups and `list` filter on
     "CREATE INDEX rounds_by_date ON rounds (date)"),
)
SCHEMA_VERSION = len(MIGRATIONS)
Row = dict[str, Any]  # a round's row: COLUMNS, standard a bool and the JSON columns as values


class HistoryError(PerfplayError):
    """A history database that cannot be used (named), or a run that cannot be indexed."""


def default_db(results_dir: Path | None = None) -> Path:
    """The database of `results_dir` (default: the checkout's results/): perfplay.sqlite in it."""
    return (results_dir or results_root()) / DB_NAME


def _quoted(names: tuple[str, ...]) -> str:
    return ", ".join(f'"{name}"' for name in names)


def _stored(row: Row) -> tuple[Any, ...]:
    """A row as the table holds it: standard 0 or 1, the JSON columns as text (keys sorted: one text per value)."""
    return tuple(int(row[c]) if c == "standard" else
                 None if c == "environment" and row[c] is None else
                 json.dumps(row[c], sort_keys=True) if c in JSON_COLUMNS else row[c] for c in COLUMNS)


def _loaded(values: tuple[Any, ...]) -> Row:
    row = dict(zip(COLUMNS, values))
    row["standard"] = bool(row["standard"])
    for column in JSON_COLUMNS:
        row[column] = None if row[column] is None else json.loads(row[column])
    return row


def version_problem(path: Path, found: int) -> str | None:
    """Why a database of schema version `found` cannot be used by this perfplay, or None."""
    if found > SCHEMA_VERSION:
        return (f"{path}: written by a newer perfplay (history schema version {found}; this perfplay reads versions "
                f"up to {SCHEMA_VERSION}): use that perfplay, or give another --db (perfplay_history_db)")
    return None


def _pragma(conn: sqlite3.Connection, name: str) -> int:
    return int(conn.execute(f"PRAGMA {name}").fetchone()[0])


def _check_ours(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse another program's database: another application id, or tables of its own and no version."""
    application = _pragma(conn, "application_id")
    if application not in (0, APPLICATION_ID):
        raise HistoryError(f"{path}: not a perfplay history database (SQLite application id {application:#x})")
    if application == 0 and schema_version(conn) == 0:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        if tables:
            raise HistoryError(f"{path}: not a perfplay history database (it has tables of its own: "
                               f"{', '.join(sorted(tables))})")


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Apply the migrations the database lacks, in one transaction (another process may be doing the same: the
    version is read again once the write lock is held)."""
    problem = version_problem(path, schema_version(conn))
    if problem:
        raise HistoryError(problem)
    if schema_version(conn) == SCHEMA_VERSION:
        _check_ours(conn, path)
        return
    with transaction(conn):
        _check_ours(conn, path)
        found = schema_version(conn)
        problem = version_problem(path, found)
        if problem:
            raise HistoryError(problem)
        for statements in MIGRATIONS[found:]:
            for statement in statements:
                conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction: the write lock taken at once (waiting for another writer), committed or rolled back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextlib.contextmanager
def opened(path: Path, *, create: bool = True, read_only: bool = False) -> Iterator[sqlite3.Connection]:
    """The database at `path`, at this perfplay's schema version (migrated from an older one); created with its
    folder when `create` and missing. `read_only`: opened as it is, for reading, never migrated (schema_version
    says which it is). HistoryError naming the file for any database error."""
    path = Path(path)
    try:
        if not read_only:  # its folder: made private where missing, else one no other user can change
            files.secure_dir(path.parent)
        if path.is_dir():
            raise HistoryError(f"{path}: is a directory, not a history database")
        created = not path.exists()
    except OSError as exc:
        raise HistoryError(f"{path}: cannot be opened: {files.describe_os_error(exc, path)}") from None
    if created and (not create or read_only):
        raise HistoryError(f"{path}: no history database there (a run, `history add` or `history reindex` "
                           "makes one)")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro" if read_only else path, uri=read_only,
                               timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as exc:
        raise HistoryError(f"{path}: cannot be opened: {exc}") from None
    try:
        if read_only:
            problem = version_problem(path, schema_version(conn))
            if problem:
                raise HistoryError(problem)
            _check_ours(conn, path)
        else:
            try:
                _migrate(conn, path)
            except BaseException:
                conn.close()
                if created:
                    _remove_if_empty(path)
                raise
        yield conn
    except sqlite3.Error as exc:
        raise HistoryError(f"{path}: {exc}") from None
    finally:
        conn.close()


def _remove_if_empty(path: Path) -> None:
    """Remove a database this call created and could not even give its schema (a full disk): no empty file left."""
    with contextlib.suppress(OSError):
        if path.stat().st_size == 0:
            path.unlink()


def schema_version(conn: sqlite3.Connection) -> int:
    return _pragma(conn, "user_version")


def path_problems(path: Path) -> list[str]:
    """Why a run could not index into the database at `path`, read without writing: a directory, another
    program's database, or one of a newer schema version. [] for a database this perfplay can use, or none yet."""
    path = Path(path)
    if not path.is_dir() and not path.exists():
        return []
    try:
        with opened(path, read_only=True):
            return []
    except HistoryError as exc:
        return [str(exc)]


def run_rows(conn: sqlite3.Connection, run_dir: str) -> list[Row]:
    return [_loaded(v) for v in conn.execute(
        f"SELECT {_quoted(COLUMNS)} FROM rounds WHERE run_dir = ? ORDER BY case_id, round", (run_dir,))]


def replace_run(conn: sqlite3.Connection, run_dir: str, rows: list[Row], *, write: bool = True) -> bool:
    """Make `rows` the rows of the run `run_dir`, in one transaction. True when that changed the table (False when
    it held them already; with write False, whether it would)."""
    new = {_stored(row) for row in rows}
    if not write:
        return {_stored(row) for row in run_rows(conn, run_dir)} != new
    with transaction(conn):
        old = set(conn.execute(f"SELECT {_quoted(COLUMNS)} FROM rounds WHERE run_dir = ?", (run_dir,)))
        if old == new:
            return False
        conn.execute("DELETE FROM rounds WHERE run_dir = ?", (run_dir,))
        _insert(conn, new)
    return True


def rebuild(conn: sqlite3.Connection, rows: list[Row]) -> None:
    """Make `rows` the whole table, in one transaction."""
    with transaction(conn):
        conn.execute("DELETE FROM rounds")
        _insert(conn, {_stored(row) for row in rows})


def _insert(conn: sqlite3.Connection, stored: set[tuple[Any, ...]]) -> None:
    ordered: list[tuple[Any, ...]] = sorted(stored, key=_order)
    conn.executemany(f"INSERT INTO rounds ({_quoted(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})", ordered)


def _order(values: tuple[Any, ...]) -> tuple[str, str, int]:
    """A stored row's key: run directory, case id, round."""
    row = dict(zip(COLUMNS, values))
    return str(row["run_dir"]), str(row["case_id"]), int(row["round"])


# `list`'s filters: name -> the condition on a row (one ? for the value).
FILTERS = {"case": '("case" = ? OR case_id = ?)', "vendor": "vendor = ?", "hardware": "hardware = ?",
           "task": "task = ?", "status": "status = ?", "since": "date >= ?", "until": "date <= ?",
           "run_id": "run_id = ?"}


def select(conn: sqlite3.Connection, **filters: Any) -> list[Row]:
    """The rows that pass every filter given (FILTERS; None: not given), by date, run, case and round."""
    where, values = [], []
    for name, value in filters.items():
        if value is None:
            continue
        if name not in FILTERS:
            raise HistoryError(f"unknown filter {name!r} (known: {', '.join(FILTERS)})")
        where.append(FILTERS[name])
        values += [value] * FILTERS[name].count("?")
    query = f"SELECT {_quoted(COLUMNS)} FROM rounds" + (f" WHERE {' AND '.join(where)}" if where else "")
    return [_loaded(v) for v in conn.execute(query + " ORDER BY date, run_id, run_dir, case_id, round", values)]
