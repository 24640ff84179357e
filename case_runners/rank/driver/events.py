"""FlagPerf lifecycle events: one JSONL file per rank plus `[PerfLog] {json}` lines on a stream.

A line looks like FlagPerf's perf_logger output:
`{"event": "STEP_END", "value": {...}, "metadata": {"file", "lineno", "time_ms", "rank"}}`.
"""

from __future__ import annotations

import contextlib
import enum
import json
import re
import sys
import time
from pathlib import Path
from typing import Any, Protocol, TextIO

from case_runners.core import files

INIT_START = "INIT_START"
INIT_END = "INIT_END"
TRAIN_START = "TRAIN_START"
TRAIN_END = "TRAIN_END"
EPOCH_BEGIN = "EPOCH_BEGIN"
EPOCH_END = "EPOCH_END"
STEP_BEGIN = "STEP_BEGIN"
STEP_END = "STEP_END"
EVALUATE = "EVALUATE"
EVALUATE_BEGIN = "EVALUATE_BEGIN"  # not FlagPerf's: it logs EVALUATE at the end only
LAUNCH_TRAINING = "LAUNCH_TRAINING"
LAUNCH_INFERENCE = "LAUNCH_INFERENCE"
INFERENCE_STEP = "INFERENCE_STEP"
INFERENCE_STEP_BEGIN = "INFERENCE_STEP_BEGIN"  # not FlagPerf's: a step of a-g starts (the progress line names it)
BASE_MEASUREMENT = "BASE_MEASUREMENT"  # not FlagPerf's: one figure of a base benchmark (records/base.py Measurement)
GENERATE_MEASUREMENT = "GENERATE_MEASUREMENT"  # not FlagPerf's: one combination of the generate task, its figures
OPERATION_MEASUREMENT = "OPERATION_MEASUREMENT"  # not FlagPerf's: one operator row (records/operation.py)
CONVERT_MODEL = "CONVERT_MODEL"
CREATE_OPTIMIZER = "CREATE_OPTIMIZER"
MODEL_TO_FP16 = "MODEL_TO_FP16"
MODEL_TO_DDP = "MODEL_TO_DDP"
VENDOR_ADAPTER = "VENDOR_ADAPTER"  # not FlagPerf's: which trainer points the vendor's extern/ replaces
SAVE_CHECKPOINT = "SAVE_CHECKPOINT"  # not FlagPerf's: the trained model's directory and size (save_checkpoint)
FINISHED = "FINISHED"
SUBMIT_INFO = "SUBMIT_INFO"

EVENTS = (
    INIT_START, INIT_END, TRAIN_START, TRAIN_END, EPOCH_BEGIN, EPOCH_END, STEP_BEGIN, STEP_END,
    EVALUATE_BEGIN, EVALUATE, LAUNCH_TRAINING, LAUNCH_INFERENCE, INFERENCE_STEP_BEGIN, INFERENCE_STEP, BASE_MEASUREMENT,
    GENERATE_MEASUREMENT, OPERATION_MEASUREMENT, CONVERT_MODEL, CREATE_OPTIMIZER, MODEL_TO_FP16, MODEL_TO_DDP,
    VENDOR_ADAPTER, SAVE_CHECKPOINT, FINISHED, SUBMIT_INFO,
)
STEP_EVENTS = (STEP_BEGIN, STEP_END)
PERFLOG_PREFIX = "[PerfLog] "


class _Stream(enum.Enum):
    STDOUT = "stdout"


STDOUT = _Stream.STDOUT  # default stream: sys.stdout as it is when an event is logged


def events_path(log_dir: Path, rank: int) -> Path:
    return Path(log_dir) / f"rank{rank}.events.jsonl"


_EVENTS_FILE = re.compile(r"rank(\d+)\.events\.jsonl")


def events_files(log_dir: Path) -> dict[int, Path]:
    """Every rank's events file in a node directory (events_path's names), by rank."""
    return {int(m.group(1)): path for path in Path(log_dir).glob("rank*.events.jsonl")
            if (m := _EVENTS_FILE.fullmatch(path.name))}


class EventSink(Protocol):
    """Another log written from a rank's events (dllogger.TrainingStream): it sees each event an EventLogger
    records, after log_freq filtering, and is closed with it."""

    def event(self, name: str, value: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class EventLogger:
    """Writes driver events of one rank to `rank<R>.events.jsonl`, as `[PerfLog]` lines and to its sinks."""

    def __init__(self, log_dir: Path, rank: int, log_freq: int, stream: TextIO | None | _Stream = STDOUT) -> None:
        """`stream`: where `[PerfLog]` lines go; the current sys.stdout by default, None for nowhere."""
        self.rank = rank
        self.log_freq = max(1, int(log_freq))
        self.log_dir = Path(log_dir)
        self.path = events_path(log_dir, rank)
        self._file = files.open_text(self.path, append=True)  # never through a symlink planted in the log dir
        self._stream = stream
        self._sinks: list[EventSink] = []

    def add_sink(self, sink: EventSink) -> None:
        self._sinks.append(sink)

    def should_log_step(self, step: int) -> bool:
        """FlagPerf's rule: step events only every log_freq steps, and at step 1."""
        return step == 1 or step % self.log_freq == 0

    def event(self, name: str, value: dict[str, Any] | None = None, step: int | None = None) -> bool:
        """Record one event; returns False when a step event was filtered out by log_freq."""
        if name not in EVENTS:
            raise ValueError(f"unknown driver event '{name}' (allowed: {', '.join(EVENTS)})")
        if name in STEP_EVENTS and step is not None and not self.should_log_step(step):
            return False
        value = dict(value or {})
        if step is not None:
            value.setdefault("step", step)
        caller = sys._getframe(1)
        record = {
            "event": name,
            "value": value,
            "metadata": {"file": Path(caller.f_code.co_filename).name, "lineno": caller.f_lineno,
                         "time_ms": int(time.time() * 1000), "rank": self.rank},
        }
        line = json.dumps(record, default=str)
        try:
            self._file.write(line + "\n")
            self._file.flush()
        except OSError as exc:  # a full disk ends the rank with the cause and the file, not a traceback
            raise files.write_error(exc, self.path) from None
        stream = sys.stdout if self._stream is STDOUT else self._stream
        if stream is not None:
            with contextlib.suppress(OSError):  # a copy for the log; the events file is the record
                print(PERFLOG_PREFIX + line, file=stream, flush=True)
        for sink in self._sinks:
            sink.event(name, value)
        return True

    def close(self) -> None:
        for sink in self._sinks:
            sink.close()
        self._sinks.clear()
        self._file.close()

    def __enter__(self) -> EventLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_events(path: Path) -> list[dict[str, Any]]:
    """The events of one JSONL file, in order."""
    with Path(path).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def parse_perflog_lines(text: str) -> list[dict[str, Any]]:
    """The events printed as `[PerfLog] {json}` lines in a rank's output log."""
    return [json.loads(line[line.index(PERFLOG_PREFIX) + len(PERFLOG_PREFIX):])
            for line in text.splitlines() if PERFLOG_PREFIX in line]
