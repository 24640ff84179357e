"""What two benches share: time a command, alternate two ways of running the same case at 1 and at 3 rounds,
and split the difference into a cost per run and a cost per round (the training time cancels out)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(argv: list[str], env: dict[str, str]) -> float:
    """Wall seconds of argv run in the checkout; exits with its output when it fails."""
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(argv)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed


def alternate(ways: tuple[str, str], command: Callable[[str, int], list[str]], pairs: int,
              env: dict[str, str]) -> dict[tuple[str, int], float]:
    """Median wall time of each way at 1 and 3 rounds, the two ways alternated pair by pair."""
    times: dict[tuple[str, int], list[float]] = {}
    for pair in range(pairs):
        for rounds in (1, 3):
            for way in ways if pair % 2 == 0 else ways[::-1]:
                elapsed = timed(command(way, rounds), env)
                times.setdefault((way, rounds), []).append(elapsed)
                print(f"pair {pair + 1} {way:8s} rounds={rounds}: {elapsed:6.2f} s", flush=True)
    return {key: statistics.median(values) for key, values in times.items()}


def added_costs(med: dict[tuple[str, int], float], way: str, baseline: str) -> tuple[float, float]:
    """(seconds way adds once per run, seconds it adds per further round) over baseline."""
    per_round = ((med[way, 3] - med[way, 1]) - (med[baseline, 3] - med[baseline, 1])) / 2
    return (med[way, 1] - med[baseline, 1]) - per_round, per_round
