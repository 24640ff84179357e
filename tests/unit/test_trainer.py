"""The trainer through worker.main: convergence, stop conditions, timing, results, DDP, crashes."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from case_runners.rank.driver import dllogger
from case_runners.rank.driver.events import parse_perflog_lines, read_events
from case_runners.rank.env import DistEnv
from case_runners.rank.worker import main
from process_helpers import communicate_or_kill
from record_helpers import resolved, write_resolved

REPO = Path(__file__).resolve().parents[2]
DIST_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT")


def write_config(tmp_path: Path, case: str = "digits_cnn", nproc: int = 1, data_dir=None, **params) -> Path:
    """The resolved config of `case` for the cpu vendor (the plan's), with `params` set whatever the case allows."""
    config = resolved(case, selection={"nproc": nproc}, params=params, data_dir=data_dir)
    return write_resolved(tmp_path / "resolved_config.json", config)


@pytest.fixture
def single_rank(monkeypatch):
    for name in DIST_ENV:
        monkeypatch.delenv(name, raising=False)


def run_worker(tmp_path: Path, **kwargs) -> tuple[int, dict, Path]:
    log_dir = tmp_path / "logs"
    code = main(str(write_config(tmp_path, **kwargs)), str(log_dir))
    return code, json.loads((log_dir / "rank0.result.json").read_text()), log_dir


def test_digits_converges_on_one_rank(tmp_path, single_rank, capsys):
    code, result, log_dir = run_worker(tmp_path, log_freq=10)

    assert code == 0
    assert result["status"] == "success" and result["converged"] and result["stop_reason"] == "target_reached"
    assert result["final_metric"] >= 0.95 and result["metric"] == "accuracy"
    assert result["p_core"] >= result["p_train"] >= result["p_whole"] > 0
    assert result["e2e_time"] >= result["init_time"] + result["train_time"]
    assert result["train_time"] > result["train_no_eval_time"] >= result["core_time"] > 0
    assert result["samples"] == result["epochs"] * 1437  # every training image once per epoch
    assert result["metrics_history"][-1]["accuracy"] == result["final_metric"]
    assert result["precision"] == "fp32" and result["peak_memory_bytes"] > 0

    events = read_events(log_dir / "rank0.events.jsonl")
    names = [e["event"] for e in events]
    for name in ("SUBMIT_INFO", "INIT_START", "INIT_END", "TRAIN_START", "EPOCH_BEGIN", "STEP_END",
                 "EVALUATE", "TRAIN_END", "FINISHED"):
        assert name in names
    assert names.index("INIT_END") < names.index("TRAIN_START") < names.index("TRAIN_END")
    assert names[-1] == "FINISHED"
    finished = events[-1]["value"]
    assert finished["converged"] and finished["p_core"] == result["p_core"]
    assert all(e["value"]["step"] == 1 or e["value"]["step"] % 10 == 0
               for e in events if e["event"].startswith("STEP_"))
    assert parse_perflog_lines(capsys.readouterr().out) == events


def test_stops_at_max_steps_as_not_converged(tmp_path, single_rank):
    code, result, _ = run_worker(tmp_path, max_steps=5, batch_size=16)
    assert code == 0
    assert (result["status"], result["stop_reason"], result["steps"]) == ("not_converged", "max_steps", 5)
    assert result["samples"] == 5 * 16 and not result["converged"]
    assert result["final_metric"] is not None  # evaluated once at the end


def test_eval_max_batches_bounds_each_evaluation(tmp_path, single_rank, monkeypatch):
    from case_runners.cases.digits_cnn.case import DigitsCase

    seen = []  # batches each evaluation was given
    evaluate = DigitsCase.evaluate

    def counting(self, model, loader):
        batches = list(loader)
        seen.append((len(batches), len(loader)))
        return evaluate(self, model, batches)

    monkeypatch.setattr(DigitsCase, "evaluate", counting)
    code, result, _ = run_worker(tmp_path, max_steps=2, eval_batch_size=16, eval_max_batches=3)
    assert code == 0 and result["final_metric"] is not None
    assert seen == [(3, 3)], "3 of the 23 batches of the held-out 360 images"


def test_stops_at_time_budget(tmp_path, single_rank):
    code, result, _ = run_worker(tmp_path, synthetic=True, time_budget_s=1, max_epochs=0)
    assert code == 0
    assert (result["status"], result["stop_reason"]) == ("not_converged", "time_budget")
    assert 1 <= result["train_time"] < 10


def test_stops_at_max_epochs(tmp_path, single_rank):
    code, result, _ = run_worker(tmp_path, synthetic=True, max_epochs=2)
    assert (code, result["stop_reason"], result["epochs"]) == (0, "max_epochs", 2)
    assert [h["epoch"] for h in result["metrics_history"]] == [1, 2]


def test_amp_on_cpu_trains_in_bf16(tmp_path, single_rank):
    code, result, _ = run_worker(tmp_path, amp=True, max_steps=3)
    assert (code, result["precision"], result["amp"]) == (0, "bf16", True)


def test_a_trainer_param_of_the_wrong_type_fails_the_rank_naming_it(tmp_path, single_rank):
    """A hand-edited resolved config's amp "false" is not true: the rank fails naming the param and the file
    before it trains (bool("false") once trained in bf16)."""
    code, result, _ = run_worker(tmp_path, amp="false", max_steps=1)
    assert (code, result["status"]) == (1, "failed")
    assert result["reason"] == (f"{tmp_path / 'resolved_config.json'}: params: the trainer's param 'amp' is "
                                f"'false', not true or false")


def test_crash_writes_failed_result_with_traceback(tmp_path, single_rank):
    bad = tmp_path / "missing.npz"
    code, result, log_dir = run_worker(tmp_path, data_dir=str(bad))
    assert code == 1
    assert result["status"] == "failed"
    assert str(bad) in result["reason"] and "Traceback" in result["reason"]
    assert read_events(log_dir / "rank0.events.jsonl")[-1]["value"]["status"] == "failed"


def test_dist_env_rejects_a_rank_outside_the_world():
    with pytest.raises(ValueError, match="RANK=2 is outside"):
        DistEnv.from_environ({"RANK": "2", "WORLD_SIZE": "2"})
    assert DistEnv.from_environ({}) == DistEnv()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_ranks_ddp_converge_with_global_samples(tmp_path):
    config = write_config(tmp_path, nproc=2)
    log_dir = tmp_path / "logs"
    port = str(free_port())
    code = f"from case_runners.rank.worker import main; raise SystemExit(main({str(config)!r}, {str(log_dir)!r}))"
    procs = []
    for rank in range(2):
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
               "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
               "PERFPLAY_DIST_TIMEOUT_S": "60"}
        procs.append(subprocess.Popen([sys.executable, "-c", code], env=env, cwd=REPO,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = communicate_or_kill(procs)
    assert [p.returncode for p in procs] == [0, 0], outputs

    results = [json.loads((log_dir / f"rank{r}.result.json").read_text()) for r in range(2)]
    for rank, result in enumerate(results):
        assert (result["rank"], result["world_size"], result["status"]) == (rank, 2, "success")
        assert result["final_metric"] >= 0.95
        assert result["p_core"] >= result["p_train"] >= result["p_whole"] > 0
    # Samples are global: the DistributedSampler pads 1437 images to 2 x 719 per epoch.
    assert results[0]["samples"] == results[1]["samples"] == results[0]["epochs"] * 1438
    assert results[0]["final_metric"] == results[1]["final_metric"]
    assert any(e["event"] == "MODEL_TO_DDP" for e in read_events(log_dir / "rank1.events.jsonl"))
    streams = dllogger.dllogger_files(log_dir)  # every rank writes its own
    assert sorted(streams) == [0, 1] and dllogger.summary(dllogger.read_dllogger(streams[1]))["rank"] == 1


def test_the_case_sees_each_optimizer_step_after_it(tmp_path, single_rank, monkeypatch):
    """after_step: once per step, with the unwrapped model whose weights the step has just updated."""
    from case_runners.cases.digits_cnn.case import DigitsCase

    seen = []  # the first weight's sum at each call

    def after_step(self, model):
        seen.append(float(next(model.parameters()).detach().sum()))

    monkeypatch.setattr(DigitsCase, "after_step", after_step, raising=False)
    code, result, _ = run_worker(tmp_path, max_steps=3, batch_size=16)
    assert code == 0 and result["steps"] == 3
    assert len(seen) == 3 and len(set(seen)) == 3, "each call sees the weights of a new step"
