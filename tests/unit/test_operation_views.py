"""An operation case's rows in compare-runs and history: each operator x dtype x oplib of two runs side by side with
its speed-up (the ratio of the work rates), the geometric mean of the roofline fraction as the case's figure and as
history's headline."""

from __future__ import annotations

import math
from pathlib import Path

from case_runners.views.compare.runs import FIGURES, ONE_ROUND, ROOFLINE_GEOMEAN, compare_summaries
from case_runners.views.compare.runs_text import render_text
from case_runners.views.history.cli import _table_row
from operation_rows import HARDWARE, row, run, standard_rows, summary_case

MM = {"flops": 2.0 * 4096 ** 3, "nbytes": 3.0 * 4096 ** 2 * 4, "shape": {"M": 4096, "N": 4096, "K": 4096}}


def faster_mm(rows: list[dict]) -> list[dict]:
    """The rows with native mm FP32 twice as fast (1 ms instead of 2)."""
    return [row("mm", "FP32", "native", 1e-3, **MM) if (r["op"], r["dtype"], r["oplib"]) == ("mm", "FP32", "native")
            else r for r in rows]


def test_two_runs_operators_side_by_side_with_the_speed_up(tmp_path: Path):
    correct = [r for r in standard_rows() if r["correct"]]  # an incorrect row leaves the case no geometric mean
    base = run(tmp_path / "run1", [summary_case(correct)])
    later = run(tmp_path / "run2", [summary_case(faster_mm(correct))])
    found = compare_summaries([(base.run_dir, base.summary), (later.run_dir, later.summary)])
    (match,) = found.matches
    rows = {r.figure: r for r in match.rows}
    assert [name for name in rows if name.startswith("mm ")] == [
        "mm FP32 native", "mm FP32 flag_gems", "mm BF16 native", "mm BF16 flag_gems"]
    mm = rows["mm FP32 native"]
    assert mm.unit == "FLOP/s" and mm.better == FIGURES["operator"][0] == "higher"
    assert math.isclose(mm.others[0].ratio or 0, 2.0) and mm.others[0].verdict == ONE_ROUND
    assert rows["add FP32 native"].unit == "B/s" and math.isclose(rows["add FP32 native"].others[0].ratio or 0, 1.0)
    geomean = rows[ROOFLINE_GEOMEAN]
    assert geomean.unit == "fraction" and (geomean.others[0].ratio or 0) > 1.0
    text = render_text(found)
    assert "mm FP32 native" in text and "2.000" in text and ROOFLINE_GEOMEAN in text


def test_a_later_runs_rows_are_read_in_the_baselines_units_whatever_bounds_them_on_its_chip(tmp_path: Path):
    """Which roof bounds a row is the chip's: add is memory-bound on the H100 (B/s) and compute-bound on a chip of
    a far lower peak. Its work rate is compared in the baseline's unit, so the ratio is still the speed-up."""
    slow_peak = {**HARDWARE, "peak_flops": {k: v / 1e4 for k, v in HARDWARE["peak_flops"].items()}}
    add = {"flops": 2.0 ** 28, "nbytes": 3.0 * 2 ** 28 * 4, "shape": {"Melements": 256}}
    base = run(tmp_path / "run1", [summary_case([row("add", "FP32", "native", 2e-3, **add)])])
    fast = row("add", "FP32", "native", 1e-3, hardware=slow_peak, **add)
    assert fast["bound"] == "compute"
    later = run(tmp_path / "run2", [summary_case([fast])], hardware=slow_peak)
    (match,) = compare_summaries([(base.run_dir, base.summary), (later.run_dir, later.summary)]).matches
    added = next(r for r in match.rows if r.figure == "add FP32 native")
    assert added.unit == "B/s" and math.isclose(added.others[0].ratio or 0, 2.0)


def test_history_shows_an_operation_round_s_roofline_geomean_and_none_with_an_incorrect_operator():
    rows = [r for r in standard_rows() if r["correct"]]
    fractions = [r["roofline_fraction"] for r in rows]
    expected = math.exp(sum(map(math.log, fractions)) / len(fractions))
    entry = {"date": "2026-11-26 22:00:00", "run_id": "run1", "case_id": "operators_H100x1x1", "round": 1,
             "status": "success", "standard": True, "vendor": "nvidia", "hardware": "H100", "nnodes": 1, "nproc": 1,
             "task": "operation", "metrics": {"operation": rows, "mfu": None}}
    assert _table_row(entry)[-1] == f"{expected * 100:.2f}%"
    assert _table_row({**entry, "metrics": {"operation": [], "mfu": None}})[-1] == "-"
    # flag_gems' BF16 add is wrong: leaving it out would score the broken run over the same chip's clean one
    assert _table_row({**entry, "status": "not_converged", "metrics": {"operation": standard_rows(), "mfu": None}}
                      )[-1] == "-"


def test_a_row_without_a_max_error_reads_as_an_infinity_or_nan_against_its_tolerance():
    from case_runners.views.report.operation_section import correctness

    wrong = row("exp", "BF16", "native", 1e-3, 2.0 ** 20, 2.0 ** 22, correct=False, max_error=None, tolerance=1e-3)
    assert correctness(wrong) == "INCORRECT (max error inf/nan, atol 0.001, rtol 0.001)"
