"""The report's operator section (task operation): per case a roofline plot (each operator row's arithmetic
intensity against its achieved FLOP/s, under the vendor's roofs) and a table per operator, its oplibs side by side
(latency, achieved, fraction of the roofline, correctness) with the library's speed-up over native. An incorrect
row is listed in red above the tables and marked in its table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from case_runners.plan.config.benchmarks import FLOP_S
from case_runners.plan.config.resolved import OPERATION
from case_runners.views.compare.operators import (
    NATIVE,
    case_roofs,
    case_rows,
    oplib_order,
    positive,
    rate,
    row_name,
)
from case_runners.views.report import html, plots
from case_runners.views.report.data import NONE, RunData, scale_label
from case_runners.views.summary import base_rows
from case_runners.views.summary.operation_rows import error_text

NOTE = ("Each operator at its shape and dtype, once per oplib (native: PyTorch's own kernels; a library replaces "
        "them): warm latency median and p99 on the host clock (the device's median where the runtime gives "
        "events), achieved FLOP/s (bytes/s for an operator without FLOPs), the fraction of the roofline (the "
        "vendor's peak FLOP/s or its memory bandwidth x the intensity, whichever is lower) and the correctness "
        "against a float64 reference (max error against the dtype's tolerance). Speed-up: native's median latency "
        "over the library's. The plot: a point per row, a marker per oplib, a colour per dtype with its roof, a red "
        "cross on an incorrect row.")


def duration(seconds: Any) -> str:
    """A latency as people read it: µs, ms or s."""
    value = positive(seconds)
    if value is None:
        return NONE
    if value < 1e-3:
        return f"{value * 1e6:.1f} µs"
    return f"{value * 1e3:.2f} ms" if value < 1 else f"{value:.3f} s"


def correctness(row: Mapping[str, Any]) -> str:
    """A row's correctness cell: "ok (max error 1e-07, atol 1e-05, rtol 1e-05)", or "INCORRECT (max error 0.5, ...)"."""
    verdict = "ok" if row.get("correct") is True else "INCORRECT"
    return f"{verdict} ({error_text(row.get('max_error'), row.get('tolerance'))})"


def _shape(row: Mapping[str, Any]) -> str:
    shape = row.get("shape")
    return ", ".join(f"{key}={value}" for key, value in shape.items()) if isinstance(shape, dict) and shape else NONE


def _latency(row: Mapping[str, Any]) -> str:
    text = f"{duration(row.get('latency_median_s'))} / {duration(row.get('latency_p99_s'))}"
    device = positive(row.get("device_median_s"))
    return text + (f" (device {duration(device)})" if device is not None else "")


def _achieved(row: Mapping[str, Any]) -> str:
    value, unit = rate(row)
    return base_rows.human(value, unit)


def _fraction(row: Mapping[str, Any]) -> str:
    value, bound = positive(row.get("roofline_fraction")), row.get("bound")
    if value is None:
        return NONE
    return f"{value * 100:.1f} % ({bound})" if bound else f"{value * 100:.1f} %"


def _speedup(row: Mapping[str, Any]) -> str:
    value = positive(row.get("speedup"))
    return NONE if value is None else f"{value:.2f}x"


def operator_table(op: str, rows: list[dict[str, Any]]) -> str:
    """One operator's table: a line per dtype, each oplib's latency (median / p99), achieved, roofline fraction and
    correctness side by side, then each library's speed-up over native."""
    oplibs = oplib_order(rows)
    libraries = [name for name in oplibs if name != NATIVE]
    header = ["dtype", "shape"]
    for name in oplibs:
        header += [f"{name} median / p99", f"{name} achieved", f"{name} of roofline", f"{name} correct"]
    header += [f"{name} speed-up" for name in libraries]
    lines, bad = [], []
    for dtype in dict.fromkeys(str(row["dtype"]) for row in rows):
        mine = {row["oplib"]: row for row in rows if row["dtype"] == dtype}
        first = next(iter(mine.values()))
        line = [dtype, _shape(first)]
        for name in oplibs:
            row = mine.get(name)
            line += [_latency(row), _achieved(row), _fraction(row), correctness(row)] if row else [NONE] * 4
            if row and row.get("correct") is not True:
                bad.append(correctness(row))
        line += [_speedup(mine[name]) if name in mine else NONE for name in libraries]
        lines.append(line)
    return html.heading(op, 4) + html.table(header, lines, bad_values=bad)


def _roofline(run: RunData, case: Any, rows: list[dict[str, Any]], title: str) -> list[str]:
    roofs = case_roofs(run.run_dir, case.case_id, case.hardware)
    points = [plots.Point(str(row["oplib"]), str(row["dtype"]), intensity, achieved, row.get("correct") is True)
              for row in rows
              if (intensity := positive(row.get("intensity"))) and (achieved := positive(row.get("flops_per_s")))]
    notes = [html.para(f"{title}: {note}.", "note") for note in roofs.notes]
    if not points:
        return [*notes, html.empty(f"{title}: no row has a FLOP count and a time: nothing to plot.")]
    peaks = {dtype: peak for dtype in dict.fromkeys(p.dtype.lower() for p in points)
             if (peak := roofs.peak(dtype)) is not None}
    shown = ", ".join(f"{dtype} {base_rows.human(peak, FLOP_S)}" for dtype, peak in peaks.items())
    memory = f"memory {base_rows.human(roofs.bandwidth, 'B/s')}" if roofs.bandwidth else ""
    roofs_line = "; ".join(x for x in (shown, memory) if x)
    return [html.image(plots.roofline_chart(points, peaks, roofs.bandwidth, f"Roofline, {title}"),
                       f"roofline of {title}"),
            *([html.para(f"Roofs: {roofs_line}.", "note")] if roofs_line else []), *notes]


def operation_section(runs: list[RunData]) -> str | html.Omitted:
    cases = [(run, case) for run in runs for case in run.summary.cases if case.task == OPERATION]
    if not cases:
        return html.Omitted("no operation case (task operation: single operators against the roofline)")
    parts = [html.para(NOTE)]
    for run, case in cases:
        title = scale_label(case) + (f" ({run.run_id})" if len(runs) > 1 else "")
        rows = case_rows(case)
        parts.append(html.heading(title))
        if not rows:
            parts.append(html.empty(f"{title}: no valid round: no operator row."))
            continue
        wrong = [f"{row_name(row)}: {error_text(row.get('max_error'), row.get('tolerance'))}"
                 for row in rows if row.get("correct") is not True]
        if wrong:
            parts += [html.para(f"Incorrect: {len(wrong)} of {len(rows)} operator row(s) of {title} do not match the "
                                "float64 reference:", "warn"), *(html.para(line, "warn") for line in wrong)]
        parts += _roofline(run, case, rows, title)
        parts += [operator_table(op, [row for row in rows if row["op"] == op])
                  for op in dict.fromkeys(str(row["op"]) for row in rows)]
    return "".join(parts)
