"""What the report shows, read from run directories: each run's summary and records (records/summary_build.py), and per
round with a record rank 0's loss curve (views/compare/rounds.py), its eval metric per evaluation, node 0's monitor
samples and the training phases from rank 0's events. What cannot be read is kept as a note, never an error: a
report shows what a run left."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, TypeGuard

from case_runners.core.errors import PerfplayError
from case_runners.monitors.host import HostMonitor
from case_runners.monitors.spec import SAMPLES_SUFFIX
from case_runners.monitors.summary import read_samples
from case_runners.rank.driver.events import (
    EVALUATE,
    EVALUATE_BEGIN,
    INFERENCE_STEP,
    INIT_END,
    INIT_START,
    LAUNCH_INFERENCE,
    TRAIN_END,
    TRAIN_START,
    events_path,
    read_events,
)
from case_runners.records import names
from case_runners.records.round import RoundRecord
from case_runners.records.run_dir import check_run_dir
from case_runners.records.schema import ABSENT
from case_runners.records.summary import RunSummary, SummaryCase
from case_runners.records.summary_build import Round, load_records, summarize_run
from case_runners.views.compare.rounds import RANK, loss_curve, reporting_rank
from case_runners.views.summary.cells import GIB

# The phases of a training round shaded on the monitor plots: (name, the event that opens it, the one that closes
# it).
PHASES = (("init", INIT_START, INIT_END), ("training", TRAIN_START, TRAIN_END),
          ("evaluation", EVALUATE_BEGIN, EVALUATE))
# An inference round's phases: its pipeline's steps, each from the previous step's INFERENCE_STEP (the first from
# LAUNCH_INFERENCE) to its own.
INFERENCE_PHASES = tuple(names.INFERENCE_STEP_NAMES.values())
PHASE_NAMES = tuple(dict.fromkeys([*(name for name, _, _ in PHASES), *INFERENCE_PHASES]))
NODE = 0  # whose monitors are shown: rank 0's node, whose events mark the phases


@dataclasses.dataclass(frozen=True)
class Phase:
    name: str
    start: float  # seconds since the epoch, as the monitors' ts
    end: float


@dataclasses.dataclass
class Monitors:
    """Node 0's monitor samples of a round, by monitor name (host, and the vendor's), and rank 0's phases."""
    node_dir: Path
    samples: dict[str, list[dict[str, Any]]]
    phases: list[Phase]
    notes: list[str]  # what could not be read

    @property
    def host(self) -> list[dict[str, Any]]:
        return self.samples.get(HostMonitor.name, [])

    @property
    def devices(self) -> dict[str, list[dict[str, Any]]]:
        """The accelerator monitors' samples (each sample with its devices)."""
        return {name: s for name, s in self.samples.items() if name != HostMonitor.name}


@dataclasses.dataclass
class RoundData:
    """A round as the report draws it: its record (or stand-in) and what its directory holds beside it."""
    record: Round
    loss: dict[int, float]  # step -> rank 0's loss
    evals: list[tuple[int, float]]  # (step, eval metric) of rank 0's evaluations
    monitors: Monitors | None
    notes: list[str]  # why the loss curve or the monitors are missing

    @property
    def valid(self) -> bool:
        return self.record.status in names.VALID_STATUSES


@dataclasses.dataclass
class RunData:
    run_dir: Path
    summary: RunSummary
    rounds: list[RoundData]  # by case id and round

    @property
    def run_id(self) -> str:
        return self.summary.run_id or self.run_dir.name

    @property
    def label(self) -> str:
        """The run id and what it ran on (vendor and hardware of its cases)."""
        on = sorted({" ".join(x for x in (c.vendor, c.hardware) if x) for c in self.summary.cases} - {""})
        return f"{self.run_id} ({', '.join(on)})" if on else self.run_id

    def environments(self) -> list[tuple[dict[str, Any] | None, list[str]]]:
        """Each distinct environment of the run's records (None: not recorded) and the rounds it covers."""
        found: list[tuple[dict[str, Any] | None, list[str]]] = []
        for entry in self.rounds:
            value = getattr(entry.record, "environment", ABSENT)
            env = None if value is ABSENT or value is None else value.to_json() if hasattr(value, "to_json") \
                else dict(value)
            where = f"{entry.record.case_id} round {entry.record.round}"
            for known, rounds in found:
                if known == env:
                    rounds.append(where)
                    break
            else:
                found.append((env, [where]))
        return found


def read_run(run_dir: Path) -> RunData:
    run_dir = check_run_dir(Path(run_dir))
    rounds = [_round(run_dir, record) for record in sorted(load_records(run_dir), key=lambda r: (r.case_id, r.round))]
    return RunData(run_dir=run_dir, summary=summarize_run(run_dir), rounds=rounds)


def _round(run_dir: Path, record: Round) -> RoundData:
    if not isinstance(record, RoundRecord):  # a stand-in: nothing was recorded
        return RoundData(record, {}, [], None, [])
    node = next((n for n in record.per_node if n.node_rank == NODE), None)
    if node is None:
        return RoundData(record, {}, [], None, [f"no node {NODE} in its record"])
    node_dir = run_dir / record.case_id / f"round{record.round}" / node.dir
    notes: list[str] = []
    loss: dict[int, float] = {}
    if record.task == names.TRAINING:
        rank, node_rank = reporting_rank(record)  # rank 0, or the rank a vendor stack logs on
        reporter = next((n.dir for n in record.per_node if n.node_rank == node_rank), node.dir)
        try:
            loss = loss_curve(events_path(node_dir.parent / reporter, rank))
        except PerfplayError as exc:
            notes.append(str(exc))
    return RoundData(record, loss, _evals(record), _monitors(node_dir), notes)


def _evals(record: RoundRecord) -> list[tuple[int, float]]:
    """(step, eval metric) of the reporting rank's evaluations (rank 0's, or metrics_rank's): its metrics_history."""
    rank0 = next((r for r in record.per_rank if r.get("rank") == reporting_rank(record)[0]), {})
    metric = record.metrics.get("metric")
    return [(entry["step"], float(entry[metric])) for entry in rank0.get("metrics_history") or []
            if isinstance(entry, dict) and isinstance(entry.get("step"), int) and is_number(entry.get(metric))]


def is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _monitors(node_dir: Path) -> Monitors:
    samples, notes = {}, []
    for path in sorted(node_dir.glob(f"*{SAMPLES_SUFFIX}")):
        found, errors, first = read_samples(path)
        samples[path.name.removesuffix(SAMPLES_SUFFIX)] = sorted(found, key=lambda s: s["ts"])
        if errors:
            notes.append(f"{path}: {errors} unreadable line(s), the first: {first}")
    phases, note = _phases(events_path(node_dir, RANK))
    return Monitors(node_dir, samples, phases, notes + ([note] if note else []))


def _phases(path: Path) -> tuple[list[Phase], str | None]:
    """The phases of rank 0's events: a training round's (PHASES) and an inference round's (INFERENCE_PHASES)."""
    try:
        events = [e for e in read_events(path) if isinstance(e, dict)]
    except FileNotFoundError:
        return [], f"{path}: missing: no phases to mark"
    except (OSError, ValueError) as exc:
        return [], f"{path}: cannot be read ({exc}): no phases to mark"
    timed = [(e.get("event"), at) for e in events if (at := _seconds(e)) is not None]
    if not timed:
        return [], None
    return _training_phases(timed) + _inference_phases(events), None


def _training_phases(timed: list[tuple[Any, float]]) -> list[Phase]:
    """PHASES: each opening event to the next closing one (one still open ends at the last event)."""
    last = timed[-1][1]
    phases = []
    for name, opens, closes in PHASES:
        start = None
        for event, at in timed:
            if event == opens and start is None:
                start = at
            elif event == closes and start is not None:
                phases.append(Phase(name, start, at))
                start = None
        if start is not None:
            phases.append(Phase(name, start, last))
    return phases


def _inference_phases(events: list[dict[str, Any]]) -> list[Phase]:
    """The pipeline's steps that ended (an INFERENCE_STEP event naming a step of INFERENCE_STEP_NAMES), each from
    the end of the one before it."""
    phases, start = [], None
    for event in events:
        at = _seconds(event)
        if at is None:
            continue
        if event.get("event") == LAUNCH_INFERENCE:
            start = at
        elif event.get("event") == INFERENCE_STEP and start is not None:
            value = event.get("value")
            step = value.get("step") if isinstance(value, dict) else None
            name = names.INFERENCE_STEP_NAMES.get(step) if isinstance(step, str) else None
            if name is not None:
                phases.append(Phase(name, start, at))
            start = at
    return phases


def _seconds(event: dict[str, Any]) -> float | None:
    """When an event was logged (its metadata.time_ms), in seconds since the epoch."""
    metadata = event.get("metadata")
    at = metadata.get("time_ms") if isinstance(metadata, dict) else None
    return at / 1000.0 if is_number(at) else None


def scale_label(case: SummaryCase) -> str:
    """A case at a scale, as the charts name it whatever the vendor: "llama 1x8"."""
    return f"{case.case} {case.nnodes}x{case.nproc}"


def valid_rounds(runs: list[RunData]) -> int:
    """How many rounds of the runs have a valid result (success or not_converged)."""
    return sum(1 for run in runs for entry in run.rounds if entry.valid)


NONE = "-"  # how the report shows a null, an empty list or an empty document


def flat(value: Any, prefix: str = "") -> list[list[str]]:
    """A nested document (an environment) as (dotted key, text) rows."""
    if isinstance(value, dict):
        rows = [row for key, item in value.items() for row in flat(item, f"{prefix}.{key}" if prefix else key)]
        return rows or [[prefix, NONE]]
    if isinstance(value, list):
        return [[prefix, ", ".join(str(x) for x in value) or NONE]]
    if prefix.endswith("_bytes") and isinstance(value, int) and not isinstance(value, bool):
        return [[prefix, f"{value} ({value / GIB:.1f} GiB)"]]
    return [[prefix, NONE if value is None else str(value)]]
