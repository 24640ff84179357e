"""The report's sections of the tasks that are not training: the base benchmarks (achieved figures per unit, and
the fraction of the vendor's peak) and generation (TTFT, TPOT and tokens/s per batch, prompt and output length).
Each chart has a group per headline or combination and a bar per run (or per statistic, for one run)."""

from __future__ import annotations

from case_runners.plan.config.benchmarks import TORCH
from case_runners.records import names
from case_runners.records.summary import BaseRow, GenerateRow, Stat, SummaryCase
from case_runners.records.summary_generate_rows import LATENCY_STATS
from case_runners.views.report import html, plots
from case_runners.views.report.data import RunData, scale_label
from case_runners.views.summary import base_rows, generate_rows

NUMBER = ",.4g"  # a bar's label: four significant figures (0.1234 TFLOP/s, 3,350 GB/s)


def _cases(runs: list[RunData], task: str) -> list[tuple[RunData, SummaryCase]]:
    return [(run, case) for run in runs for case in run.summary.cases if case.task == task]


def _chart(entries: list[tuple[str, str, Stat]], xlabel: str, title: str, divisor: float = 1.0,
           percent: bool = False, reference: float | None = None) -> str:
    """Bars of (series, group, stat) entries: a group per distinct group label, a bar in it per series."""
    groups = list(dict.fromkeys(group for _, group, _ in entries))
    series = []
    for label in dict.fromkeys(label for label, _, _ in entries):
        mine = {group: stat for name, group, stat in entries if name == label}
        stats = [mine.get(group, Stat.of([])) for group in groups]
        series.append(plots.Bars(label, [None if s.mean is None else s.mean / divisor for s in stats],
                                 [None if s.std is None else s.std / divisor for s in stats],
                                 ["no valid round" if g in mine else "" for g in groups]))
    if not any(m is not None for bars in series for m in bars.means):
        return ""
    return html.image(plots.bar_chart(groups, series, xlabel, title, percent=percent, reference=reference,
                                      number=NUMBER), title)


def _series(runs: list[RunData], run: RunData, one: str) -> str:
    """A bar's series: the run, where the report has several; else `one`."""
    return run.label if len(runs) > 1 else one


# -- base -------------------------------------------------------------------------------------------------------------

def _headline(case: SummaryCase, row: BaseRow) -> str:
    """A chart's group: the headline, "toolkit" in it where the vendor's toolkit measured it."""
    by = " toolkit" if base_rows.source(row) != TORCH else ""
    return f"{row.benchmark} {row.kind}{by} {row.stat} ({case.nnodes}x{case.nproc})"


def base_section(runs: list[RunData]) -> str | html.Omitted:
    if not _cases(runs, names.BASE):
        return html.Omitted("no base benchmark (task base: gemm, memory bandwidth, transfers, collectives)")
    parts = [html.para(base_rows.NOTE + " Whiskers: ± one standard deviation over the rounds (none with one "
                       "round).")]
    headlines = [(run, case, row) for run, case in _cases(runs, names.BASE) if isinstance(case.base, list)
                 for row in case.base]
    if not headlines:
        return "".join(parts + [html.empty("No base benchmark has a valid round: nothing to chart.")])
    charts = []
    for unit in dict.fromkeys(row.unit for _, _, row in headlines):
        entries = [(_series(runs, run, "achieved"), _headline(case, row), row.achieved)
                   for run, case, row in headlines if row.unit == unit]
        top = max((s.mean for _, _, s in entries if s.mean is not None), default=0.0)
        divisor, shown, _ = base_rows.display_unit(top, unit)
        charts.append(_chart(entries, f"achieved ({shown})", f"Base benchmarks, {shown}", divisor))
    fractions = [(_series(runs, run, "fraction of peak"), _headline(case, row), row.fraction_of_peak)
                 for run, case, row in headlines if row.fraction_of_peak.mean is not None]
    if fractions:
        charts.append(_chart(fractions, "fraction of the vendor's peak (%)",
                             "Base benchmarks against the vendor's peak", percent=True, reference=1.0))
    withheld = sorted({row.reason for _, _, row in headlines if row.reason and row.fraction_of_peak.mean is None})
    if withheld:
        parts.append(html.para("No fraction of peak: " + "; ".join(withheld) + ".", "note"))
    parts += [c for c in charts if c] or [html.empty("No base benchmark has a valid round: nothing to chart.")]
    return "".join(parts)


# -- generate ---------------------------------------------------------------------------------------------------------

def _combination(case: SummaryCase, row: GenerateRow) -> str:
    return f"{scale_label(case)} batch {row.batch}, prompt {row.prompt_len}, output {row.output_len}"


def generate_section(runs: list[RunData]) -> str | html.Omitted:
    if not _cases(runs, names.GENERATE):
        return html.Omitted("no generate case (task generate: LLM generation latency)")
    several = len(runs) > 1
    parts = [html.para(generate_rows.NOTE + " Whiskers: ± one standard deviation over the rounds." +
                       (" Several runs: the median (p50) of each run." if several else ""))]
    rows = [(run, case, row) for run, case in _cases(runs, names.GENERATE) if isinstance(case.generate, list)
            for row in case.generate]
    if not rows:
        return "".join(parts + [html.empty("No generate case has a valid round: nothing to chart.")])
    charts = []
    stats = ("p50",) if several else LATENCY_STATS  # several runs: a bar per run
    for title, figure in (("Time to first token", "ttft_ms"), ("Time per output token", "tpot_ms")):
        entries = [(_series(runs, run, stat), _combination(case, row), getattr(row, figure)[stat])
                   for run, case, row in rows for stat in stats]
        charts.append(_chart(entries, f"{title.lower()} (ms)", f"{title}, ms"))
    charts.append(_chart([(_series(runs, run, "tokens/s"), _combination(case, row), row.tokens_per_s)
                          for run, case, row in rows], "tokens/s", "Generation throughput, tokens/s"))
    parts += [c for c in charts if c] or [html.empty("No generate case has a valid round: nothing to chart.")]
    parts += [html.para(note, "note") for note in _agreements(rows)]
    return "".join(parts)


def _agreements(rows: list[tuple[RunData, SummaryCase, GenerateRow]]) -> list[str]:
    """What each case's engine agreement was: a share of tokens, or why there is none."""
    found: dict[str, str] = {}
    for run, case, row in rows:
        text = f"{row.agreement.mean * 100:.2f} % of tokens" if row.agreement.mean is not None else row.agreement_note
        found.setdefault(f"{case.case_id} ({run.run_id})", text)
    return [f"engine agreement, {where}: {text}" for where, text in found.items()]
