"""The run summary's cells: the columns, rows and notes its text table, its Markdown and the HTML report show.

A figure is the mean ± std over valid rounds (std shown where there is more than one round).
"""

from __future__ import annotations

from case_runners.monitors.summary import SATURATED_BUSY_PCT, SATURATED_OTHERS_PCT
from case_runners.plan.config.standard import NON_STANDARD, STANDARD
from case_runners.records import names
from case_runners.records.resolved import SAMPLES_PER_S
from case_runners.records.summary import RunSummary, ScalingGroup, ScalingRow, Stat, SummaryCase
from case_runners.records.summary_build import case_unit, is_standard

INFERENCE_COLUMNS = ("case", "rounds", "ok", "status", "standard", "val whole", "val core", "inf whole", "inf core",
                     "val acc", "inf acc", "agree", "e2e s", "mem peak GiB", "MFU")
GIB = 1024 ** 3
COLUMNS = (("case", "case_id"), ("rounds", "rounds"), ("ok", "ok"), ("status", "status"), ("standard", STANDARD),
           ("p_whole", "p_whole"), ("p_train", "p_train"), ("p_core", "p_core"), ("e2e s", "e2e_time"),
           ("metric", "final_metric"), ("target", "target"), ("MFU", "mfu"))
SATURATED_NOTE = (f"host CPU saturated by other processes (samples at >= {SATURATED_BUSY_PCT:g} % busy with >= "
                  f"{SATURATED_OTHERS_PCT:g} % taken by processes outside the round); these rounds' figures depend "
                  "on them")


def cell(stat: Stat | None, digits: int = 1, percent: bool = False) -> str:
    """A figure as a cell: its mean with `digits` decimals, "± std" over several rounds, "-" for none."""
    if stat is None or stat.mean is None:
        return "-"
    scale = 100.0 if percent else 1.0
    text = f"{stat.mean * scale:.{digits}f}"
    if stat.n > 1:
        text += f" ±{(stat.std or 0.0) * scale:.{digits}f}"
    return text + ("%" if percent else "")


def standard_cell(case: SummaryCase) -> str:
    """The standard cell of a summary case (the standard workload, not the statistic): yes, or no and the keys that
    changed the workload."""
    if is_standard(case):
        return "yes"
    keys = case.standard_fields()[NON_STANDARD]
    return f"no: {', '.join(keys)}" if keys else "no"


def why_non_standard(case: SummaryCase) -> str:
    """What made a summary case non-standard."""
    keys = case.standard_fields()[NON_STANDARD]
    return f"changed {', '.join(keys)}" if keys else "marked non-standard"


def case_label(case: SummaryCase | ScalingRow) -> str:
    """A case id (of a summary case or a scaling row), marked where the case is not standard."""
    return case.case_id + ("" if is_standard(case) else " (non-standard)")


def non_standard_notes(summary: RunSummary) -> list[str]:
    """One line per non-standard case of the summary: its id and the keys that made it so."""
    return [f"{c.case_id}: {why_non_standard(c)}" for c in summary.cases if not is_standard(c)]


def table_rows(summary: RunSummary, unit: str = SAMPLES_PER_S) -> list[list[str]]:
    """One row per training case whose throughputs are in `unit`."""
    rows = []
    for case in summary.cases:
        if case.task != names.TRAINING or case_unit(case) != unit:
            continue
        s = case.stats
        rows.append([case.case_id, str(len(case.rounds)), f"{case.succeeded}/{len(case.rounds)}",
                     case.status, standard_cell(case), cell(s["p_whole"]), cell(s["p_train"]), cell(s["p_core"]),
                     cell(s["e2e_time"]), cell(s["final_metric"], 4),
                     "-" if case.target is None else f"{case.target}", cell(s["mfu"], 2, percent=True)])
    return rows


def inference_rows(summary: RunSummary) -> list[list[str]]:
    """One row per inference case: the four throughputs (items/s), both accuracies, agreement, memory."""
    rows = []
    for case in summary.cases:
        if case.task != names.INFERENCE:
            continue
        s = case.stats
        memory = s[names.DEVICE_MEMORY_PEAK]
        if memory.mean is not None:
            memory = Stat(mean=memory.mean / GIB, std=None if memory.std is None else memory.std / GIB, n=memory.n)
        total = case.memory_total_bytes if isinstance(case.memory_total_bytes, int) else None
        rows.append([case.case_id, str(len(case.rounds)), f"{case.succeeded}/{len(case.rounds)}",
                     case.status, standard_cell(case), cell(s["p_validation_whole"]), cell(s["p_validation_core"]),
                     cell(s["p_inference_whole"]), cell(s["p_inference_core"]), cell(s["validation_accuracy"], 4),
                     cell(s["inference_accuracy"], 4), cell(s["agreement"], 1, percent=True), cell(s["e2e_time"]),
                     cell(memory, 2) + (f" / {total / GIB:.1f}" if total else ""), cell(s["mfu"], 2, percent=True)])
    return rows


def _speedup(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _efficiency(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def scaling_rows(group: ScalingGroup) -> list[list[str]]:
    return [[case_label(row), str(row.nnodes), str(row.nproc), str(row.devices), cell(row.throughput),
             _speedup(row.speedup), _efficiency(row.efficiency)] for row in group.rows]


def implausible_efficiency(row: ScalingRow) -> str | None:
    """Why an efficiency above 100 % is not what the larger scale gained (None for one at most 100 %): the smaller
    scale ran slower than it could, most often on a CPU-backed device whose threads fought for the cores."""
    if row.efficiency is None or row.efficiency <= 1.0:
        return None
    return (f"{row.case_id}: efficiency {_efficiency(row.efficiency)} is above 100 %, which more devices cannot give: "
            "the smaller scale was slowed (its rounds had more threads than free cores, or a busy host); check the "
            "thread settings (OMP_NUM_THREADS, torch's threads) and the host's load during the rounds")


def scaling_notes(group: ScalingGroup) -> list[str]:
    """What the scaling table's figures need said: why they are withheld, or a row's reason, and each implausible
    efficiency (the summary's text and markdown, and the report, show these under the table)."""
    if group.reason:
        return [f"speed-up and efficiency withheld: {group.reason}"]
    return [f"{row.case_id}: {row.reason}" for row in group.rows if row.reason] + \
        [note for row in group.rows if (note := implausible_efficiency(row))]


ELSEWHERE = "on its own host"  # a node whose directory stayed there (case_runners run --nnode): no figure here


def nodes_elsewhere(case: SummaryCase) -> list[int]:
    """The node ranks of a multi-node case that no valid round's record has: run with `case_runners run --nnode`,
    each node's directory stays on its host (the records' nodes_elsewhere)."""
    return sorted(set(range(case.nnodes)) - {n.node_rank for n in case.per_node}) if case.per_node else []
