"""rank<R>.result.json (`perfplay.rank_result/1`): what one rank reports when it ends, however it ends.

Seven variants under one schema: a training rank's result, an inference rank's, a base benchmark rank's, a
generate rank's, an operation rank's, a failed rank's (any task), and a silent training rank's (a vendor stack's rank
whose program does not log the steps: `logged_by` names the rank whose log does). RankResult.from_json picks the
variant from the document (status failed, logged_by, task inference, base, generate or operation, else training).
The rank runtime writes it (case_runners/rank/worker.py) from what the task returns; rank 0's is authoritative, or
the rank its logged_by names.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from case_runners.plan.config.benchmarks import BENCHMARKS
from case_runners.records.base import Headline, Measurement
from case_runners.records.environment import Threads
from case_runners.records.generate import GenerateMeasurement
from case_runners.records.names import (
    BASE,
    FAILED,
    GENERATE,
    INFERENCE,
    NOT_CONVERGED,
    OPERATION,
    STOP_REASONS,
    SUCCESS,
)
from case_runners.records.operation import OperationRow
from case_runners.records.schema import ABSENT, Absent, Document, choices

RESULT_PATTERN = re.compile(r"^rank(?P<rank>\d+)\.result\.json$")  # in the node directory


def result_name(rank: int) -> str:
    """The rank's result file, in its node directory."""
    return f"rank{rank}.result.json"


@dataclasses.dataclass(kw_only=True)
class RankResult(Document):
    """What every variant has; from_json gives the variant the document is."""
    SCHEMA = "perfplay.rank_result/1"

    rank: int
    world_size: int
    status: str
    threads: Threads | Absent = ABSENT  # the rank's thread settings (rank/start.py); absent from results from before

    @classmethod
    def variant(cls, doc: dict[str, Any]) -> type[Document]:
        if cls is not RankResult:
            return cls
        if doc.get("status") == FAILED:
            return FailedRankResult
        if LOGGED_BY in doc:
            return SilentRankResult
        return {INFERENCE: InferenceRankResult, BASE: BaseRankResult,
                GENERATE: GenerateRankResult, OPERATION: OperationRankResult}.get(str(doc.get("task")),
                                                                                  TrainingRankResult)


@dataclasses.dataclass(kw_only=True)
class TrainerResult(Document):
    """The trainer's figures (case_runners/tasks/training/trainer.py, which explains each time): what Trainer.run
    returns, a training rank's result but the fields of the task and the rank runtime."""
    status: str = dataclasses.field(metadata=choices(SUCCESS, NOT_CONVERGED))
    stop_reason: str = dataclasses.field(metadata=choices(*STOP_REASONS))
    converged: bool
    metric: str  # the target metric
    final_metric: float | None  # its last value
    target: float  # the value to reach
    samples: int  # global
    steps: int
    epochs: int
    init_time: float
    train_time: float
    train_no_eval_time: float
    core_time: float  # the mean over ranks
    eval_time: float
    p_whole: float
    p_train: float
    p_core: float
    rank_samples: int  # this rank's own
    rank_core_time: float
    rank_p_whole: float
    rank_p_train: float
    rank_p_core: float
    device: str  # the device type
    amp: bool
    precision: str  # fp32, tf32, bf16, fp16
    peak_memory_bytes: int | None  # as the vendor's runtime hook reports it
    metrics_history: list[dict[str, Any]]  # every evaluation: epoch, step and the case's metrics
    adapted: list[str]  # the trainer points of the vendor's extern/ adapter that ran (before: those it defined)
    adapter: str | None  # its file
    optimizer: str  # the optimizer class that ran
    standard_optimizer: str  # the case's own


@dataclasses.dataclass(kw_only=True)
class FlopsCount(Document):
    """Training FLOPs per sample rank 0 counted at the run's shape (a case's `flops_per_sample: counted`)."""
    per_sample: float | None  # null: see note
    convention: str  # how they were counted
    cached: bool  # read from the count cache (same case, shape params, case sources and torch)
    note: str | None  # why per_sample is null


@dataclasses.dataclass(kw_only=True)
class TrainingRankResult(TrainerResult, RankResult):
    """A training rank's result: the trainer's figures (TrainerResult), with the rank's and the task's."""
    versions: dict[str, Any]  # torch, and what the vendor's runtime hook reports
    e2e_time: float  # from the rank's start to its end
    flops: FlopsCount | Absent = ABSENT  # rank 0 of a case whose FLOPs are counted (resolved config flops_counted)


@dataclasses.dataclass(kw_only=True)
class InferenceRankResult(RankResult):
    """The inference pipeline's figures, steps a-g (case_runners/tasks/inference/pipeline.py)."""
    status: str = dataclasses.field(metadata=choices(SUCCESS))
    task: str = dataclasses.field(metadata=choices(INFERENCE))
    device: str
    steps: list[str]  # the steps that ran, a to g
    compiler: str | None
    precision: str
    batch_size: int
    p_validation_whole: float | None
    p_validation_core: float | None
    p_inference_whole: float | None
    p_inference_core: float | None
    validation_items: int | None
    inference_items: int | None
    validation_accuracy: float | None
    inference_accuracy: float | None
    agreement: float | None  # the share of predictions on which torch and the engine agree
    foo_time_s: float | None
    compile_s: float | None
    onnx_path: str | None
    pipeline_time_s: float
    flops_per_item: float
    flops_per_s: float | None
    compiled_path: str | None
    monitor_devices: list[int] | None  # the rank's devices in the vendor monitor's numbering
    torch_peak_memory_bytes: int | None
    versions: dict[str, Any]
    e2e_time: float


@dataclasses.dataclass(kw_only=True)
class BaseRankResult(RankResult):
    """A base benchmark's figures on this rank's device (case_runners/tasks/base/; a collective's are the ranks'
    together: the slowest rank's time)."""
    status: str = dataclasses.field(metadata=choices(SUCCESS))
    task: str = dataclasses.field(metadata=choices(BASE))
    benchmark: str = dataclasses.field(metadata=choices(*BENCHMARKS))
    device: str
    measurements: list[Measurement]  # one per variant and size
    headlines: list[Headline]  # per variant: the best over sizes (gemm: and the median)
    convention: str  # how the figures are counted (plan/config/benchmarks.py)
    versions: dict[str, Any]
    e2e_time: float


@dataclasses.dataclass(kw_only=True)
class GenerateRankResult(RankResult):
    """The case's model generating on this rank's device, each combination timed (case_runners/tasks/generate/)."""
    status: str = dataclasses.field(metadata=choices(SUCCESS))
    task: str = dataclasses.field(metadata=choices(GENERATE))
    device: str
    dtype: str  # the weights' on the device
    checkpoint: str  # the checkpoint directory the weights came from, or "random weights"
    prompts: str  # where the prompts came from: the token file, or random ids
    measurements: list[GenerateMeasurement]  # one per combination, in the order measured
    versions: dict[str, Any]
    e2e_time: float


@dataclasses.dataclass(kw_only=True)
class OperationRankResult(RankResult):
    """The operators measured on this rank's device (case_runners/tasks/operation/): not_converged when one is not
    correct (a valid result that missed its target: `incorrect` names them)."""
    status: str = dataclasses.field(metadata=choices(SUCCESS, NOT_CONVERGED))
    task: str = dataclasses.field(metadata=choices(OPERATION))
    device: str
    oplibs: list[str]  # the sides, native first
    operation: list[OperationRow]  # per operator x dtype x oplib, in the order measured
    incorrect: list[str]  # "op dtype oplib" of each row not correct
    versions: dict[str, Any]
    e2e_time: float


LOGGED_BY = "logged_by"  # a silent rank's result: the rank whose log carries the round's steps


@dataclasses.dataclass(kw_only=True)
class SilentRankResult(RankResult):
    """A training rank that ran its vendor stack's program to a good end without logging the steps (the stack's
    log_rank, vendors/vendor_stacks.py): the round's figures are those of the rank `logged_by` names."""
    status: str = dataclasses.field(metadata=choices(SUCCESS))
    logged_by: int
    versions: dict[str, Any]
    e2e_time: float


@dataclasses.dataclass(kw_only=True)
class FailedRankResult(RankResult):
    status: str = dataclasses.field(metadata=choices(FAILED))
    reason: str  # a traceback, or where a signal stopped the rank
    e2e_time: float


def build_rank_result(rank: int, world_size: int, fields: dict[str, Any], e2e_time: float) -> RankResult:
    """The result of a rank from what its task returned (`fields`: its variant's keys but rank, world_size and
    e2e_time). Fields that do not make a valid result (a task's bug) make a failed one that names them instead."""
    doc = {"schema": RankResult.SCHEMA, "rank": rank, "world_size": world_size, **fields, "e2e_time": e2e_time}
    kind = RankResult.variant(doc)
    problems = kind.problems(doc)
    if not problems:
        return kind.from_json(doc)  # type: ignore[return-value]
    return FailedRankResult(rank=rank, world_size=world_size, status=FAILED, e2e_time=e2e_time,
                            reason=f"the task's result is not a valid {kind.__name__}: {'; '.join(problems)}")
