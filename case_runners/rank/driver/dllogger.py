"""A training rank's unified log (docs/results.md): `rank<R>.dllogger.json`, in NVIDIA dllogger's JSON stream format.

Each line is `DLLL {json}`, as dllogger's JSONStreamBackend writes it (no dllogger import: the format only):
- `{"timestamp", "elapsedtime", "datetime", "type": "METADATA", "metric": NAME, "metadata": {...}}` declares a
  metric: its `unit`, `format`, `GOAL` (MINIMIZE or MAXIMIZE) and `STAGE` (TRAIN or VALID);
- `{"timestamp", "datetime", "elapsedtime", "type": "LOG", "step": STEP, "data": {...}}` logs values.
`timestamp` is unix seconds and `elapsedtime` seconds since the stream started, both as strings of a float as
dllogger writes them; `datetime` is the local time. STEP is `[epoch, step]`, a stage name ("PARAMETER") or `[]`
(dllogger's final summary).

What a rank writes, in order: the metadata of TRAIN_LOSS, TRAIN_IPS, TRAIN_LR and the case's eval metric
(eval_metric); a PARAMETER line with the run's params; TRAIN_LOSS, TRAIN_IPS and TRAIN_LR at each logged step
(the STEP_END events', every log_freq steps and step 1); the eval metric at each evaluation (EVALUATE); and a
summary at `[]` when the rank ends (FINISHED). TrainingStream writes it as a companion of the rank's EventLogger
(events.EventLogger.add_sink), so the trainer logs each thing once. read_dllogger parses a stream back.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
import time
from pathlib import Path
from typing import Any, TypeAlias

from case_runners.core import files
from case_runners.core.errors import PerfplayError
from case_runners.rank.driver import events as ev
from case_runners.records.resolved import Target

PREFIX = "DLLL "
METADATA = "METADATA"
LOG = "LOG"
PARAMETER = "PARAMETER"  # the step of the run's parameters line
TRAIN_LOSS = "train.loss"
TRAIN_IPS = "train.ips"
TRAIN_LR = "train.lr"
EVAL_PREFIX = "eval."
RANK = "rank"  # every LOG line but PARAMETER's names its rank
TRAIN, VALID = "TRAIN", "VALID"  # metadata STAGE
MINIMIZE, MAXIMIZE = "MINIMIZE", "MAXIMIZE"  # metadata GOAL

IPS_MEANING = ("this rank's samples per second of compute time (batch on the device .. optimizer step done, as "
               "p_core) over the steps since the previous logged step; in the summary, over the whole training")
TRAIN_METADATA: dict[str, dict[str, Any]] = {
    TRAIN_LOSS: {"unit": "", "GOAL": MINIMIZE, "STAGE": TRAIN},
    TRAIN_IPS: {"unit": "samples/s", "format": ":.3f", "GOAL": MAXIMIZE, "STAGE": TRAIN, "description": IPS_MEANING},
    TRAIN_LR: {"unit": "", "STAGE": TRAIN},
}
# The FINISHED event's fields the summary line keeps as they are (records/rank.py TrainingRankResult).
SUMMARY_FIELDS = ("status", "stop_reason", "converged", "steps", "epochs", "train_time", "p_whole", "p_train",
                  "p_core", "rank_p_whole", "rank_p_train", "rank_p_core")

SUFFIX = ".dllogger.json"  # dllogger's streams end in .json, though a stream is not one JSON document
_FILE = re.compile(r"rank(\d+)" + re.escape(SUFFIX))


def eval_metric(metric: str) -> str:
    """The stream's name of the case's eval metric: `eval.accuracy`."""
    return EVAL_PREFIX + metric


def dllogger_path(log_dir: Path | str, rank: int) -> Path:
    return Path(log_dir) / f"rank{rank}{SUFFIX}"


def dllogger_files(log_dir: Path | str) -> dict[int, Path]:
    """Every rank's stream in a node directory (dllogger_path's names), by rank."""
    return {int(m.group(1)): path for path in Path(log_dir).glob(f"rank*{SUFFIX}")
            if (m := _FILE.fullmatch(path.name))}


# -- writing -------------------------------------------------------------------------------------------------


class JSONStream:
    """dllogger's JSONStreamBackend: `DLLL {json}` lines to a file it truncates, never through a symlink; a failed
    write (a full disk) is a files.WriteError naming the cause and the file."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._file = files.open_text(self.path)
        self._start = time.time()

    def metadata(self, metric: str, metadata: dict[str, Any]) -> None:
        now = time.time()
        self._write({"timestamp": str(now), "elapsedtime": str(now - self._start), "datetime": _datetime(now),
                     "type": METADATA, "metric": metric, "metadata": metadata})

    def log(self, step: list[int] | str, data: dict[str, Any]) -> None:
        now = time.time()
        self._write({"timestamp": str(now), "datetime": _datetime(now), "elapsedtime": str(now - self._start),
                     "type": LOG, "step": step, "data": data})

    def _write(self, entry: dict[str, Any]) -> None:
        try:
            self._file.write(PREFIX + json.dumps(entry, default=str) + "\n")
            self._file.flush()
        except OSError as exc:
            raise files.write_error(exc, self.path) from None

    def close(self) -> None:
        self._file.close()


def _datetime(timestamp: float) -> str:
    return str(datetime.datetime.fromtimestamp(timestamp))


class TrainingStream:
    """A training rank's stream, written from its driver events (an EventLogger sink): metadata and parameters
    when it opens, then STEP_END, EVALUATE and FINISHED as dllogger lines."""

    def __init__(self, log_dir: Path | str, rank: int, target: Target, params: dict[str, Any]) -> None:
        self.rank = rank
        self.eval_name = eval_metric(target.metric)
        self._metric = target.metric
        self._stream = JSONStream(dllogger_path(log_dir, rank))
        self._samples, self._core_time = 0, 0.0  # at the previous logged step
        self._loss: float | None = None
        self.path = self._stream.path
        for name, metadata in TRAIN_METADATA.items():
            self._stream.metadata(name, metadata)
        self._stream.metadata(self.eval_name, {"unit": "", "GOAL": MAXIMIZE if target.higher_is_better else MINIMIZE,
                                               "STAGE": VALID})
        self._stream.log(PARAMETER, dict(params))

    def event(self, name: str, value: dict[str, Any]) -> None:
        if name == ev.STEP_END:
            self._step_end(value)
        elif name == ev.EVALUATE and self._metric in value:
            self._stream.log([value["epoch"], value["step"]], {RANK: self.rank, self.eval_name: value[self._metric]})
        elif name == ev.FINISHED:
            self._finished(value)

    def _step_end(self, value: dict[str, Any]) -> None:
        samples, core_time = value["rank_samples"], value["rank_core_time"]
        seconds = core_time - self._core_time
        ips = (samples - self._samples) / seconds if seconds > 0 else None
        self._samples, self._core_time, self._loss = samples, core_time, value["loss"]
        self._stream.log([value["epoch"], value["step"]], {RANK: self.rank, TRAIN_LOSS: value["loss"],
                                                           TRAIN_IPS: ips, TRAIN_LR: value["lr"]})

    def _finished(self, value: dict[str, Any]) -> None:
        data: dict[str, Any] = {RANK: self.rank, **{k: value[k] for k in SUMMARY_FIELDS if k in value}}
        if "final_metric" in value:
            data[self.eval_name] = value["final_metric"]
        if "rank_p_core" in value:
            data[TRAIN_IPS] = value["rank_p_core"]
        if self._loss is not None:
            data[TRAIN_LOSS] = self._loss  # the last logged step's
        self._stream.log([], data)

    def close(self) -> None:
        self._stream.close()


# -- reading -------------------------------------------------------------------------------------------------


class DlloggerError(PerfplayError):
    """A stream line that is not dllogger's format; the message names the file and the line."""


@dataclasses.dataclass(frozen=True)
class MetadataEntry:
    timestamp: float
    elapsedtime: float
    datetime: str | None
    metric: str
    metadata: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class LogEntry:
    timestamp: float
    elapsedtime: float
    datetime: str | None
    step: tuple[int, ...] | str  # (epoch, step), () for the summary, or a stage name such as PARAMETER
    data: dict[str, Any]


Entry: TypeAlias = MetadataEntry | LogEntry


def read_dllogger(path: Path | str) -> list[Entry]:
    """The entries of a `DLLL {json}` stream, in order (blank lines skipped); a malformed line is a DlloggerError
    naming the file and the line."""
    with Path(path).open(encoding="utf-8") as f:
        return [parse_line(line, path, number) for number, line in enumerate(f, 1) if line.strip()]


def parse_line(line: str, path: Path | str = "<stream>", number: int = 1) -> Entry:
    def bad(problem: str) -> DlloggerError:
        return DlloggerError(f"{path}:{number}: {problem}")

    if not line.startswith(PREFIX):
        raise bad(f"not a dllogger line (expected '{PREFIX}{{json}}'): {line.strip()[:80]!r}")
    try:
        entry = json.loads(line[len(PREFIX):])
    except json.JSONDecodeError as exc:
        raise bad(f"invalid JSON: {exc}") from None
    if not isinstance(entry, dict):
        raise bad(f"expected a JSON object, got {type(entry).__name__}")

    def field(key: str, kind: type | tuple[type, ...], shown: str) -> Any:
        value = entry.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise bad(f"key '{key}': expected {shown}, got {json.dumps(value)}")
        return value

    def seconds(key: str) -> float:
        raw = field(key, (str, int, float), "a number of seconds")
        try:
            return float(raw)
        except ValueError:
            raise bad(f"key '{key}': expected a number of seconds, got {json.dumps(raw)}") from None

    # datetime is dllogger's, optional here
    times = seconds("timestamp"), seconds("elapsedtime"), field("datetime", (str, type(None)), "a string")
    kind = entry.get("type")
    if kind == METADATA:
        return MetadataEntry(*times, metric=field("metric", str, "a metric name"),
                             metadata=field("metadata", dict, "an object"))
    if kind == LOG:
        step = field("step", (list, str), "[epoch, step], [] or a stage name")
        if isinstance(step, list):
            if not all(isinstance(i, int) and not isinstance(i, bool) for i in step):
                raise bad(f"key 'step': expected integers, got {json.dumps(step)}")
            step = tuple(step)
        return LogEntry(*times, step=step, data=field("data", dict, "an object"))
    raise bad(f"key 'type': expected {METADATA} or {LOG}, got {json.dumps(kind)}")


def metric_series(entries: list[Entry], metric: str) -> list[tuple[tuple[int, ...], Any]]:
    """(step, value) of `metric` in every LOG line at an `[epoch, step]` step, in order."""
    return [(e.step, e.data[metric]) for e in entries
            if isinstance(e, LogEntry) and isinstance(e.step, tuple) and e.step and metric in e.data]


def summary(entries: list[Entry]) -> dict[str, Any] | None:
    """The data of the last `[]` line (the rank's summary), or None."""
    found = [e.data for e in entries if isinstance(e, LogEntry) and e.step == ()]
    return found[-1] if found else None
