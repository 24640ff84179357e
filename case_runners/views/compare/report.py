"""The result of a comparison: one document (`perfplay.comparison/1`, what --json prints), its verdict, and the
table a person reads. PASS when the final metric's relative error and the mean relative error of the loss are both
within the tolerance; FAIL with each reason otherwise."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from case_runners.core.text import percent_text, text_columns
from case_runners.records.names import THROUGHPUTS
from case_runners.records.schema import Document, choices
from case_runners.views.compare.alignment import LossAlignment, relative_error
from case_runners.views.compare.rounds import RANK, Round

PASS, FAIL = "PASS", "FAIL"
EXIT_CODES = {PASS: 0, FAIL: 1}
MFU = "mfu"
PERFORMANCE = (*THROUGHPUTS, MFU)
TABLE_STEPS = 10  # loss rows the table shows at most (the JSON and the plot have every step)


@dataclasses.dataclass(kw_only=True)
class Side(Document):
    """One of the two rounds."""
    path: str  # the round directory
    run_id: str
    case_id: str
    vendor: str
    hardware: str
    framework: str | None
    status: str
    events: str  # the events file the loss curve was read from


@dataclasses.dataclass(kw_only=True)
class SideBySide(Document):
    reference: float | None
    candidate: float | None
    ratio: float | None  # candidate / reference; null where either is null or the reference is 0


@dataclasses.dataclass(kw_only=True)
class FinalMetric(Document):
    metric: str
    reference: float
    candidate: float
    relative_error: float


@dataclasses.dataclass(kw_only=True)
class LossPoint(Document):
    step: int
    reference: float
    candidate: float
    relative_error: float


@dataclasses.dataclass(kw_only=True)
class Comparison(Document):
    SCHEMA = "perfplay.comparison/1"

    verdict: str = dataclasses.field(metadata=choices(PASS, FAIL))
    reasons: list[str]  # why it failed: [] on PASS
    tolerance: float
    case: str
    reference: Side
    candidate: Side
    allowed_differences: dict[str, list[Any]]  # key -> [reference's value, candidate's]
    final_metric: FinalMetric
    from_step: int  # the first step aligned may be this or later (--from-step; 0: every step)
    aligned_steps: int
    loss_mean_relative_error: float
    loss_max_relative_error: float
    loss_max_error_step: int
    performance: dict[str, SideBySide]  # p_whole, p_train, p_core (samples/s), mfu
    loss: list[LossPoint]  # rank 0's, on the steps both logged

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]


def _side(run: Round) -> Side:
    record = run.record
    return Side(path=str(run.path), run_id=record.run_id, case_id=record.case_id, vendor=record.vendor,
                hardware=record.hardware, framework=record.framework, status=record.status, events=str(run.events))


def _side_by_side(reference: float | None, candidate: float | None) -> SideBySide:
    ratio = candidate / reference if reference and candidate is not None else None
    return SideBySide(reference=reference, candidate=candidate, ratio=ratio)


def _performance(run: Round) -> dict[str, float | None]:
    return {**{key: run.record.metrics[key] for key in THROUGHPUTS}, MFU: run.record.mfu.value}


def _within(error: float, tolerance: float) -> bool:
    return error <= tolerance  # False for nan


def reasons(final: FinalMetric, loss: LossAlignment, tolerance: float) -> list[str]:
    """Why the comparison fails: each value over the tolerance, by how much; [] when it passes."""
    found = []
    if not _within(final.relative_error, tolerance):
        found.append(f"final metric {final.metric}: relative error {percent(final.relative_error)} > tolerance "
                     f"{tolerance_text(tolerance)} (reference {final.reference:.6g}, "
                     f"candidate {final.candidate:.6g})")
    if not _within(loss.mean_error, tolerance):
        found.append(f"loss: mean relative error {percent(loss.mean_error)} over {len(loss.steps)} steps > "
                     f"tolerance {tolerance_text(tolerance)} (max {percent(loss.max_error)} at step "
                     f"{loss.max_error_step})")
    return found


def build(reference: Round, candidate: Round, loss: LossAlignment, tolerance: float,
          allowed: dict[str, tuple[Any, Any]], from_step: int = 0) -> Comparison:
    """The comparison of two rounds whose curves `loss` aligns (at least one step)."""
    worst = loss.max_error_step
    assert worst is not None, "build() wants at least one aligned step"
    metric = str(reference.record.metrics["metric"])
    ref_value, cand_value = reference.record.metrics["final_metric"], candidate.record.metrics["final_metric"]
    final = FinalMetric(metric=metric, reference=ref_value, candidate=cand_value,
                        relative_error=relative_error(cand_value, ref_value))
    why = reasons(final, loss, tolerance)
    ref_perf, cand_perf = _performance(reference), _performance(candidate)
    return Comparison(
        verdict=FAIL if why else PASS, reasons=why, tolerance=tolerance, case=reference.config.case,
        reference=_side(reference), candidate=_side(candidate),
        allowed_differences={key: list(values) for key, values in allowed.items()},
        final_metric=final, from_step=from_step, aligned_steps=len(loss.steps),
        loss_mean_relative_error=loss.mean_error, loss_max_relative_error=loss.max_error, loss_max_error_step=worst,
        performance={key: _side_by_side(ref_perf[key], cand_perf[key]) for key in PERFORMANCE},
        loss=[LossPoint(step=s, reference=r, candidate=c, relative_error=e)
              for s, r, c, e in zip(loss.steps, loss.reference, loss.candidate, loss.errors)])


def percent(value: float) -> str:
    """A relative error as a percentage (nan and inf as they are)."""
    return f"{value:.3%}" if math.isfinite(value) else str(value)


def tolerance_text(value: float) -> str:
    return f"{value * 100:g} %"


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table_steps(points: list[LossPoint], worst: int) -> list[LossPoint]:
    """At most TABLE_STEPS points: evenly spread from the first to the last, and the worst one."""
    if len(points) <= TABLE_STEPS:
        return points
    picks = {round(i * (len(points) - 1) / (TABLE_STEPS - 2)) for i in range(TABLE_STEPS - 1)}
    return [p for i, p in enumerate(points) if i in picks or p.step == worst]


def render_text(found: Comparison) -> str:
    """The comparison as a person reads it: the two rounds, the loss, the final metric, the performance, the
    verdict."""
    lines = [f"compare {found.case}: tolerance {tolerance_text(found.tolerance)} (relative error)"]
    for name, side in (("reference", found.reference), ("candidate", found.candidate)):
        lines.append(f"  {name}  {side.path}  ({side.vendor} {side.hardware}, {side.status})")
    for key, (ref, cand) in found.allowed_differences.items():
        lines.append(f"  allowed difference {key}: reference {ref!r}, candidate {cand!r}")
    first, last = found.loss[0].step, found.loss[-1].step
    since = f" from step {found.from_step}" if found.from_step else ""
    lines += ["", f"loss of rank {RANK}{since}: {found.aligned_steps} aligned steps ({first}..{last}), mean relative "
                  f"error {percent(found.loss_mean_relative_error)}, max {percent(found.loss_max_relative_error)} at "
                  f"step {found.loss_max_error_step}"]
    shown = table_steps(found.loss, found.loss_max_error_step)
    rows = [[str(p.step), f"{p.reference:.6g}", f"{p.candidate:.6g}", percent(p.relative_error)] for p in shown]
    lines += ["  " + line for line in text_columns(["step", "reference", "candidate", "rel. error"], rows)]
    if len(shown) < len(found.loss):
        lines.append(f"  ({len(shown)} of {found.aligned_steps} steps; --json or --plot for every one)")
    final = found.final_metric
    rows = [[f"{final.metric} (final)", f"{final.reference:.6g}", f"{final.candidate:.6g}",
             f"rel. error {percent(final.relative_error)}"]]
    for key, value in found.performance.items():
        shown_value = percent_text if key == MFU else _num  # MFU as the summary shows it: 0.27%
        rows.append([key, shown_value(value.reference), shown_value(value.candidate),
                     "-" if value.ratio is None else f"x{value.ratio:.3f}"])
    lines += ["", *("  " + line for line in text_columns(["", "reference", "candidate", "candidate/reference"],
                                                          rows))]
    if found.verdict == PASS:
        lines += ["", f"{PASS}: the final metric and the mean loss are within {tolerance_text(found.tolerance)} of the "
                      f"reference"]
    else:
        lines += ["", f"{FAIL}: " + "; ".join(found.reasons)]
    return "\n".join(lines)
