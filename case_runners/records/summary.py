"""summary.json (`perfplay.run_summary/1`): a run's cases, each with its rounds and the mean and standard deviation
of their figures over the valid rounds, and the scaling tables; written on the controller at the end of the play
(case_runners/records/summary_build.py; views/summary/markdown.py renders it as summary.md, views/summary/text.py as
the table the play prints)."""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any

from case_runners.plan.config.standard import NON_STANDARD, STANDARD, read_standard
from case_runners.records import names
from case_runners.records.base import Measurement
from case_runners.records.names import SUMMARY_ROUND_STATUSES, TASKS
from case_runners.records.operation import OperationRow
from case_runners.records.schema import (
    ABSENT,
    Absent,
    Document,
    Problem,
    choices,
    described,
    key_name,
    object_entries,
    value_problems,
)

SUMMARY_JSON, SUMMARY_MD = "summary.json", "summary.md"  # in the run directory


@dataclasses.dataclass(kw_only=True)
class Stat(Document):
    """A figure over the valid rounds (success, not_converged)."""
    mean: float | None
    std: float | None  # the sample standard deviation; null below two values: one round has no spread
    n: int

    @classmethod
    def of(cls, values: list[float]) -> Stat:
        """The mean and sample standard deviation of values (none: nulls, n 0; one: its std null, the noise unknown)."""
        if not values:
            return cls(mean=None, std=None, n=0)
        return cls(mean=statistics.fmean(values), std=statistics.stdev(values) if len(values) > 1 else None,
                   n=len(values))


def round_keys(task: str) -> tuple[str, ...]:
    """The figures a summary round shows for its task, beside round, status and reason."""
    return (*names.summary_stats(task), "converged")


def stat_keys(task: str) -> tuple[str, ...]:
    """The figures a summary case has statistics of."""
    return (*names.summary_stats(task), "mfu")


def _figures(value: Any, where: str) -> list[Problem]:
    return [] if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)) else \
        [f"key '{where}': expected a number or null, got {described(value)}"]


def _rounds_problems(rounds: list[dict[str, Any]], where: str, task: str) -> list[Problem]:
    found: list[Problem] = []
    expected = ("round", "status", "reason", *round_keys(task))
    for at, entry in object_entries(rounds, where, found):
        found += [f"key '{key_name(at, k)}': unknown (allowed: {', '.join(sorted(expected))})"
                  for k in entry if k not in expected]
        found += [f"key '{key_name(at, k)}': missing" for k in expected if k not in entry]
        found += value_problems(int, entry.get("round"), key_name(at, "round")) if "round" in entry else []
        found += value_problems(str | None, entry.get("reason"), key_name(at, "reason")) if "reason" in entry else []
        if "status" in entry and entry["status"] not in SUMMARY_ROUND_STATUSES:
            found.append(f"key '{key_name(at, 'status')}': expected one of {', '.join(SUMMARY_ROUND_STATUSES)}, "
                         f"got {described(entry['status'])}")
        found += [p for k in round_keys(task) if k in entry and k != "converged"
                  for p in _figures(entry[k], key_name(at, k))]
        if "converged" in entry:
            found += value_problems(bool | None, entry["converged"], key_name(at, "converged"))
    return found


@dataclasses.dataclass(kw_only=True)
class SummaryNode(Document):
    """A node rank of a multi-node case: its throughputs (the sums of its ranks' own) over the valid rounds."""
    node_rank: int
    host: str  # its hosts over the rounds, joined by /
    ranks: int
    stats: dict[str, Stat]  # SUMMARY_NODE_STATS


@dataclasses.dataclass(kw_only=True)
class BaseRow(Document):
    """A base case's headline (records/base.py) over its valid rounds: the table FlagPerf's contributors write by
    hand (benchmark, precision or size, achieved, peak, fraction)."""
    benchmark: str
    kind: str  # the precision (gemm), copy/triad, single/total, pinned/pageable, the collective
    stat: str  # best or median over the sizes
    size: str | None  # where the best was reached (the last valid round's)
    unit: str
    achieved: Stat
    peak: float | None
    peak_key: str
    fraction_of_peak: Stat
    reason: str | None  # why the fraction is withheld
    source: str | Absent = ABSENT  # toolkit: the vendor's toolkit's figure (records/base.py); absent: torch's


@dataclasses.dataclass(kw_only=True)
class GenerateRow(Document):
    """A generate case's combination over its valid rounds (records/summary_generate_rows.py): each latency figure and
    tokens/s, mean and std over the rounds."""
    batch: int
    prompt_len: int
    output_len: int
    ttft_ms: dict[str, Stat]  # mean, p50, p99: each round's figure, over the rounds
    tpot_ms: dict[str, Stat]
    tokens_per_s: Stat
    agreement: Stat
    agreement_note: str  # the last valid round's
    prompt_digests: list[str]  # the distinct prompt digests over the rounds: one when every round had the same
    output_digests: list[str]  # the distinct output digests (rank 0's) over the rounds


@dataclasses.dataclass(kw_only=True)
class SummaryCase(Document):
    case_id: str
    case: str
    task: str = dataclasses.field(metadata=choices(*TASKS))
    vendor: str | None  # null for a round that left nothing to say it (no readable resolved config)
    hardware: str | None
    nnodes: int
    nproc: int
    framework: str | None
    metric: str | None
    target: float | None
    standard: bool | Absent = ABSENT  # false if any round was not standard; absent (before the flag): standard
    non_standard: list[str] | Absent = ABSENT
    rounds: list[dict[str, Any]]  # round, status, reason and the round's figures (round_keys)
    memory_total_bytes: int | None | Absent = ABSENT  # (inference) the device's memory
    mfu_basis: str | None | Absent = ABSENT  # (inference) what MFU is computed on
    unit: str | Absent = ABSENT  # (training) of its throughputs, when not samples/s: tokens/s (a language model's)
    base: list[BaseRow] | Absent = ABSENT  # (base) its headlines over the valid rounds
    measurements: list[Measurement] | Absent = ABSENT  # (base) every figure of its last valid round
    generate: list[GenerateRow] | Absent = ABSENT  # (generate) its combinations over the valid rounds
    checkpoint: str | None | Absent = ABSENT  # (generate) the weights of its last valid round: a directory or
    #                                           "random weights"
    operation: list[OperationRow] | Absent = ABSENT  # (operation) the rows of its last valid round
    stats: dict[str, Stat]  # stat_keys: {mean, std, n} over the valid rounds
    per_node: list[SummaryNode]
    succeeded: int
    converged: int
    status: str  # success when every round succeeded, else the statuses of its rounds, comma-separated

    @classmethod
    def more_problems(cls, doc: dict[str, Any], where: str) -> list[Problem]:
        """The rounds' figures and the statistics are those of the case's task."""
        found: list[Problem] = []
        if doc.get("task") in TASKS:
            if isinstance(doc.get("rounds"), list):
                found += _rounds_problems(doc["rounds"], key_name(where, "rounds"), doc["task"])
            if isinstance(doc.get("stats"), dict):
                wanted = stat_keys(doc["task"])
                found += [f"key '{key_name(where, 'stats')}': missing {k}" for k in wanted if k not in doc["stats"]]
                found += [f"key '{key_name(where, 'stats')}.{k}': unknown (allowed: {', '.join(wanted)})"
                          for k in doc["stats"] if k not in wanted]
        return found

    def standard_fields(self) -> dict[str, Any]:
        """standard and non_standard (plan/config/standard.py), a case without them counting as standard."""
        return read_standard({key: value for key in (STANDARD, NON_STANDARD)
                              if (value := getattr(self, key)) is not ABSENT})


@dataclasses.dataclass(kw_only=True)
class ScalingRow(Document):
    case_id: str
    standard: bool
    nnodes: int
    nproc: int
    devices: int
    throughput: Stat
    speedup: float | None
    efficiency: float | None
    reason: str | None  # why speedup and efficiency are null


@dataclasses.dataclass(kw_only=True)
class ScalingGroup(Document):
    """A case run at two scales or more: speed-up and efficiency over the smallest."""
    case: str
    vendor: str | None
    hardware: str | None
    framework: str | None
    basis: str
    unit: str
    base: str  # the smallest scale's case id
    base_devices: int
    reason: str | None  # why speed-ups are withheld
    rows: list[ScalingRow]


@dataclasses.dataclass(kw_only=True)
class RunSummary(Document):
    SCHEMA = "perfplay.run_summary/1"

    run_id: str | None
    cases: list[SummaryCase]
    ok: bool  # every round of every case succeeded
    failed_rounds: list[str]  # "<case_id> round <N>: <status>: <reason>", for each round that is not valid
    non_standard_cases: list[str]
    scaling: list[ScalingGroup]
    # "<case_id> round <N>: <node dir>: ..." for each node whose host CPUs other processes saturated during the round
    # (monitors/summary.py saturated_by_others); absent when none was
    saturated_rounds: list[str] | Absent = ABSENT
    run_dir: str | Absent = ABSENT
    write_error: str | Absent = ABSENT  # only in the answer when the files could not be written
