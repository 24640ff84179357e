"""A round to compare, read from its directory: the round record, the case's resolved config and rank 0's loss
curve (STEP_END events of its events file, every log_freq steps), or that of the rank the record's metrics_rank
names (a vendor stack that logs on another rank). Every problem names the path it is about."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from case_runners.core.errors import PerfplayError
from case_runners.core.paths import RESOLVED_NAME
from case_runners.rank.driver.events import STEP_END, events_path, read_events
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round import RECORD_NAME, RoundRecord, TrainingRoundRecord, record_path
from case_runners.records.run_dir import ROUND_DIR

DEFAULT_ROUND = 1
RANK = 0  # whose loss curve is the run's


@dataclasses.dataclass(frozen=True)
class Round:
    path: Path  # the round directory
    record: TrainingRoundRecord
    config: ResolvedConfig
    loss: dict[int, float]  # step -> rank 0's loss
    events: Path  # where the loss curve was read


def round_dir(path: Path, round_no: int = DEFAULT_ROUND) -> Path:
    """The round directory `path` names: itself (a round directory), its round `round_no` (a case directory), or
    that of its only case (a run directory)."""
    if not path.is_dir():
        raise PerfplayError(f"{path}: no such directory (give a round, case or run directory)")
    if ROUND_DIR.fullmatch(path.name) or record_path(path).exists():
        return path
    if (path / RESOLVED_NAME).exists():
        return _case_round(path, round_no)
    cases = sorted(d for d in path.iterdir() if (d / RESOLVED_NAME).is_file())
    if not cases:
        raise PerfplayError(f"{path}: not a round, case or run directory (no {RECORD_NAME}, no {RESOLVED_NAME}, "
                            f"no case directory in it)")
    if len(cases) > 1:
        raise PerfplayError(f"{path}: a run of {len(cases)} cases ({', '.join(d.name for d in cases)}): give the "
                            f"case directory, e.g. {cases[0]}")
    return _case_round(cases[0], round_no)


def _case_round(case_dir: Path, round_no: int) -> Path:
    path = case_dir / f"round{round_no}"
    if not path.is_dir():
        rounds = sorted((d.name for d in case_dir.iterdir() if ROUND_DIR.fullmatch(d.name)),
                        key=lambda name: int(name[5:]))
        raise PerfplayError(f"{path}: no such round (rounds: {', '.join(rounds) or 'none'}; --round N picks one)")
    return path


def load_round(path: Path, round_no: int = DEFAULT_ROUND) -> Round:
    """The round `path` names (round_dir), read and checked: a training round that ended with a final metric."""
    where = round_dir(path, round_no)
    record_file = record_path(where)
    if not record_file.is_file():
        raise PerfplayError(f"{record_file}: missing: the round has no record (`python -m case_runners record` "
                            f"builds it from the node directories)")
    record = RoundRecord.load(record_file)
    if not isinstance(record, TrainingRoundRecord):
        raise PerfplayError(f"{record_file}: a {record.task} round: compare aligns training rounds")
    if record.metrics["final_metric"] is None:
        raise PerfplayError(f"{record_file}: the round {record.status} ({record.reason or 'no reason given'}) and "
                            f"has no final metric to compare")
    config = ResolvedConfig.load(where.parent / RESOLVED_NAME)
    events = _reporter_events(where, record, record_file)
    return Round(where, record, config, loss_curve(events), events)


def reporting_rank(record: RoundRecord) -> tuple[int, int]:
    """(the rank whose figures the record's are: rank 0, or its metrics_rank; that rank's node rank)."""
    rank = record.metrics_rank if isinstance(record.metrics_rank, int) else RANK
    node = next((e["node_rank"] for e in record.per_rank if e.get("rank") == rank), 0)
    return rank, node


def _reporter_events(where: Path, record: TrainingRoundRecord, record_file: Path) -> Path:
    rank, node_rank = reporting_rank(record)
    found = [node.dir for node in record.per_node if node.node_rank == node_rank]
    if not found:
        raise PerfplayError(f"{record_file}: no node {node_rank} in per_node: no rank {rank} to read the loss of")
    return events_path(where / found[0], rank)


def loss_curve(path: Path) -> dict[int, float]:
    """step -> loss of the STEP_END events of an events file (the last one of a step logged twice)."""
    try:
        events = read_events(path)
    except FileNotFoundError:
        raise PerfplayError(f"{path}: missing: no events of rank {RANK}, no loss curve") from None
    except OSError as exc:
        raise PerfplayError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:  # UnicodeDecodeError included
        raise PerfplayError(f"{path}: not JSON lines ({exc})") from None
    curve: dict[int, float] = {}
    for event in events:
        value = event.get("value") if isinstance(event, dict) else None
        if not isinstance(value, dict) or event.get("event") != STEP_END:
            continue
        step, loss = value.get("step"), value.get("loss")
        if isinstance(step, int) and isinstance(loss, (int, float)) and not isinstance(loss, bool):
            curve[step] = float(loss)
    if not curve:
        raise PerfplayError(f"{path}: no {STEP_END} event with a step and a loss: no loss curve")
    return curve
