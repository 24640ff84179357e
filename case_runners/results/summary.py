"""The run summary: per case, mean and standard deviation over its rounds; JSON, Markdown and a text table.

Beside the global figures: each node's throughput (the sum of its ranks' own throughputs, from the round
records' per_node) and, for a case run at several scales, a scaling table (speed-up and efficiency
against the smallest scale, on p_train).

A case whose rounds did not all run the standard workload (config/standard.py) says so in its `std` column, and
the run's list of such cases is printed under the tables: it is never shown as a standard result.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from case_runners import files
from case_runners.config.standard import NON_STANDARD, NOT_STANDARD_NOTE, STANDARD, read_standard
from case_runners.errors import PerfplayError
from case_runners.monitors.summary import SATURATED_BUSY_PCT, SATURATED_OTHERS_PCT, saturated_by_others
from case_runners.paths import RESOLVED_NAME
from case_runners.records import names
from case_runners.records.resolved import SAMPLES_PER_S, ResolvedConfig
from case_runners.records.round import Mfu, RoundRecord, TrainingNodeEntry, find_records
from case_runners.records.schema import ABSENT, RecordError
from case_runners.records.summary import (
    SUMMARY_JSON,
    SUMMARY_MD,
    RunSummary,
    ScalingGroup,
    ScalingRow,
    Stat,
    SummaryCase,
    SummaryNode,
    round_keys,
)
from case_runners.results import base_summary, generate_summary
from case_runners.results.environment import HOST_MONITOR
from case_runners.results.text import number_text, text_columns

INFERENCE_COLUMNS = ("case", "rounds", "ok", "status", "std", "val whole", "val core", "inf whole", "inf core",
                     "val acc", "inf acc", "agree", "e2e s", "mem peak GiB", "MFU")
GIB = 1024 ** 3
COLUMNS = (("case", "case_id"), ("rounds", "rounds"), ("ok", "ok"), ("status", "status"), ("std", STANDARD),
           ("p_whole", "p_whole"), ("p_train", "p_train"), ("p_core", "p_core"), ("e2e s", "e2e_time"),
           ("metric", "final_metric"), ("target", "target"), ("MFU", "mfu"))
SCALING_BASIS = names.THROUGHPUT_BASIS
TRAINING_NOTE = "Throughputs in samples/s; MFU on p_core (training FLOPs = 3 x forward)."
ONE_ROUND_NOTE = "a figure of one round has no ±: its spread is unknown"  # its std is null


@dataclasses.dataclass(kw_only=True)
class StandIn:
    """A round without a readable record, described from its case's resolved config as far as that can be read."""
    case_id: str
    case: str
    task: str
    vendor: str | None
    hardware: str | None
    nnodes: int
    nproc: int
    framework: str | None
    round: int
    status: str  # unreadable, interrupted or missing
    reason: str
    standard: bool
    non_standard: list[str]
    metrics: dict[str, Any]  # the case's metric and target
    unit: str = SAMPLES_PER_S  # a training case's throughput unit (its config's, where readable)
    mfu: Mfu | None = None
    per_node: tuple[()] = ()
    monitors: dict[str, Any] = dataclasses.field(default_factory=dict)

    def standard_fields(self) -> dict[str, Any]:
        return {STANDARD: self.standard, NON_STANDARD: list(self.non_standard)}


Round = RoundRecord | StandIn


def load_records(run_dir: Path) -> list[Round]:
    """Every round of the run: its record, or a stand-in naming its state when it has none that can be read:
    `unreadable` (its record file is there but is not a valid round record), `interrupted` (the round started and left
    no record), `missing` (a round the plan has that never started)."""
    records: list[Round] = []
    seen = set()
    for path in find_records(run_dir, "*/round*"):
        seen.add(path.parent)
        try:
            records.append(RoundRecord.load(path))
        except RecordError as exc:
            records.append(_stand_in(path.parent.parent, path.parent, names.UNREADABLE, str(exc)))
    for config_path in sorted(run_dir.glob(f"*/{RESOLVED_NAME}")):
        case_dir = config_path.parent
        config = _config(case_dir)
        repeat = config.repeat if config else len(list(case_dir.glob("round*")))
        for number in range(1, repeat + 1):
            round_dir = case_dir / f"round{number}"
            if round_dir in seen:
                continue
            if round_dir.is_dir():  # its record could not be written, or the run was stopped before
                cause = files.unwritable_reason(round_dir)
                why = f"it could not be written: {cause}" if cause else "the run was interrupted"
                records.append(_stand_in(case_dir, round_dir, names.INTERRUPTED,
                                         f"the round started but left no record ({why})"))
            else:
                cause = files.unwritable_reason(case_dir)
                records.append(_stand_in(case_dir, round_dir, names.MISSING, "the round never started"
                                         + (f" (its directory could not be made: {cause})" if cause else "")))
    return records


def _config(case_dir: Path) -> ResolvedConfig | None:
    try:
        return ResolvedConfig.load(case_dir / RESOLVED_NAME)
    except RecordError:
        return None


def _stand_in(case_dir: Path, round_dir: Path, status: str, reason: str) -> StandIn:
    """A round with no readable record, described from the case's resolved config (as far as it can be read)."""
    config = _config(case_dir)
    number = round_dir.name.removeprefix("round")
    common: dict[str, Any] = dict(round=int(number) if number.isdigit() else 0, status=status, reason=reason)
    if config is None:
        return StandIn(case_id=case_dir.name, case=case_dir.name, task=names.TRAINING, vendor=None, hardware=None,
                       nnodes=1, nproc=1, framework=None, **common, **read_standard({}),
                       metrics={"metric": None, "target": None})
    return StandIn(case_id=config.case_id, case=config.case, task=config.task_name, vendor=config.vendor,
                   hardware=config.hardware, nnodes=config.nnodes, nproc=config.nproc, framework=config.framework,
                   **common, **config.standard_fields(), unit=config.throughput_unit,
                   metrics={"metric": config.target.metric if config.target else None,
                            "target": config.target.value if config.target else None})


def _stat_keys(record: Round) -> tuple[str, ...]:
    return names.summary_stats(record.task)


def _round_values(record: Round) -> dict[str, Any]:
    memory = record.metrics.get(names.DEVICE_MEMORY) or {}
    return {**record.metrics, names.DEVICE_MEMORY_PEAK: memory.get("peak_used_bytes")}


@dataclasses.dataclass
class _Case:
    """A case of the summary while its rounds are added."""
    first: Round
    rounds: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    values: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    mfu: list[float] = dataclasses.field(default_factory=list)
    nodes: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)
    standard: bool = True
    non_standard: set[str] = dataclasses.field(default_factory=set)
    memory_total_bytes: Any = None
    mfu_basis: Any = None
    records: list[Round] = dataclasses.field(default_factory=list)


def summarize_records(records: list[Round], run_id: str | None = None) -> RunSummary:
    cases: dict[str, _Case] = {}
    for record in sorted(records, key=lambda r: (r.case_id, r.round)):
        keys = _stat_keys(record)
        entry = cases.setdefault(record.case_id, _Case(record, values={k: [] for k in keys}))
        entry.records.append(record)
        fields = record.standard_fields()  # standard only if every round was
        entry.standard = entry.standard and fields[STANDARD]
        entry.non_standard |= set(fields[NON_STANDARD])
        values = _round_values(record)
        entry.rounds.append({"round": record.round, "status": record.status, "reason": record.reason,
                             **{k: values.get(k) for k in round_keys(record.task)}})
        if record.status in names.VALID_STATUSES:
            for key in keys:
                if _number(values.get(key)):
                    entry.values[key].append(float(values[key]))
            if record.mfu is not None and record.mfu.value is not None:
                entry.mfu.append(record.mfu.value)
            _collect_nodes(entry.nodes, record)
        if record.task == names.INFERENCE:
            entry.memory_total_bytes = (record.metrics.get(names.DEVICE_MEMORY) or {}).get("total_bytes")
            entry.mfu_basis = record.mfu.basis if record.mfu is not None else None
    summary_cases = [_summary_case(entry) for entry in cases.values()]
    saturated = [line for entry in cases.values() for record in entry.records for line in _saturated(record)]
    failed = [f"{c.case_id} round {r['round']}: {r['status']}: {r['reason']}"
              for c in summary_cases for r in c.rounds if r["status"] not in names.VALID_STATUSES]
    return RunSummary(run_id=run_id, cases=summary_cases,
                      ok=all(c.status == names.SUCCESS for c in summary_cases) and bool(summary_cases),
                      failed_rounds=failed,
                      non_standard_cases=[c.case_id for c in summary_cases if not _is_standard(c)],
                      scaling=scaling([c for c in summary_cases if c.task == names.TRAINING]),
                      saturated_rounds=saturated or ABSENT)


SATURATED_NOTE = (f"host CPU saturated by other processes (samples at >= {SATURATED_BUSY_PCT:g} % busy with >= "
                  f"{SATURATED_OTHERS_PCT:g} % taken by processes outside the round); these rounds' figures depend "
                  "on them")


def _saturated(record: Round) -> list[str]:
    """A line per node of the round whose host monitor says other processes saturated its CPUs."""
    lines = []
    for node_dir, monitors in sorted(record.monitors.items()):
        host = monitors.get(HOST_MONITOR) or {}
        if saturated_by_others(host):
            lines.append(f"{record.case_id} round {record.round}: {node_dir}: {host['saturated_by_others']:.0%} of "
                         f"the samples; other processes used {number_text(host.get('others_util_mean'))} % of the "
                         "host's CPUs on average")
    return lines


def saturated_rounds(summary: RunSummary) -> list[str]:
    """The summary's lines of rounds whose host other processes saturated (SATURATED_NOTE); [] when none."""
    return [] if summary.saturated_rounds is ABSENT else list(summary.saturated_rounds)


def _unit(record: Round) -> str:
    """A round's throughput unit: its record's (a training round's), its stand-in's, else samples/s."""
    if isinstance(record, StandIn):
        return record.unit
    return record.throughput.unit if record.task == names.TRAINING else SAMPLES_PER_S


def _summary_case(entry: _Case) -> SummaryCase:
    first, statuses = entry.first, [r["status"] for r in entry.rounds]
    inference = first.task == names.INFERENCE
    own: dict[str, Any] = {}  # the task's own fields
    if first.task == names.BASE:
        own = {"base": base_summary.base_rows(entry.records),
               "measurements": base_summary.last_measurements(entry.records)}
    if first.task == names.GENERATE:
        own = {"generate": generate_summary.generate_rows(entry.records),
               "checkpoint": generate_summary.last_checkpoint(entry.records)}
    unit = _unit(first)
    return SummaryCase(
        case_id=first.case_id, case=first.case, task=first.task, vendor=first.vendor, hardware=first.hardware,
        nnodes=first.nnodes, nproc=first.nproc, framework=first.framework, metric=first.metrics.get("metric"),
        target=first.metrics.get("target"), standard=entry.standard, non_standard=sorted(entry.non_standard),
        rounds=entry.rounds, unit=ABSENT if unit == SAMPLES_PER_S else unit,
        **({"memory_total_bytes": entry.memory_total_bytes, "mfu_basis": entry.mfu_basis} if inference else own),
        stats={**{key: Stat.of(v) for key, v in entry.values.items()}, "mfu": Stat.of(entry.mfu)},
        per_node=[SummaryNode(node_rank=rank, host="/".join(node["hosts"]), ranks=max(node["ranks"]),
                              stats={key: Stat.of(node["values"][key]) for key in names.SUMMARY_NODE_STATS})
                  for rank, node in sorted(entry.nodes.items())],
        succeeded=statuses.count(names.SUCCESS), converged=sum(1 for r in entry.rounds if r.get("converged")),
        status=names.SUCCESS if set(statuses) == {names.SUCCESS} else ",".join(sorted(set(statuses))))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _collect_nodes(nodes: dict[int, dict[str, Any]], record: Round) -> None:
    """Add a valid round's per-node throughputs (a training round's)."""
    for node in record.per_node:
        if not isinstance(node, TrainingNodeEntry):
            continue
        entry = nodes.setdefault(node.node_rank, {"hosts": [], "ranks": [],
                                                  "values": {k: [] for k in names.SUMMARY_NODE_STATS}})
        if node.host not in entry["hosts"]:
            entry["hosts"].append(node.host)
        entry["ranks"].append(node.ranks)
        for key in names.SUMMARY_NODE_STATS:
            value = getattr(node, key)
            if _number(value):
                entry["values"][key].append(float(value))


def scaling(cases: list[SummaryCase], basis: str = SCALING_BASIS) -> list[ScalingGroup]:
    """Speed-up and efficiency of each case over the smallest scale it was run at in this run.

    Cases are grouped by (case, vendor, hardware, framework); a group with at least two scales gives
    rows sorted by devices = nnodes * nproc. speed-up = throughput / base throughput, efficiency =
    speed-up / (devices / base devices), throughput = the mean of `basis` over valid rounds.
    """
    groups: dict[tuple, list[SummaryCase]] = {}
    for case in cases:
        groups.setdefault((case.case, case.vendor, case.hardware, case.framework), []).append(case)
    result = []
    for key in sorted(groups, key=lambda k: tuple("" if part is None else str(part) for part in k)):
        members = sorted(groups[key], key=lambda c: (c.nnodes * c.nproc, c.nnodes, c.case_id))
        if len({(c.nnodes, c.nproc) for c in members}) < 2:
            continue
        base = members[0]
        base_devices = base.nnodes * base.nproc
        base_value = base.stats[basis].mean
        reason = None if base_value else \
            f"the base {base.case_id} has no valid {basis} (no round with status success or not_converged)"
        rows = []
        for case in members:
            devices = case.nnodes * case.nproc
            value = case.stats[basis].mean
            row = ScalingRow(case_id=case.case_id, standard=_is_standard(case), nnodes=case.nnodes, nproc=case.nproc,
                             devices=devices, throughput=case.stats[basis], speedup=None, efficiency=None,
                             reason=reason)
            if reason is None and value is None:
                row.reason = f"no valid {basis} (no round with status success or not_converged)"
            elif value is not None and base_value:
                row.speedup = value / base_value
                row.efficiency = row.speedup / (devices / base_devices)
            rows.append(row)
        result.append(ScalingGroup(case=key[0], vendor=key[1], hardware=key[2], framework=key[3], basis=basis,
                                   unit=case_unit(base), base=base.case_id, base_devices=base_devices, reason=reason,
                                   rows=rows))
    return result


def summarize_run(run_dir: Path) -> RunSummary:
    summary = summarize_records(load_records(run_dir), run_dir.name)
    summary.run_dir = str(run_dir)
    return summary


def _fmt(stat: Stat | None, digits: int = 1, percent: bool = False) -> str:
    if stat is None or stat.mean is None:
        return "-"
    scale = 100.0 if percent else 1.0
    text = f"{stat.mean * scale:.{digits}f}"
    if stat.n > 1:
        text += f" ±{(stat.std or 0.0) * scale:.{digits}f}"
    return text + ("%" if percent else "")


def _is_standard(case: SummaryCase | ScalingRow) -> bool:
    return case.standard if isinstance(case, ScalingRow) else case.standard_fields()[STANDARD]


def _std(case: SummaryCase) -> str:
    """The std cell of a summary case: yes, or no and the keys that changed the workload."""
    if _is_standard(case):
        return "yes"
    keys = case.standard_fields()[NON_STANDARD]
    return f"no: {', '.join(keys)}" if keys else "no"


def _why(case: SummaryCase) -> str:
    """What made a summary case non-standard."""
    keys = case.standard_fields()[NON_STANDARD]
    return f"changed {', '.join(keys)}" if keys else "marked non-standard"


def _label(case: SummaryCase | ScalingRow) -> str:
    """A case id (of a summary case or a scaling row), marked where the case is not standard."""
    return case.case_id + ("" if _is_standard(case) else " (non-standard)")


def _non_standard_notes(summary: RunSummary) -> list[str]:
    """One line per non-standard case of the summary: its id and the keys that made it so."""
    return [f"{c.case_id}: {_why(c)}" for c in summary.cases if not _is_standard(c)]


def case_unit(case: SummaryCase) -> str:
    """A training case's throughput unit: samples/s, or tokens/s (a language model's)."""
    return SAMPLES_PER_S if case.unit is ABSENT else str(case.unit)


def training_units(summary: RunSummary) -> list[str]:
    """The throughput units of the summary's training cases, samples/s first: one table each."""
    units = {case_unit(c) for c in summary.cases if c.task == names.TRAINING}
    return sorted(units, key=lambda u: (u != SAMPLES_PER_S, u))


def table_rows(summary: RunSummary, unit: str = SAMPLES_PER_S) -> list[list[str]]:
    """One row per training case whose throughputs are in `unit`."""
    rows = []
    for case in summary.cases:
        if case.task != names.TRAINING or case_unit(case) != unit:
            continue
        s = case.stats
        rows.append([case.case_id, str(len(case.rounds)), f"{case.succeeded}/{len(case.rounds)}",
                     case.status, _std(case), _fmt(s["p_whole"]), _fmt(s["p_train"]), _fmt(s["p_core"]),
                     _fmt(s["e2e_time"]), _fmt(s["final_metric"], 4),
                     "-" if case.target is None else f"{case.target}", _fmt(s["mfu"], 2, percent=True)])
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
                     case.status, _std(case), _fmt(s["p_validation_whole"]), _fmt(s["p_validation_core"]),
                     _fmt(s["p_inference_whole"]), _fmt(s["p_inference_core"]), _fmt(s["validation_accuracy"], 4),
                     _fmt(s["inference_accuracy"], 4), _fmt(s["agreement"], 1, percent=True), _fmt(s["e2e_time"]),
                     _fmt(memory, 2) + (f" / {total / GIB:.1f}" if total else ""), _fmt(s["mfu"], 2, percent=True)])
    return rows


def _speedup(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _efficiency(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def scaling_rows(group: ScalingGroup) -> list[list[str]]:
    return [[_label(row), str(row.nnodes), str(row.nproc), str(row.devices), _fmt(row.throughput),
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


def _nodes_elsewhere(case: SummaryCase) -> list[int]:
    """The node ranks of a multi-node case that no valid round's record has: run with `case_runners run --nnode`,
    each node's directory stays on its host (the records' nodes_elsewhere)."""
    return sorted(set(range(case.nnodes)) - {n.node_rank for n in case.per_node}) if case.per_node else []


def render_per_node_text(summary: RunSummary) -> list[str]:
    """One line per multi-node case: each node's p_train (mean ± std over valid rounds)."""
    lines = []
    for case in summary.cases:
        if case.nnodes > 1 and case.per_node:
            nodes = "  ".join([*(f"node{n.node_rank} {n.host}: {_fmt(n.stats['p_train'])}" for n in case.per_node),
                               *(f"node{rank}: {ELSEWHERE}" for rank in _nodes_elsewhere(case))])
            unit = "" if case_unit(case) == SAMPLES_PER_S else f" ({case_unit(case)})"
            lines.append(f"  {_label(case)}{unit}  {nodes}")
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
    base = base_summary.render_text(summary)
    if base:
        lines += ([""] if training or inference else []) + base
    generate = generate_summary.render_text(summary)
    if generate:
        lines += ([""] if training or inference or base else []) + generate
    # A round that missed its target is a valid result (a --step run's, by design), listed apart from failures.
    rounds = [(c.case_id, r) for c in summary.cases for r in c.rounds if r["status"] != names.SUCCESS]
    for title, valid in (("not converged (valid results, in the means):", True), ("failures:", False)):
        listed = [f"  {case_id} round {r['round']}: {r['status']}: {r['reason']}" for case_id, r in rounds
                  if (r["status"] in names.VALID_STATUSES) == valid]
        if listed:
            lines += ["", title, *listed]
    non_standard = _non_standard_notes(summary)
    if non_standard:
        lines += ["", f"{NOT_STANDARD_NOTE}:", *(f"  {note}" for note in non_standard)]
    saturated = saturated_rounds(summary)
    if saturated:
        lines += ["", f"warning: {SATURATED_NOTE}:", *(f"  {line}" for line in saturated)]
    return "\n".join(lines)


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
    lines += base_summary.render_markdown(summary)
    lines += generate_summary.render_markdown(summary)
    non_standard = _non_standard_notes(summary)
    if non_standard:
        lines += ["", f"**{NOT_STANDARD_NOTE}:**", "", *(f"- {note}" for note in non_standard)]
    saturated = saturated_rounds(summary)
    if saturated:
        lines += ["", f"**Warning: {SATURATED_NOTE}:**", "", *(f"- {line}" for line in saturated)]
    lines += _scaling_markdown(summary)
    for case in summary.cases:
        lines += ["", f"## {_label(case)}", ""]
        if not _is_standard(case):
            lines += [f"{NOT_STANDARD_NOTE}: {_why(case)}.", ""]
        if case.task == names.BASE:
            lines += base_summary.case_markdown(case)
            continue
        if case.task == names.GENERATE:
            lines += generate_summary.case_markdown(case)
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
    lines += [f"| {n.node_rank} | {n.host} | {n.ranks} | {_fmt(n.stats['p_train'])} | "
              f"{_fmt(n.stats['p_core'])} |" for n in case.per_node]
    lines += [f"| {rank} | {ELSEWHERE} | | | |" for rank in _nodes_elsewhere(case)]
    lines.append(f"| total | | {case.nnodes * case.nproc} | {_fmt(case.stats['p_train'])} | "
                 f"{_fmt(case.stats['p_core'])} |")
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


def write_run_summary(run_dir: Path) -> tuple[RunSummary, list[str]]:
    """Write summary.json and summary.md into the run directory (atomically, each only when its content changed);
    (the summary, the paths written: none when the files held it already). One that cannot be written is still
    returned, with the reason in write_error."""
    run_dir = Path(run_dir)
    summary = summarize_run(run_dir)
    written = []
    try:
        for name, text in ((SUMMARY_JSON, files.json_text(summary.to_json())), (SUMMARY_MD, render_markdown(summary))):
            if files.atomic_update_text(run_dir / name, text):
                written.append(str(run_dir / name))
    except PerfplayError as exc:
        summary.write_error = str(exc)
    return summary, written
