"""The typed, versioned documents (case_runners/records/) and `check-record`: what a real run writes is valid and
reads back key for key; a broken file is refused, naming the file, the key and what was expected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from case_runners.cli.main import main
from case_runners.records import names
from case_runners.records.check import KINDS
from case_runners.records.node import NodeResult
from case_runners.records.rank import FailedRankResult, InferenceRankResult, TrainingRankResult, build_rank_result
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round import InferenceRoundRecord, RoundRecord, TrainingRoundRecord
from case_runners.records.schema import RecordError, field_names
from case_runners.records.summary import RunSummary
from record_helpers import rank_result

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def runs(digits_run, digits_inference_run) -> list[Path]:
    """A training run of 5 steps and an inference run, as a user makes them (shared: tests/conftest.py)."""
    return [digits_run.run_dir, digits_inference_run.run_dir]


def documents(run_dir: Path) -> list[Path]:
    return sorted([run_dir / "summary.json", *run_dir.glob("*/resolved_config.json"),
                   *run_dir.glob("*/round*/round_record.json"), *run_dir.glob("*/round*/*/node_result.json"),
                   *run_dir.glob("*/round*/*/rank*.result.json")])


def check_record(capsys, *paths: Path | str) -> tuple[int, list[str]]:
    code = main(["check-record", *map(str, paths)])
    return code, capsys.readouterr().out.splitlines()


def test_every_document_of_a_real_run_is_valid_and_reads_back_key_for_key(runs, capsys):
    paths = [p for run_dir in runs for p in documents(run_dir)]
    code, lines = check_record(capsys, *paths)
    assert code == 0, lines
    schemas = [line.rpartition("(")[2].rstrip(")") for line in lines]
    assert lines == [f"{path}: ok ({schema})" for path, schema in zip(paths, schemas)]
    assert set(schemas) == {kind.SCHEMA for kind in KINDS}, "a run writes every kind"
    variants = set()
    for path in paths:
        doc = json.loads(path.read_text())
        kind = next(k for k in KINDS if k.SCHEMA == doc["schema"])
        typed = kind.from_json(doc, str(path))
        variants.add(type(typed))
        assert list(typed.to_json().items()) == list(doc.items()), f"{path} reads back as it was written"
    assert {TrainingRankResult, InferenceRankResult, TrainingRoundRecord, InferenceRoundRecord} <= variants


def test_a_counted_case_s_round_carries_rank_0_s_count_and_its_convention(runs):
    """digits_cnn's config.yaml says flops_per_sample: counted: the real round's MFU block has the count (its hand
    figure, 3 x 2 x 337,536 MACs) and says how it was counted (the cpu vendor has no peak: no MFU value)."""
    (record,) = runs[0].glob("*/round1/round_record.json")
    mfu = json.loads(record.read_text())["mfu"]
    assert mfu["flops_per_sample"] == 3 * 2 * 337_536 and "FlopCounterMode" in mfu["convention"]
    assert mfu["value"] is None and "no peak FLOP/s" in mfu["reason"]


def test_the_record_classes_name_what_the_names_module_lists():
    """The metric keys a round record copies are keys of the rank result of its task, and each status list is the
    field's choices."""
    assert set(names.TRAINING_METRICS) <= set(field_names(TrainingRankResult))
    assert set(names.INFERENCE_METRICS) <= set(field_names(InferenceRankResult))
    assert {f"rank_{key}" for key in names.NODE_THROUGHPUTS} <= set(field_names(TrainingRankResult))
    status = {cls: next(f for f in cls.__dataclass_fields__.values() if f.name == "status").metadata["choices"]
              for cls in (NodeResult, RoundRecord, TrainingRankResult, InferenceRankResult, FailedRankResult)}
    assert status[NodeResult] == names.NODE_STATUSES and status[RoundRecord] == names.ROUND_STATUSES
    assert {s for cls in (TrainingRankResult, InferenceRankResult, FailedRankResult) for s in status[cls]} == \
        set(names.RANK_STATUSES)


def break_file(tmp_path: Path, source: Path, edit) -> Path:
    doc = json.loads(source.read_text())
    edit(doc)
    path = tmp_path / source.name
    path.write_text(json.dumps(doc))
    return path


def test_a_missing_key_a_wrong_type_and_an_unknown_key_are_each_named(runs, tmp_path, capsys):
    (record,) = runs[0].glob("*/round1/round_record.json")

    def edit(doc):
        del doc["case_id"]
        doc["metrics"]["p_core"] = "fast"
        doc["per_node"][0]["duration_s"] = [1]
        doc["colour"] = "blue"

    path = break_file(tmp_path, record, edit)
    code, lines = check_record(capsys, path)
    assert code == 1
    assert lines[0] == f"{path}: not a valid perfplay.round_record/1: 4 problems"
    assert sorted(lines[1:]) == sorted([
        "  key 'colour': unknown (allowed: adapted, case, case_id, environment, framework, framework_version, "
        "hardware, metrics, metrics_rank, mfu, monitors, nnodes, nodes_elsewhere, non_standard, nproc, "
        "orchestration_errors, params, per_node, per_rank, reason, round, run_id, schema, standard, status, task, "
        "throughput, vendor, versions, "
        "write_error)",
        "  key 'case_id': missing (expected a string)",
        "  key 'metrics.p_core': expected a number or null, got \"fast\"",
        "  key 'per_node[0].duration_s': expected a number or null, got a list of 1"])
    with pytest.raises(RecordError) as raised:
        RoundRecord.load(path)
    assert str(raised.value).startswith(f"{path}: ")
    assert "key 'case_id': missing (expected a string)" in str(raised.value)


def test_a_status_a_rank_result_inside_a_record_and_a_node_result_are_checked(runs, tmp_path, capsys):
    (node,) = runs[0].glob("*/round1/*/node_result.json")
    (record,) = runs[0].glob("*/round1/round_record.json")
    bad_node = break_file(tmp_path, node, lambda doc: doc.update(status="done", ranks={"0": {"exit_code": "0"}}))
    bad_record = break_file(tmp_path, record, lambda doc: doc["per_rank"][0].pop("p_train"))
    code, lines = check_record(capsys, bad_node, bad_record)
    assert code == 1
    assert lines == [
        f"{bad_node}: not a valid perfplay.node_result/1: 3 problems",
        "  key 'status': expected one of success, failed, timeout, interrupted, got \"done\"",
        "  key 'ranks.0.exit_code': expected an integer or null, got \"0\"",
        "  key 'ranks.0.log': missing (expected a string)",
        f"{bad_record}: not a valid perfplay.round_record/1: 1 problem",
        "  key 'per_rank[0].p_train': missing (expected a number)"]


def test_an_unknown_schema_another_version_and_what_is_not_a_document_are_refused(runs, tmp_path, capsys):
    summary = runs[0] / "summary.json"
    other_kind = break_file(tmp_path, summary, lambda doc: doc.update(schema="perfplay.sys_info/1"))
    (tmp_path / "v2").mkdir()
    newer = break_file(tmp_path / "v2", summary, lambda doc: doc.update(schema="perfplay.run_summary/2"))
    unnamed = tmp_path / "unnamed.json"
    unnamed.write_text('{"case_id": "x"}')
    cut = tmp_path / "cut.json"
    cut.write_text('{"schema": "perfplay.run_summary/1", "cases": [')
    empty = tmp_path / "empty.json"
    empty.write_text("")
    missing = tmp_path / "missing.json"
    code, lines = check_record(capsys, other_kind, newer, unnamed, cut, empty, missing)
    known = "perfplay.node_result/1, perfplay.rank_result/1, perfplay.resolved_config/1, perfplay.round_record/1, " \
            "perfplay.run_summary/1"
    assert code == 1
    assert lines == [
        f"{other_kind}: not a known perfplay document: 1 problem",
        f"  key 'schema': unknown schema \"perfplay.sys_info/1\" (known: {known})",
        f"{newer}: not a known perfplay document: 1 problem",
        "  key 'schema': \"perfplay.run_summary/2\" is a version this perfplay does not read "
        "(it reads \"perfplay.run_summary/1\")",
        f"{unnamed}: not a known perfplay document: 1 problem",
        f"  key 'schema': missing: not a perfplay document (known: {known})",
        f"{cut}: not a known perfplay document: 1 problem",
        "  is not JSON (Expecting value: line 1 column 48 (char 47))",
        f"{empty}: not a known perfplay document: 1 problem",
        "  is empty",
        f"{missing}: not a known perfplay document: 1 problem",
        "  cannot be read: No such file or directory"]
    with pytest.raises(RecordError, match=r"key 'schema': expected \"perfplay.run_summary/1\", got "
                                          r"\"perfplay.round_record/1\""):
        RunSummary.from_json(json.loads(next(runs[0].glob("*/round1/round_record.json")).read_text()), "x")


def test_a_reader_refuses_what_its_writer_would_not_write(runs, tmp_path):
    """The readers check what they read: a resolved config with a wrong type stops the launcher's spec and the
    rank before anything runs, naming the file and the key."""
    (config,) = runs[0].glob("*/resolved_config.json")
    bad = break_file(tmp_path, config, lambda doc: doc.update(nproc="2"))
    with pytest.raises(RecordError) as raised:
        ResolvedConfig.load(bad)
    assert str(raised.value) == f"{bad}: key 'nproc': expected an integer, got \"2\""
    from case_runners.launch.node import spec_from_config
    with pytest.raises(RecordError, match="key 'nproc'"):
        spec_from_config(bad, tmp_path / "node", node_rank=0, master_addr="127.0.0.1", master_port=0, timeout_s=None,
                         run_id="r")


def test_a_task_s_result_that_is_not_valid_fails_the_rank_naming_why():
    fields = {k: v for k, v in rank_result().items() if k not in ("schema", "rank", "world_size", "e2e_time")}
    good = build_rank_result(3, 4, fields, 2.5)
    assert isinstance(good, TrainingRankResult) and (good.rank, good.world_size, good.e2e_time) == (3, 4, 2.5)
    bad = build_rank_result(3, 4, {**fields, "p_core": None, "colour": 1}, 2.5)
    assert isinstance(bad, FailedRankResult) and bad.status == "failed"
    assert bad.reason == ("the task's result is not a valid TrainingRankResult: key 'colour': unknown (allowed: "
                          + ", ".join(sorted({"schema", *field_names(TrainingRankResult)}))
                          + "); key 'p_core': expected a number, got null")
