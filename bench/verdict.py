"""The one rule every bench script judges its figure by: PASS, MISSED or CANNOT JUDGE.

A figure is measured as one value per pair (the difference or ratio of the two sides run back to back), so that a
host that slows down for a while slows both sides of the pairs it touches. The figure is the median of the pair
values and its spread their range (min..max; the interquartile range from IQR_FROM pairs on, where a few outliers
would otherwise widen it to the host's worst moment). Against a target interval:
- PASS: at least MIN_PAIRS pairs and the whole spread inside the target (and no wider than the target allows);
- MISSED: at least MIN_PAIRS pairs and the whole spread outside the target, on one side;
- CANNOT JUDGE: fewer pairs (one pair has no spread to tell noise from the figure), the spread straddles a bound
  of the target, or it is wider than the target allows: the noise swamps what is measured.
Only PASS exits 0.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

PASS = "PASS"
MISSED = "MISSED"
CANNOT_JUDGE = "CANNOT JUDGE"
MIN_PAIRS = 3
IQR_FROM = 8


@dataclass(frozen=True)
class Target:
    """The interval a figure must lie in; max_spread: the widest spread that still tells the figure from noise."""

    low: float = -math.inf
    high: float = math.inf
    max_spread: float = math.inf

    def __str__(self) -> str:
        if self.low == -math.inf:
            return f"<= {self.high:g}"
        if self.high == math.inf:
            return f">= {self.low:g}"
        return f"{self.low:g}..{self.high:g}"


def bounded(low: float = -math.inf, high: float = math.inf) -> Target:
    """A target whose spread may be as wide as the interval (both bounds) or as its one bound's size: noise wider
    than the target itself swamps the figure."""
    finite = [b for b in (low, high) if b not in (-math.inf, math.inf)]
    width = high - low if len(finite) == 2 else abs(finite[0]) if finite else math.inf
    return Target(low, high, width)


def parse_target(text: str) -> Target:
    """'LOW..HIGH' (either side may be empty) -> its target; for a --target option."""
    low, sep, high = text.partition("..")
    try:
        bounds = (float(low) if low.strip() else -math.inf, float(high) if high.strip() else math.inf)
    except ValueError:
        sep = ""
    if not sep or bounds == (-math.inf, math.inf):
        raise argparse.ArgumentTypeError(f"{text!r}: write LOW..HIGH, one side may be empty (..1.5, 0.8..)")
    if bounds[0] > bounds[1]:
        raise argparse.ArgumentTypeError(f"{text!r}: its low bound is above its high bound")
    return bounded(*bounds)


def summary(values: Sequence[float], unit: str = "", fmt: str = ".2f") -> str:
    """'median <m><unit> (<kind> <lo>..<hi>)' of per-pair values."""
    low, high, kind = spread(values)
    return f"median {statistics.median(values):{fmt}}{unit} ({kind} {low:{fmt}}..{high:{fmt}})"


@dataclass(frozen=True)
class Judgement:
    verdict: str
    median: float
    low: float  # the spread's bounds
    high: float
    spread_kind: str  # "min..max" or "IQR"
    n: int
    reason: str

    @property
    def exit_code(self) -> int:
        return 0 if self.verdict == PASS else 1

    def line(self, what: str, unit: str = "", fmt: str = ".2f") -> str:
        """'<what>: median <m> (<kind> <lo>..<hi>, n pairs; target ...) VERDICT: reason'."""
        return (f"{what}: median {self.median:{fmt}}{unit} ({self.spread_kind} {self.low:{fmt}}..{self.high:{fmt}}"
                f"{unit} over {self.n}) {self.verdict}" + (f": {self.reason}" if self.reason else ""))


def spread(values: Sequence[float]) -> tuple[float, float, str]:
    """(low, high, kind) of the pair values: the interquartile range from IQR_FROM values on, else min..max."""
    if len(values) >= IQR_FROM:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
        return q1, q3, "IQR"
    return min(values), max(values), "min..max"


def judge(values: Sequence[float], target: Target, min_n: int = MIN_PAIRS) -> Judgement:
    """The verdict on per-pair values (min_n: 1 for a single measurement whose bounds are given as two values)."""
    if not values:
        raise ValueError("judge: no values")
    low, high, kind = spread(values)
    return judge_interval(statistics.median(values), low, high, kind, len(values), target, min_n)


def judge_interval(median: float, low: float, high: float, kind: str, n: int, target: Target,
                   min_n: int = MIN_PAIRS) -> Judgement:
    """The verdict on a figure whose spread (or uncertainty) is low..high."""
    if n < min_n:
        return Judgement(CANNOT_JUDGE, median, low, high, kind, n,
                         f"{n} measured, at least {min_n} needed to tell the figure from the noise")
    if high < target.low or low > target.high:
        return Judgement(MISSED, median, low, high, kind, n, f"target {target}")
    if high - low > target.max_spread:
        return Judgement(CANNOT_JUDGE, median, low, high, kind, n,
                         f"the spread {high - low:.3g} is wider than the {target.max_spread:g} the target allows")
    if target.low <= low and high <= target.high:
        return Judgement(PASS, median, low, high, kind, n, f"target {target}")
    return Judgement(CANNOT_JUDGE, median, low, high, kind, n, f"the spread straddles the target {target}")


class LoadWatch:
    """The host's 1-minute load average, sampled at each call of sample(): what the run competed with."""

    def __init__(self) -> None:
        self.samples = [os.getloadavg()[0]]

    def sample(self) -> None:
        self.samples.append(os.getloadavg()[0])

    def line(self) -> str:
        return (f"load average (1 min) during the run: {min(self.samples):.2f}..{max(self.samples):.2f} "
                f"on {os.cpu_count()} cores")
