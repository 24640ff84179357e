"""What two benches share: time a command, alternate two ways of running the same case at 1 and at 3 rounds
(--quick: 1 and 2), and split each pair's difference into a cost per run and a cost per round (the training time
cancels out)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.process_tree import run_tree
from bench.verdict import Judgement, LoadWatch, Target, judge, parse_target, summary

ROOT = Path(__file__).resolve().parent.parent
ROUNDS, QUICK_ROUNDS = (1, 3), (1, 2)  # the two round counts a pair runs each way at (by default, with --quick)
ORPHAN_GRACE_S = 30.0  # what detached from a command (the playbook's launcher) has this long to end on its own


@dataclass(frozen=True)
class Timing:
    wall: float  # seconds
    cpu: float  # user + system CPU seconds of the command's whole process tree, what detached from it included


def run_timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], Timing]:
    """argv run in the checkout, with its wall seconds and the CPU seconds of its whole tree (bench/process_tree)."""
    proc, wall, cpu = run_tree(argv, ORPHAN_GRACE_S, cwd=ROOT, env=env)
    return proc, Timing(wall, cpu)


def timed(argv: list[str], env: dict[str, str]) -> Timing:
    """Wall and CPU seconds of argv run in the checkout; exits with its output when it fails."""
    proc, timing = run_timed(argv, env)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(argv)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return timing


Pair = dict[tuple[str, int], Timing]  # one pair: each way at each round count


def alternate(ways: tuple[str, str], command: Callable[[str, int], list[str]], pairs: int,
              env: dict[str, str], load: LoadWatch, round_counts: tuple[int, int] = ROUNDS) -> list[Pair]:
    """Each way at both round counts, pair by pair, which way goes first alternating; the load sampled after each
    run."""
    measured: list[Pair] = []
    for pair in range(pairs):
        times: Pair = {}
        for rounds in round_counts:
            for way in ways if pair % 2 == 0 else ways[::-1]:
                times[way, rounds] = timing = timed(command(way, rounds), env)
                load.sample()
                print(f"pair {pair + 1} {way:8s} rounds={rounds}: {timing.wall:6.2f} s wall, {timing.cpu:6.2f} s CPU",
                      flush=True)
        measured.append(times)
    return measured


def added_costs(pair: Pair, way: str, baseline: str, field: str = "wall") -> tuple[float, float]:
    """(seconds way adds once per run, seconds it adds per further round) over baseline, in one pair (at the two
    round counts it was run at)."""
    def at(w: str, rounds: int) -> float:
        return float(getattr(pair[w, rounds], field))
    low, high = sorted({rounds for _, rounds in pair})
    per_round = ((at(way, high) - at(way, low)) - (at(baseline, high) - at(baseline, low))) / (high - low)
    return (at(way, low) - at(baseline, low)) - per_round * low, per_round


def judge_added(measured: list[Pair], way: str, baseline: str, target: Target, what: str) -> Judgement:
    """Prints what way adds over baseline per run and per further round (wall and CPU: median and spread over the
    pairs) and returns the verdict on the wall seconds per round."""
    costs = {field: [added_costs(pair, way, baseline, field) for pair in measured] for field in ("wall", "cpu")}
    print(f"\n{way} minus {baseline}, {len(measured)} pairs:")
    for field, unit in (("wall", " s"), ("cpu", " CPU s")):
        print(f"  fixed cost per run: {summary([f for f, _ in costs[field]], unit)}; "
              f"per round: {summary([r for _, r in costs[field]], unit)}")
    result = judge([r for _, r in costs["wall"]], target)
    print(result.line(what, " s"))
    return result


DEFAULT_PAIRS, QUICK_PAIRS = 3, 1  # alternated pairs of a script's two sides; --quick: the smallest real measurement


def add_rounds_option(parser: argparse.ArgumentParser, defaults: str) -> None:
    """--rounds N: the larger of the two round counts a script runs at (the smaller is ROUNDS[0])."""
    parser.add_argument("--rounds", type=int, choices=range(2, 101), metavar="N",
                        help=f"the larger round count each way runs at, 2..100 ({defaults}): a further round's "
                        f"figure is the difference over N - {ROUNDS[0]} rounds, its noise shrinking as "
                        f"1/(N - {ROUNDS[0]})")


def add_pair_options(parser: argparse.ArgumentParser, sides: str, steps_help: str, steps: tuple[int, int],
                     target: Target, target_help: str) -> None:
    """--steps, --pairs, --quick and --target of a script that alternates `sides` (steps: default, quick)."""
    default, quick = steps
    parser.add_argument("--steps", type=int, help=f"{steps_help} (default {default}, quick {quick})")
    parser.add_argument("--pairs", type=int,
                        help=f"alternated {sides} pairs (default {DEFAULT_PAIRS}, quick {QUICK_PAIRS})")
    add_rounds_option(parser, f"default {ROUNDS[1]}, quick {QUICK_ROUNDS[1]}")
    parser.add_argument("--quick", action="store_true",
                        help=f"the smallest real measurement: {QUICK_PAIRS} pair of {quick} steps, at "
             f"{QUICK_ROUNDS[0]} and {QUICK_ROUNDS[1]} rounds")
    parser.add_argument("--target", type=parse_target, default=target, help=target_help)


def pair_sizes(args: argparse.Namespace, steps: tuple[int, int]) -> tuple[int, int]:
    """(steps, pairs) the options of add_pair_options ask for."""
    default, quick = steps
    if args.quick:
        return args.steps or quick, args.pairs or QUICK_PAIRS
    return args.steps or default, args.pairs or DEFAULT_PAIRS


def round_counts(args: argparse.Namespace) -> tuple[int, int]:
    """The two round counts a pair runs each way at, as add_pair_options' --quick and --rounds ask."""
    low, high = QUICK_ROUNDS if args.quick else ROUNDS
    return low, args.rounds or high
