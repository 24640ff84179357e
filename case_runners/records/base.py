"""A base benchmark's figures (`measurements` and `headlines` of a base rank result, round record and summary):
one Measurement per kind and size, and the Headlines the summary table shows (best, and for gemm the median,
over sizes). The benchmarks themselves are in case_runners/tasks/base/."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable

from case_runners.plan.config.benchmarks import BENCHMARKS, SOURCES, Peak, fraction
from case_runners.records.schema import ABSENT, Absent, Document, choices

BEST, MEDIAN = "best", "median"
HEADLINE_STATS = (BEST, MEDIAN)
MEDIAN_OF = ("gemm",)  # the benchmarks whose headlines also give the median over sizes


@dataclasses.dataclass(kw_only=True)
class Measurement(Document):
    """One kind at one size: what was timed, and the figure against its peak."""
    benchmark: str = dataclasses.field(metadata=choices(*BENCHMARKS))
    kind: str  # gemm: the precision; memory_bandwidth: copy or triad; memory_capacity: single or total;
    #               h2d, d2h: pinned or pageable; a collective: its operation
    size: str  # as shown: "4096x4096x4096", "64 MiB"
    bytes: int | None  # the bytes moved or held per iteration (gemm: null; its shape says it)
    shape: list[int] | Absent = ABSENT  # gemm: [M, N, K]
    iterations: int  # timed iterations (after the warm-up ones)
    seconds: float | None  # per iteration (memory_capacity: null)
    achieved: float  # in unit (a collective: the bus bandwidth)
    unit: str
    algbw: float | Absent = ABSENT  # a collective: bytes / seconds (nccl-tests' algorithm bandwidth)
    peak: float | None
    peak_key: str  # the vendor.yaml key of the peak: hardware.<HW>.<key>
    fraction_of_peak: float | None
    reason: str | Absent = ABSENT  # why fraction_of_peak is null
    note: str | Absent = ABSENT  # what bounded the figure (a cap), or how it was counted
    # toolkit: the vendor's toolkit program measured it (vendors/toolkits.py); absent: perfplay's torch benchmark
    source: str | Absent = dataclasses.field(default=ABSENT, metadata=choices(*SOURCES))


@dataclasses.dataclass(kw_only=True)
class Headline(Document):
    """A kind's figure over its sizes: the best (and the size it was reached at) or the median."""
    benchmark: str = dataclasses.field(metadata=choices(*BENCHMARKS))
    kind: str
    stat: str = dataclasses.field(metadata=choices(*HEADLINE_STATS))
    size: str | None  # the best's size; null for a median
    achieved: float
    unit: str
    peak: float | None
    peak_key: str
    fraction_of_peak: float | None
    reason: str | Absent = ABSENT
    source: str | Absent = dataclasses.field(default=ABSENT, metadata=choices(*SOURCES))  # as its measurements'


def measurement(benchmark: str, kind: str, size: str, achieved: float, peak: Peak, *, iterations: int,
                seconds: float | None, nbytes: int | None, **extra: object) -> Measurement:
    """A measurement with its peak and fraction of peak (or the reason there is none); extra: shape, algbw,
    note."""
    found = Measurement(benchmark=benchmark, kind=kind, size=size, bytes=nbytes, iterations=iterations,
                        seconds=seconds, achieved=float(achieved), unit=BENCHMARKS[benchmark].unit, peak=peak.value,
                        peak_key=peak.key, fraction_of_peak=fraction(achieved, peak), **extra)  # type: ignore[arg-type]
    if peak.reason:
        found.reason = peak.reason
    return found


def headlines(measurements: Iterable[Measurement]) -> list[Headline]:
    """Per benchmark, kind and source, in the order first measured, a toolkit's right after the torch benchmark's of
    the same kind: the best figure (with its size) and, for gemm, the median over sizes."""
    groups: dict[tuple[str, str, object], list[Measurement]] = {}
    for m in measurements:
        groups.setdefault((m.benchmark, m.kind, m.source), []).append(m)
    kinds = list(dict.fromkeys((benchmark, kind) for benchmark, kind, _ in groups))
    found = []
    for (benchmark, _, _), group in sorted(groups.items(), key=lambda item: kinds.index(item[0][:2])):
        best = max(group, key=lambda m: m.achieved)
        found.append(_headline(best, BEST, best.achieved, best.size))
        if benchmark in MEDIAN_OF:
            found.append(_headline(best, MEDIAN, statistics.median(m.achieved for m in group), None))
    return found


def _headline(m: Measurement, stat: str, achieved: float, size: str | None) -> Headline:
    line = Headline(benchmark=m.benchmark, kind=m.kind, stat=stat, size=size, achieved=achieved,
                    unit=m.unit, peak=m.peak, peak_key=m.peak_key,
                    fraction_of_peak=None if m.peak is None else achieved / m.peak)
    if m.reason is not ABSENT:
        line.reason = m.reason
    if m.source is not ABSENT:
        line.source = m.source
    return line

