"""The run summary as plain text: the tables printed at the end of a run (the play's, `case_runners run`'s)."""

from __future__ import annotations

from case_runners.core.text import text_columns
from case_runners.plan.config.standard import NOT_STANDARD_NOTE
from case_runners.records import names
from case_runners.records.resolved import SAMPLES_PER_S
from case_runners.records.summary import RunSummary
from case_runners.records.summary_build import case_unit, saturated_rounds, training_units
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
)

ONE_ROUND_NOTE = "a figure of one round has no ±: its spread is unknown"  # its std is null


def render_per_node_text(summary: RunSummary) -> list[str]:
    """One line per multi-node case: each node's p_train (mean ± std over valid rounds)."""
    lines = []
    for case in summary.cases:
        if case.nnodes > 1 and case.per_node:
            nodes = "  ".join([*(f"node{n.node_rank} {n.host}: {cell(n.stats['p_train'])}" for n in case.per_node),
                               *(f"node{rank}: {ELSEWHERE}" for rank in nodes_elsewhere(case))])
            unit = "" if case_unit(case) == SAMPLES_PER_S else f" ({case_unit(case)})"
            lines.append(f"  {case_label(case)}{unit}  {nodes}")
    return ["", f"per node (p_train, {SAMPLES_PER_S}; sum of the node's ranks):", *lines] if lines else []


def render_scaling_text(summary: RunSummary) -> list[str]:
    lines = []
    for group in summary.scaling:
        header = ["case", "devices", group.basis, "speed-up", "efficiency"]
        rows = [[r[0], r[3], r[4], r[5], r[6]] for r in scaling_rows(group)]
        lines += ["", f"scaling ({group.basis}, {group.unit}; base: {group.base})", *text_columns(header, rows),
                  *(f"  {note}" for note in scaling_notes(group))]
    return lines


def render_table(summary: RunSummary) -> str:
    """Plain-text tables for the end of the play (mean ± std over rounds): the training cases (samples/s), then a
    line per multi-node case with each node's throughput and the scaling tables; the inference cases (items/s); the
    base benchmarks (achieved against the vendor's peaks); the generate cases (TTFT, TPOT, tokens/s)."""
    lines = [f"perfplay summary: {summary.run_id} (mean ± std over rounds; {ONE_ROUND_NOTE})"]
    units = training_units(summary) or ([] if summary.cases else [SAMPLES_PER_S])
    training = [row for unit in units for row in table_rows(summary, unit)]
    for unit in units:
        line, *body = text_columns([name for name, _ in COLUMNS], table_rows(summary, unit))
        lines += ([""] if unit != units[0] else []) + [f"training (throughput in {unit})", line, "-" * len(line),
                                                       *body]
    if units:
        lines += [*render_per_node_text(summary), *render_scaling_text(summary)]
    inference = inference_rows(summary)
    if inference:
        line, *body = text_columns(list(INFERENCE_COLUMNS), inference)
        lines += ([""] if training else []) + [
            "inference (throughput in items/s: whole = data + compute + evaluation, core = compute; "
            "memory: the vendor monitor's peak / total)", line, "-" * len(line), *body]
    base = base_rows.render_text(summary)
    if base:
        lines += ([""] if training or inference else []) + base
    generate = generate_rows.render_text(summary)
    if generate:
        lines += ([""] if training or inference or base else []) + generate
    operation = operation_rows.render_text(summary)
    if operation:
        lines += ([""] if training or inference or base or generate else []) + operation
    # A round that missed its target is a valid result (a --step run's, by design), listed apart from failures.
    rounds = [(c.case_id, r) for c in summary.cases for r in c.rounds if r["status"] != names.SUCCESS]
    for title, valid in (("not converged (valid results, in the means):", True), ("failures:", False)):
        listed = [f"  {case_id} round {r['round']}: {r['status']}: {r['reason']}" for case_id, r in rounds
                  if (r["status"] in names.VALID_STATUSES) == valid]
        if listed:
            lines += ["", title, *listed]
    non_standard = non_standard_notes(summary)
    if non_standard:
        lines += ["", f"{NOT_STANDARD_NOTE}:", *(f"  {note}" for note in non_standard)]
    saturated = saturated_rounds(summary)
    if saturated:
        lines += ["", f"warning: {SATURATED_NOTE}:", *(f"  {line}" for line in saturated)]
    return "\n".join(lines)
