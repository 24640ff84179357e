"""The generate task's figures (`measurements` of a generate rank result, `combinations` and the headline of its
round record): per combination of batch size, prompt length and output length, the time to first token (TTFT:
the prefill and the first token), the time per output token (TPOT: each next token) and tokens/s. The measuring is
in case_runners/tasks/generate/.

A rank measures its own device; a round pools the ranks' latencies (every sample of every rank) and sums their
tokens/s.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

from case_runners.records.schema import ABSENT, Absent, Document

MS = 1000.0
RANDOM_WEIGHTS = "random weights"  # the checkpoint a record names when the model was not loaded from one
NO_ENGINE = "no engine"  # why agreement is null: only the framework (eager torch) path ran


@dataclasses.dataclass(kw_only=True)
class Latency(Document):
    """Milliseconds: the mean, the median and the 99th percentile (linear between order statistics); nulls
    without samples (TPOT of an output of one token)."""
    mean: float | None
    p50: float | None
    p99: float | None

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Latency:
        if not seconds:
            return cls(mean=None, p50=None, p99=None)
        ms = sorted(s * MS for s in seconds)
        return cls(mean=statistics.fmean(ms), p50=percentile(ms, 50), p99=percentile(ms, 99))


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile of sorted values, interpolated linearly between the two nearest ranks (numpy's
    default)."""
    at = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(at), math.ceil(at)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


@dataclasses.dataclass(kw_only=True)
class GenerateMeasurement(Document):
    """One combination on one rank: every timed sample, and the figures of them."""
    batch: int
    prompt_len: int
    output_len: int
    iterations: int  # timed generations (after the warm-up ones)
    ttft_s: list[float]  # per timed generation: the prefill and the first token
    tpot_s: list[float]  # every decode step of the timed generations: one next token each
    generation_s: list[float]  # per timed generation: its TTFT and its decode steps
    ttft_ms: Latency
    tpot_ms: Latency
    tokens_per_s: float  # batch x output_len / the mean generation time
    prompt_digest: str  # sha256 of the prompts' ids (int64, little-endian): the same every round
    output_digest: str  # sha256 of the output ids of the last timed generation
    agreement: float | None  # the share of output tokens on which the engine path agrees with the eager one
    agreement_note: str  # what the agreement compares, or why it is null
    decode: str | Absent = ABSENT  # how the torch path decoded (tasks/generate DECODES); absent: eager, before it
    compile_s: float | None | Absent = ABSENT  # compiled decoding: the combination's first generation, untimed
    prompt_agreement: list[float] | Absent = ABSENT  # an engine's agreement per prompt (absent: no engine)


@dataclasses.dataclass(kw_only=True)
class Combination(Document):
    """One combination of a round: the ranks' samples pooled, their tokens/s summed."""
    batch: int
    prompt_len: int
    output_len: int
    ranks: int  # the ranks that measured it
    iterations: int  # timed generations per rank
    ttft_ms: Latency
    tpot_ms: Latency
    tokens_per_s: float
    agreement: float | None  # the lowest of the ranks'
    agreement_note: str
    prompt_digest: str  # rank 0's
    output_digest: str  # rank 0's
    outputs_differ: list[int]  # the ranks whose outputs differ from rank 0's (the same prompts and weights)
    decode: str | Absent = ABSENT  # rank 0's
    compile_s: float | None | Absent = ABSENT  # the longest of the ranks' (null without compiled decoding)
    prompt_agreement: list[float] | Absent = ABSENT  # rank 0's


def combine(per_rank: Sequence[Sequence[GenerateMeasurement]]) -> list[Combination]:
    """The round's combinations from every rank's measurements (rank 0's first), in the order measured."""
    groups: dict[tuple[int, int, int], list[tuple[int, GenerateMeasurement]]] = {}
    for rank, measurements in enumerate(per_rank):
        for m in measurements:
            groups.setdefault((m.batch, m.prompt_len, m.output_len), []).append((rank, m))
    found = []
    for (batch, prompt_len, output_len), group in groups.items():
        first = group[0][1]
        agreements = [m.agreement for _, m in group if m.agreement is not None]
        compiles = [m.compile_s for _, m in group if isinstance(m.compile_s, float)]
        found.append(Combination(
            batch=batch, prompt_len=prompt_len, output_len=output_len, ranks=len(group), iterations=first.iterations,
            ttft_ms=Latency.of([s for _, m in group for s in m.ttft_s]),
            tpot_ms=Latency.of([s for _, m in group for s in m.tpot_s]),
            tokens_per_s=sum(m.tokens_per_s for _, m in group),
            agreement=min(agreements) if len(agreements) == len(group) else None,
            agreement_note=first.agreement_note, prompt_digest=first.prompt_digest, output_digest=first.output_digest,
            outputs_differ=[rank for rank, m in group if m.output_digest != first.output_digest],
            decode=first.decode, compile_s=max(compiles) if len(compiles) == len(group) else None,
            prompt_agreement=first.prompt_agreement))
    return found


def headline(combinations: Sequence[Combination]) -> dict[str, float | None]:
    """A round's figures over its combinations (the summary's mean and std over rounds): the first combination's
    TTFT and TPOT medians, the highest tokens/s, and the lowest agreement (null where any is null)."""
    if not combinations:
        return {"ttft_ms": None, "tpot_ms": None, "tokens_per_s": None, "agreement": None}
    agreements = [c.agreement for c in combinations]
    return {"ttft_ms": combinations[0].ttft_ms.p50, "tpot_ms": combinations[0].tpot_ms.p50,
            "tokens_per_s": max(c.tokens_per_s for c in combinations),
            "agreement": None if None in agreements else min(a for a in agreements if a is not None)}
