"""The base benchmarks in the run summary: each base case's headlines over its valid rounds (records/summary.py
BaseRow) and the measurements of its last valid round. Their text and Markdown: views/summary/base_rows.py."""

from __future__ import annotations

from typing import Any

from case_runners.records import names
from case_runners.records.base import Headline, Measurement
from case_runners.records.round import RoundRecord
from case_runners.records.schema import ABSENT
from case_runners.records.summary import BaseRow, Stat


def base_rows(records: list[Any]) -> list[BaseRow]:
    """A base case's headlines over its valid rounds (records: its rounds, any status), in the order measured."""
    found: dict[tuple[str, str, str, object], dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: r.round):
        if record.status not in names.VALID_STATUSES or not isinstance(record, RoundRecord):
            continue
        for doc in record.metrics.get("headlines") or []:
            line = Headline.from_json(doc)
            entry = found.setdefault((line.benchmark, line.kind, line.stat, line.source),
                                     {"line": line, "achieved": [], "fraction": []})
            entry["line"] = line  # the last valid round's size, peak and reason
            entry["achieved"].append(line.achieved)
            if line.fraction_of_peak is not None:
                entry["fraction"].append(line.fraction_of_peak)
    rows = []
    for entry in found.values():
        line = entry["line"]
        rows.append(BaseRow(benchmark=line.benchmark, kind=line.kind, stat=line.stat, size=line.size, unit=line.unit,
                            achieved=Stat.of(entry["achieved"]), peak=line.peak, peak_key=line.peak_key,
                            fraction_of_peak=Stat.of(entry["fraction"]),
                            reason=line.reason if isinstance(line.reason, str) else None,
                            **({} if line.source is ABSENT else {"source": line.source})))
    return rows


def last_measurements(records: list[Any]) -> list[Measurement]:
    """The measurements of a base case's last valid round (its rounds, any status)."""
    valid = [r for r in records if isinstance(r, RoundRecord) and r.status in names.VALID_STATUSES]
    last = max(valid, key=lambda r: r.round, default=None)
    return [Measurement.from_json(doc) for doc in (last.metrics.get("measurements") or [])] if last else []
