"""Round records and run summaries: status rules, MFU convention, statistics, rendering."""

import ast
import contextlib
import dataclasses
import json
import os
from pathlib import Path

import pytest

from case_runners.plan.run_plan import make_plan
from case_runners.records import names
from case_runners.records import summary_build as results_summary
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round import RoundRecord
from case_runners.records.round_build import compact_record, write_round_record
from case_runners.records.summary import RunSummary
from case_runners.records.summary_build import summarize_records
from case_runners.views.summary.files import write_run_summary
from case_runners.views.summary.markdown import render_markdown
from case_runners.views.summary.text import render_table
from record_helpers import node_result, rank_result, resolved, round_record, write_node


def config(nnodes=1, **overrides):
    return ResolvedConfig.from_json(resolved("resnet50", "nvidia", selection={"hardware": "A100", "nproc": 8,
                                                                         "nnodes": nnodes}, overrides=overrides))


def rank(rank, status="success", **fields):
    return rank_result(rank, 8, status, precision="fp16", **fields)


def node(round_dir: Path, host="gpu1", node_rank=0, status="success", reason=None, ranks=(0,), **rank_kw):
    return write_node(round_dir / f"{host}_noderank{node_rank}",
                      node_result(host, node_rank, status, reason, ranks=ranks), [rank(r, **rank_kw) for r in ranks])


COUNTED = {"per_sample": 2.45e10, "convention": "counted by FlopCounterMode", "cached": False, "note": None}


def test_success_record_takes_rank0_metrics_and_mfu_with_its_convention(tmp_path):
    round_dir = tmp_path / "run1" / "case" / "round1"
    node(round_dir, ranks=range(8), flops=COUNTED)
    record = write_round_record(round_dir, config(), 1).to_json()
    assert record["status"] == "success" and record["reason"] is None
    assert record["metrics"]["p_core"] == 1000.0 and len(record["per_rank"]) == 8
    mfu = record["mfu"]
    assert mfu["value"] == pytest.approx(1000.0 * 2.45e10 / (312e12 * 8)) and mfu["flops_per_sample"] == 2.45e10
    assert mfu["peak_flops_per_device"] == 312e12 and mfu["precision"] == "fp16"
    assert mfu["convention"] == "counted by FlopCounterMode"
    assert json.loads((round_dir / "round_record.json").read_text()) == record


def test_mfu_of_a_hand_figure_states_the_convention(tmp_path):
    round_dir = tmp_path / "r" / "c" / "round1"
    node(round_dir, ranks=range(8))
    bert = ResolvedConfig.from_json(resolved("bert", "nvidia", selection={"hardware": "A100", "nproc": 8}))
    mfu = write_round_record(round_dir, bert, 1).mfu
    assert mfu.flops_per_sample == bert.flops_per_sample and mfu.value == pytest.approx(
        1000.0 * bert.flops_per_sample / (312e12 * 8))
    assert "1 multiply-add = 2 FLOPs" in mfu.convention


def test_a_failed_node_fails_the_round_with_its_reason(tmp_path):
    round_dir = tmp_path / "r" / "c" / "round1"
    node(round_dir)
    node(round_dir, host="gpu2", node_rank=1, status="failed", reason="rank 9 on gpu2 was killed by SIGKILL",
         ranks=())
    record = write_round_record(round_dir, config(nnodes=2), 1)
    assert record.status == "failed" and "gpu2" in record.reason and "rank 9" in record.reason


def test_nodes_elsewhere_are_not_missing_and_node_0_speaks_for_them(tmp_path):
    round_dir = tmp_path / "r" / "c" / "round1"
    node(round_dir, ranks=range(8))
    assert write_round_record(round_dir, config(nnodes=2), 1).reason == "only 1 of 2 nodes left output"
    record = write_round_record(round_dir, config(nnodes=2), 1, nodes_elsewhere=[1])
    assert (record.status, record.nodes_elsewhere) == ("success", [1])
    assert RoundRecord.load(round_dir / "round_record.json").nodes_elsewhere == [1]
    node(round_dir, status="failed", reason="stopped: node 1 (gpu2) failed: rank 9 exited with code 1")
    record = write_round_record(round_dir, config(nnodes=2), 1, nodes_elsewhere=[1])
    assert record.status == "failed" and "node 1 (gpu2) failed" in record.reason


def test_timeout_and_missing_output_are_reported(tmp_path):
    round_dir = tmp_path / "r" / "c" / "round1"
    node(round_dir, status="timeout", reason="case timeout of 60 s reached; ranks stopped")
    assert write_round_record(round_dir, config(), 1).status == "timeout"
    empty = tmp_path / "r" / "c" / "round2"
    empty.mkdir()
    assert write_round_record(empty, config(), 2).reason == "no node of this round left any output"


def test_not_converged_is_a_valid_result_with_a_reason(tmp_path):
    round_dir = tmp_path / "r" / "c" / "round1"
    write_node(round_dir / "gpu1_noderank0", node_result(ranks=range(8)),
               [rank(r, status="not_converged", stop_reason="max_epochs") for r in range(8)])
    record = write_round_record(round_dir, config(), 1)
    assert record.status == "not_converged" and "max_epochs" in record.reason


def test_mfu_of_a_counted_case_is_rank0s_count_at_any_shape_and_null_with_its_reason(tmp_path):
    resized = config(image_size=64)
    node(tmp_path / "r1", flops=COUNTED)
    assert write_round_record(tmp_path / "r1", resized, 1).mfu.value == pytest.approx(1000.0 * 2.45e10 / (312e12 * 8))
    node(tmp_path / "r2", flops={**COUNTED, "per_sample": None, "note": "counting failed: no meta kernel"})
    assert write_round_record(tmp_path / "r2", resized, 1).mfu.reason == "counting failed: no meta kernel"
    node(tmp_path / "r3")
    record = write_round_record(tmp_path / "r3", resized, 1)
    assert record.mfu.value is None and record.mfu.reason == "rank 0 reported no FLOPs count"


def test_mfu_is_withheld_with_a_reason_when_a_hand_figure_s_model_was_resized(tmp_path):
    node(tmp_path / "r")
    bert = resolved("bert", "nvidia", selection={"hardware": "A100", "nproc": 8}, overrides={"seq_len": 128})
    record = write_round_record(tmp_path / "r", ResolvedConfig.from_json(bert), 1)
    assert record.mfu.value is None and "seq_len" in record.mfu.reason


def test_record_says_whether_the_round_ran_the_standard_workload(tmp_path):
    node(tmp_path / "r" / "c" / "round1")
    smoke = write_round_record(tmp_path / "r" / "c" / "round1", config(depths=[1, 1, 1, 1], image_size=64), 1)
    assert smoke.standard is False and smoke.non_standard == ["depths", "image_size"]
    node(tmp_path / "r" / "c" / "round2")
    tuned = write_round_record(tmp_path / "r" / "c" / "round2", config(lr=0.2), 2)
    assert tuned.standard is True and tuned.non_standard == []


def test_a_config_from_before_the_flag_counts_as_standard(tmp_path):
    old = {k: v for k, v in config().to_json().items() if k not in ("standard", "non_standard")}
    node(tmp_path / "r" / "c" / "round1")
    record = write_round_record(tmp_path / "r" / "c" / "round1", ResolvedConfig.from_json(old), 1)
    assert record.standard is True and record.non_standard == []


def records(values, statuses=None, **fields):
    statuses = statuses or ["success"] * len(values)
    base = config().to_json()
    return [RoundRecord.from_json(round_record(base, i + 1, st, None if st == "success" else "boom",
                                               {"p_core": v, "p_whole": v / 2, "converged": True}, 0.25, **fields))
            for i, (v, st) in enumerate(zip(values, statuses))]


def test_summary_mean_and_sample_std_over_valid_rounds_only():
    summary = summarize_records(records([100.0, 110.0, 120.0, 5.0], ["success"] * 3 + ["failed"]), "run1").to_json()
    (case,) = summary["cases"]
    assert case["stats"]["p_core"] == {"mean": 110.0, "std": 10.0, "n": 3}
    assert case["succeeded"] == 3 and case["status"] == "failed,success"
    assert summary["failed_rounds"] == ["resnet50_A100x1x8 round 4: failed: boom"] and not summary["ok"]


def test_one_valid_round_has_no_spread_and_the_table_says_so():
    """One round tells nothing of the noise: its std is null in summary.json (not 0.0, which reads as no noise),
    the table shows the mean without ± and its title says why."""
    summary = summarize_records(records([100.0, 120.0], ["success", "failed"]), "run3")
    (case,) = summary.to_json()["cases"]
    assert case["stats"]["p_core"] == {"mean": 100.0, "std": None, "n": 1}
    assert all(stat["std"] is None for stat in case["stats"].values()) and "mfu" in case["stats"]
    table = render_table(summary)
    assert table.splitlines()[0] == "perfplay summary: run3 (mean ± std over rounds; a figure of one round has no ±: " \
        "its spread is unknown)"
    assert " 100.0 " in table and "±" not in table.split("\n", 1)[1]


def test_table_and_markdown_show_mean_std_and_failures():
    summary = summarize_records(records([100.0, 120.0], ["success", "timeout"]), "run7")
    table = render_table(summary)
    assert "run7" in table and "resnet50_A100x1x8" in table and "100.0" in table
    assert "failures:\n  resnet50_A100x1x8 round 2: timeout: boom" in table and "not converged" not in table
    missed = render_table(summarize_records(records([100.0, 120.0], ["success", "not_converged"]), "run9"))
    assert "not converged (valid results, in the means):\n  resnet50_A100x1x8 round 2: not_converged" in missed
    assert "failures:" not in missed, "a missed target is a result, not a failure"
    both = summarize_records(records([100.0, 120.0]), "run8")
    assert "110.0 ±14.1" in render_table(both) and "25.00 ±0.00%" in render_table(both)
    assert "| resnet50_A100x1x8 |" in render_markdown(both)


def test_a_non_standard_case_is_never_shown_as_a_standard_result():
    smoke = records([50.0], case_id="resnet50_smoke", standard=False, non_standard=["depths", "image_size"])
    summary = summarize_records(records([100.0]) + smoke, "run5")
    standard, non_standard = summary.cases
    assert (standard.standard, standard.non_standard) == (True, [])
    assert (non_standard.standard, non_standard.non_standard) == (False, ["depths", "image_size"])
    assert summary.non_standard_cases == ["resnet50_smoke"]
    lines = render_table(summary).splitlines()
    rows = {line.split()[0]: line for line in lines if line.startswith("resnet50_")}
    # The column is the standard workload, named so that it does not read as the statistic (std).
    assert next(line for line in lines if line.startswith("case ")).split()[:5] == \
        ["case", "rounds", "ok", "status", "standard"]
    assert rows["resnet50_A100x1x8"].split()[4] == "yes"
    assert "  no: depths, image_size  " in rows["resnet50_smoke"]
    assert "non-standard: not a standard result:\n  resnet50_smoke: changed depths, image_size" in render_table(summary)
    markdown = render_markdown(summary)
    assert "| case | rounds | ok | status | standard |" in markdown
    assert "| resnet50_smoke | 1 | 1/1 | success | no: depths, image_size |" in markdown
    assert "| resnet50_A100x1x8 | 1 | 1/1 | success | yes |" in markdown
    assert "## resnet50_smoke (non-standard)\n\nnon-standard: not a standard result: changed depths" in markdown


def test_one_non_standard_round_makes_its_case_non_standard():
    rounds = records([100.0, 110.0])
    rounds[1].standard, rounds[1].non_standard = False, ["synthetic"]
    (case,) = summarize_records(rounds, "run6").cases
    assert case.standard is False and case.non_standard == ["synthetic"]


def test_scaling_and_rounds_without_a_record_keep_the_mark(tmp_path):
    big = records([180.0], case_id="resnet50_A100x2x8", nnodes=2, standard=False, non_standard=["synthetic"])
    table = render_table(summarize_records(records([100.0]) + big, "run4"))
    assert "\nresnet50_A100x2x8 (non-standard)  16 " in table, "the scaling table marks the case"
    case_dir = tmp_path / "run3" / "bert_CPUx1x1"
    case_dir.mkdir(parents=True)
    (case_dir / "resolved_config.json").write_text(json.dumps(resolved("bert", overrides={"synthetic": True})))
    summary, _ = write_run_summary(tmp_path / "run3")
    assert summary.non_standard_cases == ["bert_CPUx1x1"], "a round that never started is marked too"


def test_write_run_summary_rebuilds_from_files(tmp_path):
    run_dir = tmp_path / "run9"
    for i, rec in enumerate(records([100.0, 120.0])):
        path = run_dir / rec.case_id / f"round{i + 1}"
        path.mkdir(parents=True)
        (path / "round_record.json").write_text(json.dumps(rec.to_json()))
    summary, _ = write_run_summary(run_dir)
    assert summary.run_id == "run9" and summary.cases[0].stats["p_core"].mean == 110.0
    assert json.loads((run_dir / "summary.json").read_text())["cases"][0]["rounds"][1]["round"] == 2
    assert "# perfplay run run9" in (run_dir / "summary.md").read_text()


def test_write_run_summary_writes_only_what_changed(tmp_path):
    run_dir = tmp_path / "run9"
    run_dir.mkdir()
    files = [str(run_dir / "summary.json"), str(run_dir / "summary.md")]
    assert write_run_summary(run_dir)[1] == files
    assert "written" not in json.loads((run_dir / "summary.json").read_text()), "the write's outcome is not saved"
    assert write_run_summary(run_dir)[1] == []
    (run_dir / "summary.md").unlink()
    (run_dir / "summary.md").symlink_to(run_dir / "summary.json")
    assert write_run_summary(run_dir)[1] == files[1:], "a symlink is replaced, never read or followed"
    assert not (run_dir / "summary.md").is_symlink()


def test_orchestration_errors_fail_a_round_that_looked_fine(tmp_path):
    round_dir = tmp_path / "r" / "c" / "round1"
    node(round_dir, ranks=range(8))
    record = write_round_record(round_dir, config(), 1, errors=["gpu1: Collect the node directory: unreachable"])
    assert (record.status, record.reason) == ("failed", "gpu1: Collect the node directory: unreachable")
    assert record.orchestration_errors == ["gpu1: Collect the node directory: unreachable"]


def test_the_compact_digest_holds_the_round_and_its_main_figures(tmp_path):
    round_dir = tmp_path / "r" / "c" / "round2"
    node(round_dir, ranks=range(8))
    record = write_round_record(round_dir, config(image_size=64), 2, errors=["gpu2: unreachable"])
    assert compact_record(record, ["gpu2: unreachable"]) == {
        "case_id": "resnet50_A100x1x8", "round": 2, "status": "failed", "reason": "gpu2: unreachable",
        "standard": False, "non_standard": ["image_size"], "p_whole": 900.0, "p_train": 950.0, "p_core": 1000.0,
        "e2e_time": 100.0, "final_metric": 76.0, "converged": True, "mfu": None, "errors": ["gpu2: unreachable"]}
    inference = dataclasses.replace(record, task="inference", metrics={k: 1.0 for k in names.INFERENCE_METRICS},
                                    mfu=dataclasses.replace(record.mfu, value=0.5))
    digest = compact_record(inference)
    assert digest["task"] == "inference" and digest["mfu"] == 0.5 and digest["errors"] == []
    assert [k for k in digest if k in names.INFERENCE_METRICS] == list(names.COMPACT_INFERENCE)


def test_the_names_shown_are_names_recorded():
    """Every selection of metrics the summary and the digest show is of the metrics a round record holds."""
    assert set(names.SUMMARY_TRAINING_STATS) <= set(names.TRAINING_METRICS)
    assert set(names.COMPACT_TRAINING) <= set(names.TRAINING_METRICS)
    assert set(names.SUMMARY_NODE_STATS) <= set(names.NODE_THROUGHPUTS)
    assert set(names.SUMMARY_INFERENCE_STATS) - set(names.INFERENCE_METRICS) == {names.DEVICE_MEMORY_PEAK}
    assert set(names.COMPACT_INFERENCE) <= set(names.INFERENCE_METRICS)
    assert names.THROUGHPUT_BASIS in names.THROUGHPUTS and names.MFU_BASIS in names.THROUGHPUTS
    assert set(names.VALID_STATUSES) <= set(names.ROUND_STATUSES) <= set(names.SUMMARY_ROUND_STATUSES)
    assert set(names.RANK_STATUSES) - set(names.ROUND_STATUSES) == set()


def test_a_record_that_cannot_be_written_is_a_failed_round_naming_the_full_disk(tmp_path, monkeypatch):
    import errno
    import os

    round_dir = tmp_path / "r" / "c" / "round1"
    node(round_dir, ranks=range(8))

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    record = write_round_record(round_dir, config(), 1)
    assert record.status == "failed"
    assert record.reason == \
        f"the round record could not be written: no space left on device: {round_dir}/round_record.json"
    assert not (round_dir / "round_record.json").exists() and not list(round_dir.glob(".round_record.json.*"))


def test_a_round_whose_record_could_not_be_written_says_why(tmp_path):
    """On a read-only or full disk a round's record (or its directory) cannot be written: the summary names that
    cause instead of an interruption nobody made."""
    import subprocess

    from case_runners.records.summary_build import load_records
    from process_helpers import SHORT_S, require_root
    require_root("mounting a tmpfs")
    disk = tmp_path / "disk"
    disk.mkdir(mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(disk)], check=True, timeout=SHORT_S)
    try:
        plan = make_plan({"vendor": "cpu", "results_dir": str(disk), "cases": [{"case": "digits_cnn", "repeat": 2}],
                          "min_free_bytes": 0})
        case_dir = Path(plan["run_dir"]) / "digits_cnn_CPUx1x1"
        (case_dir / "round1").mkdir()  # started; its record could not be written, nor round2's directory made
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True, timeout=SHORT_S)
        states = {r.round: (r.status, r.reason) for r in load_records(Path(plan["run_dir"]))}
        assert states[1] == ("interrupted", "the round started but left no record (it could not be written: "
                                            f"read-only file system: {case_dir / 'round1'})")
        assert states[2] == ("missing", "the round never started (its directory could not be made: read-only file "
                                        f"system: {case_dir})")
        subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True, timeout=SHORT_S)
        fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
        for chunk in (1 << 16, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * chunk):
                    pass
        os.close(fd)
        states = {r.round: (r.status, r.reason) for r in load_records(Path(plan["run_dir"]))}
        assert f"it could not be written: no space left on device: {case_dir / 'round1'}" in states[1][1]
        assert f"could not be made: no space left on device: {case_dir}" in states[2][1]
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False, timeout=SHORT_S)


def test_the_summary_names_interrupted_missing_and_unreadable_rounds(tmp_path):
    """A killed round or an unreadable record was left out of the summary; now each is listed with its state."""
    plan = make_plan({"vendor": "cpu", "results_dir": str(tmp_path), "cases": [{"case": "digits_cnn", "repeat": 4}]})
    run_dir = Path(plan["run_dir"])
    case_dir = run_dir / "digits_cnn_CPUx1x1"
    write_round_record(case_dir / "round1", ResolvedConfig.from_json(plan["cases"][0]), 1)  # no node output: failed
    (case_dir / "round2" / "localhost_noderank0").mkdir(parents=True)  # started, killed before its record
    (case_dir / "round3").mkdir()
    (case_dir / "round3" / "round_record.json").write_text("")  # cut short
    summary, _ = write_run_summary(run_dir)
    states = {r["round"]: (r["status"], r["reason"]) for r in summary.cases[0].rounds}
    assert states[1][0] == "failed"
    assert states[2] == ("interrupted", "the round started but left no record (the run was interrupted)")
    assert states[3][0] == "unreadable" and str(case_dir / "round3" / "round_record.json") in states[3][1]
    assert states[4] == ("missing", "the round never started")
    assert [line.split(":")[0] for line in summary.failed_rounds] == [
        f"digits_cnn_CPUx1x1 round {n}" for n in (1, 2, 3, 4)]
    table = render_table(summary)
    assert "round 2: interrupted" in table and "round 4: missing" in table


@pytest.mark.parametrize("write", [[], ["--write"]])
def test_summary_refuses_what_is_not_a_run_directory(tmp_path, capsys, write):
    """A mistyped run directory is an error (exit 2, as report, history add and compare-runs give), not an empty
    table of exit 0; nothing is written."""
    from case_runners.cli import main as cli

    for path, why in ((tmp_path / "absent", "no such directory"), (tmp_path, "not a run directory")):
        assert cli.main(["summary", str(path), "--table", *write]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith(f"error: {path}: {why}"), err
    assert list(tmp_path.iterdir()) == []


def test_summary_with_history_db_and_report_is_the_runs_end_in_one_process(tmp_path, capsys):
    """`summary --write --history-db DB --report`: after the summary, the run indexed and report.html written, each
    answered as `history add --json` and `report --json` answer; without --write nothing is written; a failed index
    is an answer (index_error), not a failed summary."""
    from case_runners.cli import main as cli
    from case_runners.views.report import REPORT_NAME

    config = resolved()
    run_dir = tmp_path / "run20250101000000-abcdef"
    (run_dir / config["case_id"] / "round1").mkdir(parents=True)
    (run_dir / config["case_id"] / "resolved_config.json").write_text(json.dumps(config))
    (run_dir / config["case_id"] / "round1" / "round_record.json").write_text(json.dumps(round_record(config)))
    db = tmp_path / "perfplay.sqlite"
    ends = ["--history-db", str(db), "--report"]

    assert cli.main(["summary", str(run_dir), *ends]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["history"]["changed"] and checked["report"]["changed"], "both would change"
    assert not db.exists() and sorted(p.name for p in run_dir.iterdir()) == [config["case_id"]]

    assert cli.main(["summary", str(run_dir), "--write", *ends]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["written"] == [str(run_dir / "summary.json"), str(run_dir / "summary.md")]
    assert [(run["run_id"], run["rounds"]) for run in done["history"]["runs"]] == [(run_dir.name, 1)]
    assert done["history"]["db"] == str(db) and db.is_file()
    assert done["report"] == {"path": str(run_dir / REPORT_NAME), "changed": True, "write_error": None}
    assert (run_dir / REPORT_NAME).is_file()

    assert cli.main(["summary", str(run_dir), "--write", "--history-db", str(tmp_path), "--report"]) == 0
    failed = json.loads(capsys.readouterr().out)
    assert set(failed["history"]) == {"index_error"} and str(tmp_path) in failed["history"]["index_error"]
    assert failed["report"]["changed"] is False, "the report, up to date, still answered"


def test_a_crash_of_the_index_or_the_report_is_an_answer_not_a_failed_summary(tmp_path, capsys, monkeypatch):
    """As when each ran in its own process: a bug in the index or the report is said in its answer (index_error,
    write_error) and the summary still answers, exit 0."""
    from case_runners.cli import main as cli
    from case_runners.views.history import cli as history_cli
    from case_runners.views.report import cli as report_cli

    config = resolved()
    run_dir = tmp_path / "run20250101000000-abcdef"
    (run_dir / config["case_id"]).mkdir(parents=True)
    (run_dir / config["case_id"] / "resolved_config.json").write_text(json.dumps(config))

    def crash(*args, **kwargs):
        raise ValueError("a bug")

    monkeypatch.setattr(history_cli, "add_runs", crash)
    monkeypatch.setattr(report_cli, "write_report", crash)
    assert cli.main(["summary", str(run_dir), "--history-db", str(tmp_path / "db.sqlite"), "--report"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["history"] == {"index_error": "ValueError: a bug"}
    assert done["report"] == {"path": None, "changed": False, "write_error": "not rendered: ValueError: a bug"}
    assert done["run_id"] == run_dir.name


def test_the_summary_aggregation_returns_data_and_text_and_markdown_render_it_apart():
    """records/summary_build.py aggregates (no rendering in it, no view imported); views/summary/text.py and
    markdown.py each render its RunSummary, sharing only cells.py, neither importing the other."""
    package = Path(results_summary.__file__).parents[1]

    def unit(name: str) -> tuple[set[str], set[str]]:  # (functions defined, modules imported)
        tree = ast.parse((package / name).read_text(encoding="utf-8"))
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        imported = {f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                    for a in n.names}
        return defined, imported

    defined, imported = unit("records/summary_build.py")
    assert not {f for f in defined if f.startswith("render")}, "the aggregation renders nothing"
    assert not {i for i in imported if i.startswith("case_runners.views")}
    assert "case_runners.views.summary.markdown" not in unit("views/summary/text.py")[1]
    assert "case_runners.views.summary.text" not in unit("views/summary/markdown.py")[1]
    summary = summarize_records([])
    assert isinstance(summary, RunSummary) and summary.cases == [] and not summary.ok
