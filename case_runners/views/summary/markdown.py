"""The run summary as Markdown: summary.md, the tables with a section per case."""

from __future__ import annotations

from case_runners.core.text import number_text
from case_runners.plan.config.standard import NOT_STANDARD_NOTE
from case_runners.records import names
from case_runners.records.resolved import SAMPLES_PER_S
from case_runners.records.summary import RunSummary, SummaryCase
from case_runners.records.summary_build import SCALING_BASIS, case_unit, is_standard, saturated_rounds, training_units
from case_runners.views.summary import base_rows, generate_rows, operation_rows
from case_runners.views.summary.cells import (
    COLUMNS,
    ELSEWHERE,
    INFERENCE_COLUMNS,
    SATURATED_NOTE,
    case_label,
    cell,
    inference_rows,
    nodes_elsewhere,
    non_standard_notes,
    scaling_notes,
    scaling_rows,
    table_rows,
    why_non_standard,
)

TRAINING_NOTE = "Throughputs in samples/s; MFU on p_core (training FLOPs = 3 x forward)."


def render_markdown(summary: RunSummary) -> str:
    lines = [f"# perfplay run {summary.run_id}", "", "Mean ± std over rounds. FLOPs convention: "
             "1 multiply-add = 2 FLOPs; MFU against the vendor's peak FLOP/s for the precision used."]
    for unit in training_units(summary):
        header = [name for name, _ in COLUMNS]
        about = (TRAINING_NOTE if unit == SAMPLES_PER_S else f"Throughputs in {unit} (a sample is one "
                 f"{unit.removesuffix('s/s')}); MFU on p_core, FLOPs per {unit.removesuffix('s/s')} by the "
                 f"convention each round's record states (mfu.convention).")
        lines += ["", "## Training" + ("" if unit == SAMPLES_PER_S else f" ({unit})"), "", about, "",
                  "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in table_rows(summary, unit)]
    inference = inference_rows(summary)
    if inference:
        lines += ["", "## Inference", "", "Throughputs in items/s: whole = data + compute + evaluation, "
                  "core = compute only; val = the framework (torch) path, inf = the vendor's engine; agree = share of "
                  "predictions on which both paths agree; MFU on the engine's core throughput (the framework's when "
                  "compiler is null); memory = the vendor monitor's peak used / total, GiB.", "",
                  "| " + " | ".join(INFERENCE_COLUMNS) + " |", "|" + "---|" * len(INFERENCE_COLUMNS)]
        lines += ["| " + " | ".join(row) + " |" for row in inference]
    lines += base_rows.render_markdown(summary)
    lines += generate_rows.render_markdown(summary)
    lines += operation_rows.render_markdown(summary)
    non_standard = non_standard_notes(summary)
    if non_standard:
        lines += ["", f"**{NOT_STANDARD_NOTE}:**", "", *(f"- {note}" for note in non_standard)]
    saturated = saturated_rounds(summary)
    if saturated:
        lines += ["", f"**Warning: {SATURATED_NOTE}:**", "", *(f"- {line}" for line in saturated)]
    lines += _scaling_markdown(summary)
    for case in summary.cases:
        lines += ["", f"## {case_label(case)}", ""]
        if not is_standard(case):
            lines += [f"{NOT_STANDARD_NOTE}: {why_non_standard(case)}.", ""]
        if case.task == names.BASE:
            lines += base_rows.case_markdown(case)
            continue
        if case.task == names.GENERATE:
            lines += generate_rows.case_markdown(case)
            continue
        if case.task == names.OPERATION:
            lines += operation_rows.case_markdown(case)
            continue
        if case.task == names.INFERENCE:
            keys = names.INFERENCE_THROUGHPUTS
            lines += ["| round | status | val whole | val core | inf whole | inf core | val acc | inf acc | "
                      "reason |", "|---|---|---|---|---|---|---|---|---|"]
            for r in case.rounds:
                cells = [number_text(r.get(k)) for k in keys] + [number_text(r.get(k), 4)
                                                                 for k in names.INFERENCE_ACCURACIES]
                lines.append(f"| {r['round']} | {r['status']} | " + " | ".join(cells) + f" | {r['reason'] or ''} |")
            continue
        lines += ["| round | status | p_whole | p_train | p_core | e2e s | "
                  f"{case.metric} | reason |", "|---|---|---|---|---|---|---|---|"]
        for r in case.rounds:
            cells = [number_text(r.get(k)) for k in (*names.THROUGHPUTS, "e2e_time")]
            lines.append(f"| {r['round']} | {r['status']} | " + " | ".join(cells) +
                         f" | {number_text(r.get('final_metric'), 4)} | {r['reason'] or ''} |")
        lines += _per_node_markdown(case)
    return "\n".join(lines) + "\n"


def _per_node_markdown(case: SummaryCase) -> list[str]:
    if case.nnodes <= 1 or not case.per_node:
        return []
    lines = ["", f"Per node ({case_unit(case)}, mean ± std over valid rounds; a node's figure is the sum of its ranks' "
             "own throughputs; the total is rank 0's global figure):", "",
             "| node | host | ranks | p_train | p_core |", "|---|---|---|---|---|"]
    lines += [f"| {n.node_rank} | {n.host} | {n.ranks} | {cell(n.stats['p_train'])} | "
              f"{cell(n.stats['p_core'])} |" for n in case.per_node]
    lines += [f"| {rank} | {ELSEWHERE} | | | |" for rank in nodes_elsewhere(case)]
    lines.append(f"| total | | {case.nnodes * case.nproc} | {cell(case.stats['p_train'])} | "
                 f"{cell(case.stats['p_core'])} |")
    return lines


def _scaling_markdown(summary: RunSummary) -> list[str]:
    groups = summary.scaling
    if not groups:
        return []
    lines = ["", "## Scaling", "", f"Throughput: {SCALING_BASIS} in each case's unit, mean ± std over valid rounds "
             "(success or not_converged). Speed-up against the smallest scale; efficiency = speed-up / "
             "(devices / base devices)."]
    for group in groups:
        what = ", ".join(str(x) for x in (group.vendor, group.framework) if x)
        lines += ["", f"### {group.case} on {group.hardware} ({what}); base {group.base}", "",
                  f"| case | nnodes | nproc | devices | {group.basis} | speed-up | efficiency |",
                  "|---|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(row) + " |" for row in scaling_rows(group)]
        notes = scaling_notes(group)
        if notes:
            lines += [""] + [f"- {note}" for note in notes]
    return lines
