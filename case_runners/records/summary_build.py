"""The run summary's aggregation: per case, mean and standard deviation over its rounds, as data (RunSummary).

Beside the global figures: each node's throughput (the sum of its ranks' own throughputs, from the round
records' per_node) and, for a case run at several scales, a scaling group (speed-up and efficiency
against the smallest scale, on p_train). Rendering is apart, in views/summary/: cells (the cells text, Markdown and
the report share), text (the end-of-run table), markdown (summary.md), files (writes both files).

A case whose rounds did not all run the standard workload (plan/config/standard.py) is marked so (standard,
non_standard) and listed in non_standard_cases: it is never shown as a standard result.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from case_runners.core import files
from case_runners.core.paths import RESOLVED_NAME
from case_runners.core.text import number_text
from case_runners.monitors.summary import saturated_by_others
from case_runners.plan.config.standard import NON_STANDARD, STANDARD, read_standard
from case_runners.records import names, summary_base_rows, summary_generate_rows
from case_runners.records.environment_build import HOST_MONITOR
from case_runners.records.operation import OperationRow
from case_runners.records.resolved import SAMPLES_PER_S, ResolvedConfig
from case_runners.records.round import Mfu, RoundRecord, TrainingNodeEntry, find_records
from case_runners.records.schema import ABSENT, RecordError
from case_runners.records.summary import (
    RunSummary,
    ScalingGroup,
    ScalingRow,
    Stat,
    SummaryCase,
    SummaryNode,
    round_keys,
)

SCALING_BASIS = names.THROUGHPUT_BASIS


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
                      non_standard_cases=[c.case_id for c in summary_cases if not is_standard(c)],
                      scaling=scaling([c for c in summary_cases if c.task == names.TRAINING]),
                      saturated_rounds=saturated or ABSENT)


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
        own = {"base": summary_base_rows.base_rows(entry.records),
               "measurements": summary_base_rows.last_measurements(entry.records)}
    if first.task == names.GENERATE:
        own = {"generate": summary_generate_rows.generate_rows(entry.records),
               "checkpoint": summary_generate_rows.last_checkpoint(entry.records)}
    if first.task == names.OPERATION:
        own = {"operation": last_operation_rows(entry.records)}
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


def last_operation_rows(records: list[Any]) -> list[OperationRow]:
    """An operation case's rows: its last valid round's."""
    valid = sorted((r for r in records if isinstance(r, RoundRecord) and r.status in names.VALID_STATUSES),
                   key=lambda r: r.round)
    return [OperationRow.from_json(row) for row in valid[-1].metrics.get("operation") or []] if valid else []


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
            row = ScalingRow(case_id=case.case_id, standard=is_standard(case), nnodes=case.nnodes, nproc=case.nproc,
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


def is_standard(case: SummaryCase | ScalingRow) -> bool:
    """Whether a summary case (every round of it) or a scaling row ran the standard workload."""
    return case.standard if isinstance(case, ScalingRow) else case.standard_fields()[STANDARD]


def case_unit(case: SummaryCase) -> str:
    """A training case's throughput unit: samples/s, or tokens/s (a language model's)."""
    return SAMPLES_PER_S if case.unit is ABSENT else str(case.unit)


def training_units(summary: RunSummary) -> list[str]:
    """The throughput units of the summary's training cases, samples/s first: one table each."""
    units = {case_unit(c) for c in summary.cases if c.task == names.TRAINING}
    return sorted(units, key=lambda u: (u != SAMPLES_PER_S, u))
