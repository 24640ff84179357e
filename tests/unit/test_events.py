"""Driver events: JSONL per rank and `[PerfLog]` lines, FlagPerf's step filtering."""

import io
import json

import pytest

from case_runners.rank.driver import events as ev
from case_runners.rank.driver.events import EventLogger, parse_perflog_lines, read_events


def test_event_is_written_as_jsonl_and_perflog_line(tmp_path):
    stream = io.StringIO()
    with EventLogger(tmp_path, rank=3, log_freq=10, stream=stream) as log:
        log.event(ev.INIT_START)
        log.event(ev.FINISHED, {"p_whole": 12.5, "converged": True})

    records = read_events(tmp_path / "rank3.events.jsonl")
    assert [r["event"] for r in records] == ["INIT_START", "FINISHED"]
    assert records[1]["value"] == {"p_whole": 12.5, "converged": True}
    meta = records[1]["metadata"]
    assert meta["rank"] == 3 and meta["file"] == "test_events.py" and meta["lineno"] > 0
    assert meta["time_ms"] >= records[0]["metadata"]["time_ms"]
    assert all(line.startswith("[PerfLog] {") for line in stream.getvalue().splitlines())
    assert parse_perflog_lines(stream.getvalue()) == records


def test_step_events_follow_log_freq(tmp_path):
    with EventLogger(tmp_path, rank=0, log_freq=10, stream=None) as log:
        for step in range(1, 26):
            log.event(ev.STEP_END, {"loss": 1.0}, step=step)
        log.event(ev.EPOCH_END, {"epoch": 1}, step=25)  # not a step event: never filtered
    records = read_events(tmp_path / "rank0.events.jsonl")
    assert [r["value"]["step"] for r in records] == [1, 10, 20, 25]
    assert records[-1]["event"] == "EPOCH_END"


def test_unknown_event_names_the_allowed_ones(tmp_path):
    with EventLogger(tmp_path, rank=0, log_freq=1, stream=None) as log, \
            pytest.raises(ValueError, match="unknown driver event 'STARTED'.*INIT_START"):
        log.event("STARTED")


def test_perflog_lines_are_found_among_other_output():
    record = {"event": "INIT_END", "value": {"init_time": 1.5}, "metadata": {"rank": 0}}
    text = f"loading data\n2024 [PerfLog] {json.dumps(record)}\nwarning: something\n"
    assert parse_perflog_lines(text) == [record]


def test_the_flagperf_events_perfplay_logs_are_known():
    assert set(ev.EVENTS) >= {"INIT_START", "INIT_END", "TRAIN_START", "TRAIN_END", "EPOCH_BEGIN", "EPOCH_END",
                              "STEP_BEGIN", "STEP_END", "EVALUATE", "LAUNCH_TRAINING",
                              "CONVERT_MODEL", "CREATE_OPTIMIZER", "MODEL_TO_FP16", "MODEL_TO_DDP",
                              "FINISHED", "SUBMIT_INFO"}
