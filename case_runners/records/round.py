"""round_record.json (`perfplay.round_record/1`): the record of one round of a case, built on the controller from
every node directory of the round (case_runners/records/round_build.py). A run directory written before it had this name
holds it as result.json, which every reader still reads (record_path, find_records).

Five variants under one schema, by the record's task: a training round's (per-node throughputs, its throughput
block on p_train), an inference round's (the pipeline's metrics; one rank, no per-node throughputs), a base
round's (its benchmark's measurements and headlines, each with its fraction of the vendor's peak; no throughput),
a generate round's (its combinations' TTFT, TPOT and tokens/s, pooled over the ranks) and an operation round's (rank
0's operator rows).
Rank 0's metrics are the round's; its type is the rank result's for the same key (records/rank.py), or null where
rank 0 left none.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

from case_runners.plan.config.standard import NON_STANDARD, STANDARD, read_standard
from case_runners.records import names
from case_runners.records.environment import Environment
from case_runners.records.generate import Combination
from case_runners.records.names import BASE, GENERATE, INFERENCE, NODE_STATUSES, OPERATION, ROUND_STATUSES, TASKS
from case_runners.records.rank import (
    BaseRankResult,
    GenerateRankResult,
    InferenceRankResult,
    OperationRankResult,
    RankResult,
    TrainingRankResult,
)
from case_runners.records.schema import (
    ABSENT,
    Absent,
    Document,
    Problem,
    check,
    choices,
    described,
    field_names,
    key_name,
    object_entries,
    value_problems,
)

RECORD_NAME = "round_record.json"  # in the round directory
OLD_RECORD_NAME = "result.json"  # its name in a run directory written before; read, never written


def record_path(round_dir: Path) -> Path:
    """The round record of `round_dir`: its RECORD_NAME, or its OLD_RECORD_NAME where only that one is there (a run
    directory written before the rename). The path may not exist: the round has no record."""
    path = round_dir / RECORD_NAME
    old = round_dir / OLD_RECORD_NAME
    return old if not path.exists() and old.exists() else path


def find_records(root: Path, round_dirs: str) -> list[Path]:
    """The round records of the round directories `root.glob(round_dirs)` matches (record_path: one per round,
    either name), sorted."""
    return sorted(path for path in map(record_path, root.glob(round_dirs)) if path.is_file())


@dataclasses.dataclass(kw_only=True)
class DeviceMemory(Document):
    """Peak device memory used and the total, from node 0's vendor monitor (the cpu vendor's: the host's RAM)."""
    peak_used_bytes: int | None
    total_bytes: int | None
    devices: list[int] | None  # the rank's devices, when the monitor could tell; else the node's figure
    source: str | None
    samples: int


@dataclasses.dataclass(kw_only=True)
class Mfu(Document):
    """Model FLOPs utilisation: value = basis x flops_per_sample / (peak_flops_per_device x devices)."""
    value: float | None
    basis: str
    flops_per_sample: float
    precision: str
    peak_flops_per_device: float | None
    devices: int
    convention: str
    reason: str | Absent = ABSENT  # why value is null


@dataclasses.dataclass(kw_only=True)
class TrainingThroughput(Document):
    """The global throughput (rank 0's) beside each node's, by host (by node directory where hosts repeat)."""
    basis: str
    unit: str
    total: float | None
    per_node: dict[str, float | None]
    total_p_core: float | None
    per_node_p_core: dict[str, float | None]


@dataclasses.dataclass(kw_only=True)
class InferenceThroughput(Document):
    basis: str
    unit: str
    total: float | None
    whole: float | None


@dataclasses.dataclass(kw_only=True)
class NodeEntry(Document):
    """A node of the round, from its node_result.json."""
    host: str
    node_rank: int
    status: str = dataclasses.field(metadata=choices(*NODE_STATUSES))
    reason: str | None
    duration_s: float | None  # null when the node left no result
    dir: str  # its node directory in the round directory


@dataclasses.dataclass(kw_only=True)
class TrainingNodeEntry(NodeEntry):
    """A node of a training round, with the sums of its ranks' own figures (null unless every rank reported)."""
    ranks: int  # how many of its ranks left a result
    samples: int | None
    p_whole: float | None
    p_train: float | None
    p_core: float | None
    throughput_reason: str | Absent = ABSENT  # why p_train is null


def _metric_types(result: type[RankResult]) -> dict[str, Any]:
    hints = typing.get_type_hints(result)
    return {key: hints[key] | None for key in field_names(result)}


_TRAINING_TYPES = _metric_types(TrainingRankResult)
_INFERENCE_TYPES = _metric_types(InferenceRankResult)
_BASE_TYPES = _metric_types(BaseRankResult)
_OPERATION_TYPES = _metric_types(OperationRankResult)
_GENERATE_TYPES = {**_metric_types(GenerateRankResult), "combinations": list[Combination] | None,
                   **{key: float | None for key in names.GENERATE_HEADLINE}}


def _metrics_check(keys: tuple[str, ...], types: dict[str, Any]) -> Any:
    """metrics: exactly `keys` (rank 0's, each of its rank result's type or null) and device_memory."""
    def problems(value: dict[str, Any], where: str) -> list[Problem]:
        found: list[Problem] = []
        expected = (*keys, names.DEVICE_MEMORY)
        for key in value:
            if key not in expected:
                found.append(f"key '{key_name(where, key)}': unknown (allowed: {', '.join(sorted(expected))})")
        for key in expected:
            if key not in value:
                found.append(f"key '{key_name(where, key)}': missing")
            elif key == names.DEVICE_MEMORY:
                found += DeviceMemory.problems(value[key], key_name(where, key))
            else:
                found += value_problems(types[key], value[key], key_name(where, key))
        return found
    return check(problems)


def _per_rank_check(value: list[dict[str, Any]], where: str) -> list[Problem]:
    """per_rank: every rank result, with the host and node rank of its node."""
    found: list[Problem] = []
    for at, entry in object_entries(value, where, found):
        found += [f"key '{key_name(at, key)}': expected {what}, got {described(entry.get(key))}"
                  for key, kind, what in (("host", str, "a string"), ("node_rank", int, "an integer"))
                  if not isinstance(entry.get(key), kind) or isinstance(entry.get(key), bool)]
        found += RankResult.problems({k: v for k, v in entry.items() if k not in ("host", "node_rank")}, at)
    return found


@dataclasses.dataclass(kw_only=True)
class RoundRecord(Document):
    """What every variant has; from_json gives the variant (by task)."""
    SCHEMA = "perfplay.round_record/1"

    run_id: str
    case_id: str
    case: str
    vendor: str
    hardware: str
    framework: str | None
    framework_version: str | Absent = ABSENT  # the resolved config's, when its framework key had one
    nnodes: int
    nproc: int
    round: int
    status: str = dataclasses.field(metadata=choices(*ROUND_STATUSES))
    reason: str | None
    task: str = dataclasses.field(metadata=choices(*TASKS))
    adapted: list[str]  # the adapter points rank 0 ran (records before issue 27: those it defined)
    versions: dict[str, Any] | None  # rank 0's software stack
    # The checkout, software, host and devices of the round (records/environment.py); absent: a record from before
    environment: Environment | Absent = ABSENT
    standard: bool | Absent = ABSENT  # absent (a record from before the flag): standard
    non_standard: list[str] | Absent = ABSENT
    metrics: dict[str, Any]
    mfu: Mfu
    throughput: Any
    per_node: list[Any]
    per_rank: list[dict[str, Any]] = dataclasses.field(metadata=check(_per_rank_check))
    monitors: dict[str, dict[str, dict[str, Any]]]  # per node directory, per monitor: its summary
    params: dict[str, Any]
    orchestration_errors: list[str] | Absent = ABSENT  # the tasks that failed on the hosts of the round
    # The node ranks whose node directories stay on their own hosts (`case_runners run --nnode N` on each host, no
    # controller to collect them): not read, and not missing; node 0's launcher saw them end (its status says how).
    nodes_elsewhere: list[int] | Absent = ABSENT
    # The rank whose result gives metrics, status and versions (and whose events the loss curve), where not rank 0:
    # a vendor stack that logs its steps on another rank (its log_rank; rank 0's result is silent, logged_by it).
    metrics_rank: int | Absent = ABSENT
    write_error: str | Absent = ABSENT  # only in the answer when the record could not be written

    @classmethod
    def variant(cls, doc: dict[str, Any]) -> type[Document]:
        if cls is not RoundRecord:
            return cls
        return {INFERENCE: InferenceRoundRecord, BASE: BaseRoundRecord,
                GENERATE: GenerateRoundRecord, OPERATION: OperationRoundRecord}.get(str(doc.get("task")),
                                                                                    TrainingRoundRecord)

    def standard_fields(self) -> dict[str, Any]:
        """standard and non_standard (plan/config/standard.py), a record without them counting as standard."""
        return read_standard({key: value for key in (STANDARD, NON_STANDARD)
                              if (value := getattr(self, key)) is not ABSENT})


@dataclasses.dataclass(kw_only=True)
class TrainingRoundRecord(RoundRecord):
    metrics: dict[str, Any] = dataclasses.field(metadata=_metrics_check(names.TRAINING_METRICS, _TRAINING_TYPES))
    throughput: TrainingThroughput
    per_node: list[TrainingNodeEntry]


@dataclasses.dataclass(kw_only=True)
class InferenceRoundRecord(RoundRecord):
    metrics: dict[str, Any] = dataclasses.field(metadata=_metrics_check(names.INFERENCE_METRICS, _INFERENCE_TYPES))
    throughput: InferenceThroughput
    per_node: list[NodeEntry]


@dataclasses.dataclass(kw_only=True)
class BaseRoundRecord(RoundRecord):
    """A base benchmark's round: rank 0's measurements (records/base.py); its mfu has no value (each measurement has
    its fraction of peak instead), and it has no throughput."""
    metrics: dict[str, Any] = dataclasses.field(metadata=_metrics_check(names.BASE_METRICS, _BASE_TYPES))
    throughput: None
    per_node: list[NodeEntry]


@dataclasses.dataclass(kw_only=True)
class GenerateRoundRecord(RoundRecord):
    """A generate round: its combinations, every rank's samples pooled and tokens/s summed (records/generate.py),
    and their headline; no MFU (latencies and tokens/s), no throughput block."""
    metrics: dict[str, Any] = dataclasses.field(metadata=_metrics_check(names.GENERATE_METRICS, _GENERATE_TYPES))
    throughput: None
    per_node: list[NodeEntry]


@dataclasses.dataclass(kw_only=True)
class OperationRoundRecord(RoundRecord):
    """An operation round: rank 0's rows (records/operation.py), each with its own FLOP/s and roofline fraction; no
    MFU, no throughput block."""
    metrics: dict[str, Any] = dataclasses.field(metadata=_metrics_check(names.OPERATION_METRICS, _OPERATION_TYPES))
    throughput: None
    per_node: list[NodeEntry]
