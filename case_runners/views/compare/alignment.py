"""The arithmetic of an alignment: loss curves matched by step, relative errors, and the parameters two runs must
share. Pure functions of plain values: the tests give them small synthetic curves."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any

from case_runners.core.errors import PerfplayError
from case_runners.plan.config.shared_params import BATCH_SIZE, GLOBAL_BATCH, GRAD_ACCUMULATION, batch_split
from case_runners.plan.config.stacks import stack_of
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round import TrainingRoundRecord

DEFAULT_TOLERANCE = 0.01  # docs/compare.md: a relative error of at most 1 %
CASE = "case"  # two cases are never compared, whatever --allow-diff says
WORLD_SIZE = "world_size"  # nnodes x nproc
PRECISION = "precision"  # what the round computed in: fp32, or the vendor's amp dtype under amp
# Params that change how a run is fed or logged, not what it computes: never compared. grad_accumulation splits the
# same batch into micro batches (the same gradients, to summation order).
NOT_WORKLOAD = ("num_workers", "log_freq", GRAD_ACCUMULATION)
ABSENT_TEXT = "(absent)"  # a key one side does not have


def relative_error(candidate: float, reference: float) -> float:
    """|candidate - reference| / |reference|: 0 where both are 0, inf where only the reference is (nan stays)."""
    if reference == 0:
        return 0.0 if candidate == 0 else math.inf
    return abs(candidate - reference) / abs(reference)


@dataclasses.dataclass(frozen=True)
class LossAlignment:
    """Two loss curves on the steps both logged, in step order, with the relative error at each."""
    steps: list[int]
    reference: list[float]
    candidate: list[float]
    errors: list[float]

    @property
    def mean_error(self) -> float:
        return math.fsum(self.errors) / len(self.errors) if self.errors else math.nan

    @property
    def max_error(self) -> float:
        """The largest relative error (nan when one is nan: such a curve is no match)."""
        if any(math.isnan(e) for e in self.errors):
            return math.nan
        return max(self.errors, default=math.nan)

    @property
    def max_error_step(self) -> int | None:
        if not self.errors:
            return None
        return max(zip(self.steps, self.errors), key=lambda item: (math.isnan(item[1]), item[1]))[0]


def align(reference: Mapping[int, float], candidate: Mapping[int, float], from_step: int = 0) -> LossAlignment:
    """The curves (step -> loss) on the steps both have, from `from_step` on; empty when they share none."""
    steps = sorted(step for step in set(reference) & set(candidate) if step >= from_step)
    ref = [reference[s] for s in steps]
    cand = [candidate[s] for s in steps]
    return LossAlignment(steps, ref, cand, [relative_error(c, r) for c, r in zip(cand, ref)])


def workload(config: ResolvedConfig, record: TrainingRoundRecord) -> dict[str, Any]:
    """What a round computes: its case, world size, precision and params (less NOT_WORKLOAD and a stack's params),
    the batch as the global batch of a step (a data-parallel rank's batch_size is how a stack's model parallelism
    splits it: tensor_parallel 2 on 2 ranks trains the 6 sequences of 2 data-parallel ranks' 3). The vendor, the
    hardware, the framework (the stack) and its version and the data's path are what a comparison is for, or where
    it runs."""
    world = config.nnodes * config.nproc
    params = workload_params(config)
    if BATCH_SIZE in config.params:
        del params[BATCH_SIZE]
        params[GLOBAL_BATCH] = batch_split(config.params, world).global_batch
    return {CASE: config.case, WORLD_SIZE: world, PRECISION: record.metrics["precision"], **params}


def workload_params(config: ResolvedConfig) -> dict[str, Any]:
    """The params that change what a round computes, by name: all but NOT_WORKLOAD and a stack's (how the stack
    runs it: the config's stack_params, a vendor stack's or a built-in one's, and for a config from before them a
    built-in stack's, as zero_stage: plan/config/stacks.py)."""
    own = set(config.stack_params) if isinstance(config.stack_params, list) else set()
    return {key: value for key, value in sorted(config.params.items())
            if key not in NOT_WORKLOAD and key not in own and stack_of(key) is None}


_MISSING = object()


def differences(reference: Mapping[str, Any], candidate: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """key -> (reference's value, candidate's) for every key whose values differ, ABSENT_TEXT for a missing one."""
    found = {}
    for key in sorted(set(reference) | set(candidate)):
        ref, cand = reference.get(key, _MISSING), candidate.get(key, _MISSING)
        if ref != cand or (type(ref) is not type(cand) and not _same_number(ref, cand)):
            found[key] = (ABSENT_TEXT if ref is _MISSING else ref, ABSENT_TEXT if cand is _MISSING else cand)
    return found


def _same_number(a: Any, b: Any) -> bool:
    """1 and 1.0 are the same value of a param; True and 1 are not."""
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b)) and a == b


def check_same_workload(reference: Mapping[str, Any], candidate: Mapping[str, Any],
                        allowed: Iterable[str]) -> dict[str, tuple[Any, Any]]:
    """The differences `allowed` names (each a key of either side); PerfplayError naming every other one, with both
    values, or a different case, or an allowed key neither side has."""
    allowed = list(dict.fromkeys(allowed))
    known = set(reference) | set(candidate)
    unknown = [key for key in allowed if key not in known]
    if unknown:
        raise PerfplayError(f"--allow-diff {', '.join(unknown)}: no such key (keys: {', '.join(sorted(known))})")
    found = differences(reference, candidate)
    if CASE in found:
        ref, cand = found[CASE]
        raise PerfplayError(f"different cases ({ref} and {cand}): a comparison is of one case")
    refused = {key: values for key, values in found.items() if key not in allowed}
    if refused:
        listed = "; ".join(f"{key}: reference {_shown(r)}, candidate {_shown(c)}" for key, (r, c) in refused.items())
        flags = " ".join(f"--allow-diff {key}" for key in refused)
        raise PerfplayError(f"the runs differ in what they compute (an accuracy alignment compares runs with "
                            f"the same parameters): {listed}; to compare them anyway: {flags}")
    return {key: values for key, values in found.items() if key in allowed}


def _shown(value: Any) -> str:
    return value if value == ABSENT_TEXT else repr(value)
