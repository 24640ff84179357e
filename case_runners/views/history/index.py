"""A run directory as history rows, one per round (db.COLUMNS), read through the run summary's reader
(records/summary_build.py's load_records): a round whose round record cannot be read is reported by file and
reason, with a row whose status is `unreadable`, and the rest is indexed; a round that never left a record is a row too
(`interrupted`, `missing`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from case_runners.core import run_ids
from case_runners.core.errors import PerfplayError
from case_runners.monitors.spec import MonitorSpec
from case_runners.records import names
from case_runners.records.history_db import COLUMNS, HistoryError, Row
from case_runners.records.round_build import node_dirs
from case_runners.records.run_dir import check_run_dir as shared_check
from case_runners.records.schema import ABSENT, RecordError, read_json
from case_runners.records.summary_build import Round, StandIn, load_records

DATE_FORMAT = "%Y-%m-%d %H:%M:%S"  # a row's date: the run's start, local time, as text that sorts


def check_run_dir(path: Path) -> Path:
    """`path`, absolute, when it is a run directory (a <case_id>/resolved_config.json in it); HistoryError naming it
    otherwise."""
    try:
        return shared_check(path).resolve()
    except PerfplayError as exc:
        raise HistoryError(str(exc)) from None


def run_date(run_dir: Path) -> str | None:
    """When the run started: from its generated run id, else the earliest start of a monitor of its rounds (its
    host monitor's sys_info.json); None when neither says."""
    stamped = run_ids.started(run_dir.name)
    if stamped is not None:
        return time.strftime(DATE_FORMAT, stamped)
    started = []
    for round_dir in run_dir.glob("*/round*"):
        for _, _, node_dir in node_dirs(round_dir):
            try:
                info = read_json(MonitorSpec(node_dir, "host").sys_info_path)
            except RecordError:
                continue
            value = info.get("started") if isinstance(info, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                started.append(value)
    return time.strftime(DATE_FORMAT, time.localtime(min(started))) if started else None


def _row(run_dir: Path, date: str | None, record: Round) -> Row:
    metrics: dict[str, Any] = dict(record.metrics)
    metrics["mfu"] = record.mfu.value if record.mfu is not None else None
    environment = getattr(record, "environment", ABSENT)
    row = {"run_id": run_dir.name, "run_dir": str(run_dir), "case_id": record.case_id, "case": record.case,
           "task": record.task, "vendor": record.vendor, "hardware": record.hardware, "nnodes": record.nnodes,
           "nproc": record.nproc, "round": record.round, "status": record.status, "reason": record.reason,
           **record.standard_fields(), "date": date, "metrics": metrics,
           "environment": None if environment is ABSENT else environment.to_json()}
    return {column: row[column] for column in COLUMNS}


def index_run(run_dir: Path) -> tuple[Path, list[Row], list[str]]:
    """(the run directory, absolute; its rows by case and round; the problems: each unreadable round record, by
    file and reason). HistoryError naming `run_dir` when it is not a run directory."""
    run_dir = check_run_dir(run_dir)
    date = run_date(run_dir)
    records = sorted(load_records(run_dir), key=lambda r: (r.case_id, r.round))
    problems = [r.reason for r in records if isinstance(r, StandIn) and r.status == names.UNREADABLE]
    return run_dir, [_row(run_dir, date, r) for r in records], problems
