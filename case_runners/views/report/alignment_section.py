"""The report's accuracy alignment: with several runs, each later run's training case against the first run's
(the reference) at the same case and scale, as `compare` aligns two rounds (compare/): rank 0's loss curves by
step and the final metric, within compare's default tolerance. The first valid round of each side is taken; a
pair that cannot be aligned says why."""

from __future__ import annotations

from pathlib import Path

from case_runners.core.errors import PerfplayError
from case_runners.records import names
from case_runners.records.summary import SummaryCase
from case_runners.views.compare.alignment import DEFAULT_TOLERANCE, align, check_same_workload, workload
from case_runners.views.compare.report import PASS, Comparison, Side, build, percent, tolerance_text
from case_runners.views.compare.rounds import Round, load_round
from case_runners.views.report import html, plots
from case_runners.views.report.data import RunData, scale_label

HEADER = ("case", "reference", "candidate", "final metric (ref. / cand.)", "rel. error", "loss: mean rel. error",
          "max (step)", "verdict")


def alignment_section(runs: list[RunData]) -> str | html.Omitted:
    if len(runs) < 2:
        return html.Omitted("one run: an alignment needs a reference run and a candidate run of the same training "
                            "case")
    if not any(c.task == names.TRAINING for run in runs[1:] for c in run.summary.cases):
        return html.Omitted("no training case in the runs after the first: nothing to align with the reference")
    parts = [html.para(f"Each later run's training case against the first run's at the same case and scale: rank "
                       f"0's loss curves on the steps both logged, and the final metric, each within "
                       f"{tolerance_text(DEFAULT_TOLERANCE)} relative error (as `python -m case_runners compare "
                       f"REFERENCE CANDIDATE` does, which takes other rounds and tolerances). The first valid round "
                       f"of each side.")]
    reference, rows, charts, notes = runs[0], [], [], []
    for run in runs[1:]:
        for case in (c for c in run.summary.cases if c.task == names.TRAINING):
            partner = next((c for c in reference.summary.cases if c.task == names.TRAINING and
                            scale_label(c) == scale_label(case)), None)
            title = f"{scale_label(case)}: {run.run_id} against {reference.run_id}"
            if partner is None:
                notes.append(f"{title}: the reference run has no training case {scale_label(case)}")
                continue
            try:
                found = _align(reference, partner, run, case)
            except PerfplayError as exc:
                notes.append(f"{title}: not aligned: {exc}")
                continue
            rows.append(_row(found))
            charts.append(html.image(plots.alignment_chart(found), f"alignment of {title}"))
    if not rows:
        return "".join(parts + [html.empty("No pair of runs could be aligned (why is listed below).")] +
                       [html.para(note, "note") for note in notes])
    return "".join(parts + [html.table(HEADER, rows)] + [html.para(n, "note") for n in notes] + charts)


def _first_valid(run: RunData, case: SummaryCase) -> Round:
    """The case's first valid round, read as compare reads it."""
    number = next((r["round"] for r in case.rounds if r["status"] in names.VALID_STATUSES), None)
    if number is None:
        raise PerfplayError(f"{case.case_id} of {run.run_id} has no valid round")
    return load_round(run.run_dir / case.case_id, number)


def _align(reference: RunData, ref_case: SummaryCase, run: RunData, case: SummaryCase) -> Comparison:
    ref, cand = _first_valid(reference, ref_case), _first_valid(run, case)
    check_same_workload(workload(ref.config, ref.record), workload(cand.config, cand.record), [])
    loss = align(ref.loss, cand.loss)
    if not loss.steps:
        raise PerfplayError("no step logged in both rounds, no loss to align")
    return build(ref, cand, loss, DEFAULT_TOLERANCE, {})


def _row(found: Comparison) -> list[str]:
    final = found.final_metric
    return [found.case, _side(found.reference), _side(found.candidate),
            f"{final.metric}: {final.reference:.6g} / {final.candidate:.6g}", percent(final.relative_error),
            percent(found.loss_mean_relative_error),
            f"{percent(found.loss_max_relative_error)} ({found.loss_max_error_step})",
            found.verdict if found.verdict == PASS else f"{found.verdict}: {'; '.join(found.reasons)}"]


def _side(side: Side) -> str:
    return f"{side.run_id} ({side.vendor} {side.hardware}, {Path(side.path).name})"
