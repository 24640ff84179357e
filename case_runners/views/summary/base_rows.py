"""The base benchmarks in the run summary as text: the table the play prints and the Markdown of summary.md
(benchmark, precision or size, achieved, peak, fraction of peak), from each base case's rows
(records/summary_base_rows.py)."""

from __future__ import annotations

from case_runners.core.text import number_text, text_columns
from case_runners.plan.config.benchmarks import BYTES, BYTES_S, FLOP_S, TORCH
from case_runners.records import names
from case_runners.records.schema import ABSENT
from case_runners.records.summary import RunSummary, Stat, SummaryCase

COLUMNS = ("case", "rounds", "ok", "benchmark", "kind", "by", "stat", "size", "achieved", "peak", "fraction")
DETAIL_COLUMNS = ("kind", "by", "size", "achieved", "algbw", "seconds", "peak", "fraction")
NOTE = ("Achieved against the vendor's stated peak (vendor.yaml hardware.<HW>), mean ± std over valid rounds; best "
        "and median over the sizes each benchmark ran. GEMM FLOPs = 2·M·N·K; bandwidths count the bytes each "
        "benchmark's README states (collectives: nccl-tests' bus bandwidth). By: perfplay's torch benchmark, or the "
        "vendor's toolkit (its own program, below the framework).")


def source(item: object) -> str:
    """Who measured a figure (a Measurement, Headline or BaseRow): torch, or the vendor's toolkit."""
    found = getattr(item, "source", ABSENT)
    return TORCH if found is ABSENT else str(found)


def display_unit(value: float, unit: str) -> tuple[float, str, int]:
    """How people read a figure of `unit`, as (divisor, unit name, decimals): TFLOP/s or GFLOP/s, GB/s or MB/s
    (10^9, 10^6), GiB for a capacity. A figure's std is shown in its mean's."""
    if unit == FLOP_S:
        return (1e12, "TFLOP/s", 2) if value >= 1e11 else (1e9, "GFLOP/s", 1)
    if unit == BYTES_S:
        return (1e9, "GB/s", 2) if value >= 1e8 else (1e6, "MB/s", 1)
    if unit == BYTES:
        return float(2 ** 30), "GiB", 2
    return 1.0, unit, 4


def human(value: float | None, unit: str) -> str:
    """A figure in the unit people read it in (display_unit)."""
    if value is None:
        return "-"
    divisor, name, digits = display_unit(value, unit)
    return f"{value:.4g} {unit}" if divisor == 1.0 else f"{value / divisor:.{digits}f} {name}"


def _achieved(stat: Stat, unit: str) -> str:
    """mean ± std, both in the mean's unit and decimals."""
    if stat.mean is None:
        return "-"
    text = human(stat.mean, unit)
    if stat.n > 1:
        divisor, _, digits = display_unit(stat.mean, unit)
        text += f" ±{(stat.std or 0.0) / divisor:.{digits}f}"
    return text


def _fraction(stat: Stat, reason: str | None) -> str:
    if stat.mean is None:
        return "no peak" if reason else "-"
    text = f"{stat.mean * 100:.1f}%"
    return text + (f" ±{(stat.std or 0.0) * 100:.1f}" if stat.n > 1 else "")


def table_rows(summary: RunSummary) -> list[list[str]]:
    """One row per headline of every base case."""
    rows = []
    for case in summary.cases:
        if case.task != names.BASE or not isinstance(case.base, list):
            continue
        head = [case.case_id, str(len(case.rounds)), f"{case.succeeded}/{len(case.rounds)}"]
        if not case.base:
            rows.append([*head, case.case, "-", "-", "-", "-", "-", "-", case.status])
        for row in case.base:
            rows.append([*head, row.benchmark, row.kind, source(row), row.stat, row.size or "-",
                         _achieved(row.achieved, row.unit), human(row.peak, row.unit),
                         _fraction(row.fraction_of_peak, row.reason)])
    return rows


def render_text(summary: RunSummary) -> list[str]:
    """The base table for the play's output."""
    rows = table_rows(summary)
    if not rows:
        return []
    line, *body = text_columns(list(COLUMNS), rows)
    lines = ["base (achieved against the vendor's peak; best and median over sizes)", line, "-" * len(line), *body]
    reasons = sorted({f"  {row.reason}" for case in summary.cases if isinstance(case.base, list)
                      for row in case.base if row.reason and row.fraction_of_peak.mean is None})
    return lines + (["", "fraction withheld:", *reasons] if reasons else [])


def render_markdown(summary: RunSummary) -> list[str]:
    rows = table_rows(summary)
    if not rows:
        return []
    return ["", "## Base benchmarks", "", NOTE, "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS),
            *("| " + " | ".join(row) + " |" for row in rows)]


def case_markdown(case: SummaryCase) -> list[str]:
    """A base case's section of summary.md: its rounds, then every measurement of its last valid round."""
    lines = ["| round | status | e2e s | reason |", "|---|---|---|---|"]
    lines += [f"| {r['round']} | {r['status']} | {number_text(r.get('e2e_time'), 2)} | {r['reason'] or ''} |"
              for r in case.rounds]
    if not isinstance(case.measurements, list) or not case.measurements:
        return lines
    lines += ["", "Every measurement of the last valid round:", "", "| " + " | ".join(DETAIL_COLUMNS) + " |",
              "|" + "---|" * len(DETAIL_COLUMNS)]
    for m in case.measurements:
        algbw = human(m.algbw, m.unit) if m.algbw is not ABSENT else "-"
        fraction = "-" if m.fraction_of_peak is None else f"{m.fraction_of_peak * 100:.1f}%"
        lines.append(f"| {m.kind} | {source(m)} | {m.size} | {human(m.achieved, m.unit)} | {algbw} | "
                     f"{number_text(m.seconds, 6)} | {human(m.peak, m.unit)} | {fraction} |")
    return lines
