"""The dllogger stream rank<R>.dllogger.json: written by a real training rank, parsed back, malformed lines named."""

import json
import re

import pytest

from case_runners.core.files import WriteError
from case_runners.rank.driver import dllogger as dl
from case_runners.rank.driver import events as ev
from case_runners.rank.driver.events import EventLogger, read_events
from case_runners.rank.worker import main
from case_runners.records.resolved import Target
from record_helpers import resolved, write_resolved

DIST_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture
def single_rank(monkeypatch):
    for name in DIST_ENV:
        monkeypatch.delenv(name, raising=False)


def test_a_training_rank_writes_the_stream_its_events_log(tmp_path, single_rank):
    params = {"max_steps": 12, "log_freq": 5, "eval_every_steps": 10}
    config = write_resolved(tmp_path / "resolved_config.json",
                            resolved("digits_cnn", selection={"nproc": 1}, params=params))
    log_dir = tmp_path / "logs"
    assert main(str(config), str(log_dir)) == 0
    result = json.loads((log_dir / "rank0.result.json").read_text())
    events = read_events(log_dir / "rank0.events.jsonl")
    assert dl.dllogger_files(log_dir) == {0: log_dir / "rank0.dllogger.json"}
    entries = dl.read_dllogger(log_dir / "rank0.dllogger.json")

    metadata = {e.metric: e.metadata for e in entries[:4]}
    assert all(isinstance(e, dl.MetadataEntry) for e in entries[:4])
    assert not any(isinstance(e, dl.MetadataEntry) for e in entries[4:])
    assert metadata["train.loss"] == {"unit": "", "GOAL": "MINIMIZE", "STAGE": "TRAIN"}
    assert metadata["train.ips"]["unit"] == "samples/s" and metadata["train.ips"]["GOAL"] == "MAXIMIZE"
    assert metadata["train.lr"]["STAGE"] == "TRAIN"
    assert metadata["eval.accuracy"] == {"unit": "", "GOAL": "MAXIMIZE", "STAGE": "VALID"}
    assert entries[4].step == "PARAMETER" and entries[4].data["log_freq"] == 5
    assert all(a.timestamp <= b.timestamp and a.elapsedtime <= b.elapsedtime for a, b in zip(entries, entries[1:]))

    step_ends = [e["value"] for e in events if e["event"] == "STEP_END"]
    assert [v["step"] for v in step_ends] == [1, 5, 10]
    assert dl.metric_series(entries, "train.loss") == [((v["epoch"], v["step"]), v["loss"]) for v in step_ends]
    assert dl.metric_series(entries, "train.lr") == [((v["epoch"], v["step"]), v["lr"]) for v in step_ends]
    assert all(ips > 0 for _, ips in dl.metric_series(entries, "train.ips"))
    evaluations = [e["value"] for e in events if e["event"] == "EVALUATE"]
    assert [v["step"] for v in evaluations] == [10, 12]
    assert dl.metric_series(entries, "eval.accuracy") == [((v["epoch"], v["step"]), v["accuracy"])
                                                          for v in evaluations]
    assert all(e.data["rank"] == 0 for e in entries if isinstance(e, dl.LogEntry) and e.step != "PARAMETER")

    final = dl.summary(entries)
    assert entries[-1].step == () and final is not None
    assert final["eval.accuracy"] == result["final_metric"] and final["train.ips"] == result["rank_p_core"]
    assert (final["p_core"], final["status"], final["steps"]) == (result["p_core"], "not_converged", 12)
    assert final["train.loss"] == step_ends[-1]["loss"]


def test_logged_steps_follow_log_freq_and_ips_is_the_interval_rate(tmp_path):
    target = Target(metric="perplexity", value=20.0, higher_is_better=False)
    with EventLogger(tmp_path, rank=2, log_freq=5, stream=None) as log:
        log.add_sink(dl.TrainingStream(tmp_path, 2, target, {"lr": 0.1}))
        core = 0.0
        for step in range(1, 13):
            core += 0.5 if step <= 5 else 0.25  # 8 samples a step: 16 samples/s, then 32
            log.event(ev.STEP_END, {"epoch": 1, "loss": 1.0 / step, "lr": 0.1, "rank_samples": 8 * step,
                                    "rank_core_time": core}, step=step)
        log.event(ev.EVALUATE, {"epoch": 1, "step": 12, "perplexity": 25.0, "eval_time": 1.0})
        log.event(ev.FINISHED, {"status": "failed"})
    entries = dl.read_dllogger(tmp_path / "rank2.dllogger.json")

    assert [e.metadata["GOAL"] for e in entries if isinstance(e, dl.MetadataEntry) and e.metric == "eval.perplexity"] \
        == ["MINIMIZE"]
    assert dl.metric_series(entries, "train.ips") == [((1, 1), 16.0), ((1, 5), 16.0), ((1, 10), 32.0)]
    assert dl.metric_series(entries, "eval.perplexity") == [((1, 12), 25.0)]
    assert dl.summary(entries) == {"rank": 2, "status": "failed", "train.loss": 0.1}


def test_lines_are_dlloggers_json_stream_format(tmp_path):
    stream = dl.JSONStream(tmp_path / "x.json")
    stream.metadata("train.loss", {"unit": ""})
    stream.log([1, 2], {"train.loss": 0.5})
    stream.log([], {})
    stream.close()
    lines = (tmp_path / "x.json").read_text().splitlines()
    assert all(line.startswith("DLLL {") for line in lines)
    meta, log, end = (json.loads(line[len("DLLL "):]) for line in lines)
    assert list(meta) == ["timestamp", "elapsedtime", "datetime", "type", "metric", "metadata"]
    assert list(log) == ["timestamp", "datetime", "elapsedtime", "type", "step", "data"]
    assert isinstance(meta["timestamp"], str) and float(meta["timestamp"]) > 0  # dllogger writes str(float)
    assert (meta["type"], log["type"], log["step"], end["step"]) == ("METADATA", "LOG", [1, 2], [])


@pytest.mark.parametrize(("line", "problem"), [
    ('{"type": "LOG"}', "not a dllogger line"),
    ('DLLL {"timestamp": "1.0", ', "invalid JSON"),
    ("DLLL [1, 2]", "expected a JSON object, got list"),
    ('DLLL {"timestamp": "soon", "elapsedtime": "0", "type": "LOG", "step": [], "data": {}}',
     "key 'timestamp': expected a number of seconds"),
    ('DLLL {"timestamp": "1", "elapsedtime": "0", "type": "INFO", "step": [], "data": {}}',
     "key 'type': expected METADATA or LOG, got \"INFO\""),
    ('DLLL {"timestamp": "1", "elapsedtime": "0", "type": "LOG", "step": ["a"], "data": {}}',
     "key 'step': expected integers"),
    ('DLLL {"timestamp": "1", "elapsedtime": "0", "type": "LOG", "step": [1, 2], "data": 3}',
     "key 'data': expected an object, got 3"),
    ('DLLL {"timestamp": "1", "elapsedtime": "0", "type": "METADATA", "metadata": {}}',
     "key 'metric': expected a metric name, got null"),
])
def test_a_malformed_line_is_named_with_its_file_and_line(tmp_path, line, problem):
    path = tmp_path / "rank0.dllogger.json"
    good = 'DLLL {"timestamp": "1.5", "elapsedtime": "0.0", "type": "LOG", "step": "PARAMETER", "data": {}}'
    path.write_text(f"{good}\n\n{line}\n")
    with pytest.raises(dl.DlloggerError, match=f"^{re.escape(str(path))}:3: .*{re.escape(problem)}"):
        dl.read_dllogger(path)


def test_the_stream_is_never_written_through_a_symlink(tmp_path):
    (tmp_path / "elsewhere").write_text("")
    (tmp_path / "rank0.dllogger.json").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(WriteError, match="refusing to follow a symlink"):
        dl.TrainingStream(tmp_path, 0, Target(metric="accuracy", value=0.9, higher_is_better=True), {})
