"""The operation task in the run summary as text: the table the play prints and the Markdown of summary.md, one
line per operator and dtype with the native side and each library side by side (correct, median latency, FLOP/s,
roofline fraction, the library's speed-up), from each operation case's rows (records/operation.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from case_runners.core.text import number_text, text_columns
from case_runners.records import names
from case_runners.records.operation import NATIVE, OperationRow
from case_runners.records.summary import RunSummary, SummaryCase

TITLE = ("operation (median latency over warm calls, us; FLOP/s over it; roof = fraction of the roofline at the "
         "operator's intensity; speed-up = native median / library median; correct against float64 on the CPU)")
NOTE = ("Each operator in each dtype, natively and with the operator library: correct = every element within the "
        "tolerance of the float64 CPU reference; the median of the warm calls (the device's events where the "
        "vendor's runtime has them, else the host clock around synchronize); FLOP/s as FlagPerf counts them; roof = "
        "FLOP/s over min(peak FLOP/s, intensity x memory bandwidth) of vendor.yaml; speed-up = the native median "
        "over the library's.")
INCORRECT = "NO"  # an incorrect side's "ok" cell


def _side(row: OperationRow | None) -> list[str]:
    if row is None:
        return ["-"] * 4
    seconds = row.device_median_s if row.device_median_s is not None else row.latency_median_s
    return ["yes" if row.correct else INCORRECT, number_text(seconds * 1e6, 1),
            f"{row.flops_per_s / 1e9:.2f}G", "-" if row.roofline_fraction is None else f"{row.roofline_fraction:.1%}"]


def _cases(summary: RunSummary) -> list[SummaryCase]:
    return [c for c in summary.cases if c.task == names.OPERATION and isinstance(c.operation, list)]


def _rows(case: SummaryCase) -> list[OperationRow]:
    return case.operation if isinstance(case.operation, list) else []


def _libraries(summary: RunSummary) -> list[str]:
    return list(dict.fromkeys(r.oplib for c in _cases(summary) for r in _rows(c) if r.oplib != NATIVE))


def columns(summary: RunSummary) -> list[str]:
    found = ["case", "op", "dtype", "native ok", "us", "FLOP/s", "roof"]
    for lib in _libraries(summary):
        found += [f"{lib} ok", "us", "FLOP/s", "roof", "speed-up"]
    return found


def table_rows(summary: RunSummary) -> list[list[str]]:
    """One row per operator x dtype of every operation case: native, then each library."""
    libraries, rows = _libraries(summary), []
    for case in _cases(summary):
        by_side = {(r.op, r.dtype, r.oplib): r for r in _rows(case)}
        for op, dtype in dict.fromkeys((r.op, r.dtype) for r in _rows(case)):
            line = [case.case_id, op, dtype, *_side(by_side.get((op, dtype, NATIVE)))]
            for lib in libraries:
                row = by_side.get((op, dtype, lib))
                line += [*_side(row), "-" if row is None or row.speedup is None else f"{row.speedup:.2f}x"]
            rows.append(line)
    return rows


def error_text(max_error: Any, tolerance: Any) -> str:
    """A row's max error against its tolerance as every view says it: "max error 0.5 > atol 0.01, rtol 0.016" (a
    null max error: an infinity or NaN where the reference has none)."""
    error = "inf/nan" if max_error is None else f"{max_error:.6g}" if isinstance(max_error, (int, float)) else "-"
    limits = tolerance if isinstance(tolerance, Mapping) else {}
    return f"max error {error}, atol {limits.get('atol', '-')}, rtol {limits.get('rtol', '-')}"


def _incorrect(summary: RunSummary) -> list[str]:
    return [f"{case.case_id}: NOT CORRECT: {r.op} {r.dtype} {r.oplib} ({error_text(r.max_error, r.tolerance)})"
            for case in _cases(summary) for r in _rows(case) if not r.correct]


def render_text(summary: RunSummary) -> list[str]:
    """The operation table for the play's output, each incorrect row named below it."""
    rows = table_rows(summary)
    if not rows:
        return []
    line, *body = text_columns(columns(summary), rows)
    return [TITLE, line, "-" * len(line), *body, *(f"  {note}" for note in _incorrect(summary))]


def render_markdown(summary: RunSummary) -> list[str]:
    rows = table_rows(summary)
    if not rows:
        return []
    header = columns(summary)
    return ["", "## Operation", "", NOTE, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows), "", *(f"- {note}" for note in _incorrect(summary))]


def case_markdown(case: SummaryCase) -> list[str]:
    """An operation case's section of summary.md: its rounds."""
    lines = ["| round | status | e2e s | reason |", "|---|---|---|---|"]
    lines += [f"| {r['round']} | {r['status']} | {number_text(r.get('e2e_time'), 2)} | {r['reason'] or ''} |"
              for r in case.rounds]
    return lines
