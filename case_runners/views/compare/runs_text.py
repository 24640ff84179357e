"""compare-runs' comparison as text: the runs, a table per matched case and scale (mean ±std (n) of each run, the
ratio to the baseline and the verdict), what was skipped, and the regressions."""

from __future__ import annotations

from case_runners.core.text import text_columns
from case_runners.records.summary import Stat
from case_runners.views.compare.runs import FRACTION, CaseSide, Match, Row, RunComparison, Skipped, key_text
from case_runners.views.summary import base_rows


def _number(value: float) -> str:
    return f"{value:.1f}" if abs(value) >= 100 else f"{value:.4g}"


def display_unit(unit: str, reference: float | None) -> tuple[float, str]:
    """(the factor a value is multiplied by, the unit it is shown in): a fraction as a percentage; bytes, FLOP/s and
    B/s as the base table shows `reference` (the baseline's mean)."""
    if unit == FRACTION:
        return 100.0, "%"
    divisor, shown, _ = base_rows.display_unit(abs(reference or 0.0), unit)
    return 1 / divisor, shown


def stat_text(stat: Stat, factor: float = 1.0) -> str:
    """mean ±std (n), or "-" without a value."""
    if stat.mean is None:
        return "-"
    text = _number(stat.mean * factor)
    if stat.n > 1:
        text += f" ±{_number((stat.std or 0.0) * factor)}"
    return f"{text} ({stat.n})"


def side_text(side: CaseSide) -> str:
    """A run's case in a match: its case id, vendor and hardware, valid rounds and the params that differ."""
    about = f"{side.vendor} {side.hardware}, {side.valid_rounds} valid round(s)" + \
        ("" if side.standard else ", non-standard")
    diff = "; ".join(f"{key} {values[0]!r} -> {values[1]!r}" for key, values in side.differences.items())
    return f"#{side.run + 1} {side.case_id} ({about})" + (f"; params that differ: {diff}" if diff else "")


def match_header(match: Match) -> tuple[list[str], list[str]]:
    """A match's table header: the columns (figure, unit, the baseline, then per later run its value, ratio and
    verdict), and under them each run's vendor and hardware."""
    first = ["figure", "unit", f"#1 {match.sides[0].run_id or '-'}"]
    second = ["", "", f"{match.sides[0].vendor} {match.sides[0].hardware}"]
    for side in match.sides[1:]:
        first += [f"#{side.run + 1} {side.run_id or '-'}", f"#{side.run + 1}/#1", f"#{side.run + 1} verdict"]
        second += [f"{side.vendor} {side.hardware}", "", ""]
    return first, second


def row_cells(row: Row) -> list[str]:
    """A figure's row: its name, the unit it is shown in, the baseline's value, then each later run's value, ratio
    and verdict."""
    factor, unit = display_unit(row.unit, row.baseline.mean)
    cells = [row.figure, unit, stat_text(row.baseline, factor)]
    for cell in row.others:
        cells += [stat_text(cell.stat, factor), "-" if cell.ratio is None else f"{cell.ratio:.3f}", cell.verdict]
    return cells


def skipped_text(skipped: Skipped) -> str:
    return f"#{skipped.run + 1} {skipped.run_id} {skipped.case_id}: {skipped.reason}"


def render_text(found: RunComparison) -> str:
    """The comparison as a person reads it: the runs, a table per matched case and scale, what was skipped, and the
    regressions --fail-on-regression found."""
    lines = [f"compare-runs: {len(found.runs)} runs, #1 the baseline"]
    lines += ["  " + line for line in text_columns(
        ["run", "id", "path"], [[f"#{i + 1}", run.run_id or "-", run.path] for i, run in enumerate(found.runs)])[1:]]
    lines.append(f"noise: {found.noise_rule}")
    for match in found.matches:
        lines += ["", key_text(match.key)]
        lines += [f"  {side_text(side)}" for side in match.sides]
        first, second = match_header(match)
        header, *body = text_columns(first, [second, *(row_cells(row) for row in match.rows)])
        lines += ["  " + line for line in (header, body[0], "-" * len(header), *body[1:])]
    if found.skipped:
        lines += ["", "skipped (nothing to compare with):",
                  *(f"  {skipped_text(s)}" for s in found.skipped)]
    if found.fail_on_regression is not None:
        limit = f"{found.fail_on_regression:g} %"
        if found.noise_unknown:
            lines += ["", f"noise unknown: worse than the baseline by more than {limit}, with one round on a side "
                          "(not failed):", *(f"  {line}" for line in found.noise_unknown)]
        if found.regressions:
            lines += ["", f"REGRESSION: worse than the baseline by more than {limit}:",
                      *(f"  {line}" for line in found.regressions)]
        else:
            lines += ["", f"no regression: no figure worse than the baseline by more than {limit} beyond the noise" +
                      ("; the figures above were not judged (noise unknown: one round)" if found.noise_unknown
                       else "")]
    return "\n".join(lines)
