"""An inference selection through the run: the plan, the host's data check, the round record and the summary."""

from __future__ import annotations

import dataclasses
import json
import socket
from pathlib import Path

import pytest

from case_runners.host.data_check import check_data, check_inference_files
from case_runners.plan.run_plan import make_plan
from case_runners.rank.driver.events import read_events
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round_build import write_round_record
from case_runners.records.summary_build import summarize_run
from case_runners.views.summary.markdown import render_markdown
from case_runners.views.summary.text import render_table
from record_helpers import inference_rank_result, node_result, write_node


def plan(*cases, **request):
    return make_plan({"vendor": "cpu", "cases": list(cases), **request}, check=True)


def resolved_case(selection: dict) -> ResolvedConfig:
    return ResolvedConfig.from_json(plan(selection)["cases"][0])


def test_an_inference_selection_resolves_to_a_config_the_launch_and_record_understand():
    result = plan({"case": "digits_cnn", "task": "inference", "overrides": {"batch_size": 16}})
    assert result["ok"], result["errors"]
    (config,) = result["cases"]
    assert config["task"] == "inference" and config["case_id"] == "digits_cnn_inference_CPUx1x1"
    assert (config["nnodes"], config["nproc"]) == (1, 1)
    assert config["params"]["batch_size"] == 16 and config["params"]["train_epochs"] == 15
    assert config["flops_per_sample"] == 2 * 337536
    assert config["provenance"]["batch_size"] == "run overrides (perfplay_cases[0].overrides)"
    assert ("info: run overrides (perfplay_cases[0].overrides): key 'batch_size' changed from 64 to 16"
            in config["notes"])


def test_training_and_inference_of_one_case_run_side_by_side():
    result = plan("digits_cnn", {"case": "digits_cnn", "task": "inference"})
    assert result["ok"], result["errors"]
    assert [c["case_id"] for c in result["cases"]] == ["digits_cnn_CPUx1x1", "digits_cnn_inference_CPUx1x1"]
    assert plan("digits_cnn", task="inference")["cases"][0]["task"] == "inference", "perfplay_task is the default"


@pytest.mark.parametrize("selection, request_vars, expected", [
    ({"case": "digits_cnn", "task": "inference", "nproc": 2}, {},
     "run vars: key 'perfplay_cases[0].nproc': an inference case runs one process on one device"),
    ({"case": "digits_cnn", "task": "inference", "overrides": {"train_lr": 1.0}}, {},
     "key 'train_lr': is a parameter of the case"),
    ({"case": "digits_cnn", "task": "inference", "overrides": {"batch": 1}}, {},
     "key 'batch': unknown inference config key (allowed: batch_size, compiler,"),
    ({"case": "nosuch", "task": "inference"}, {},
     "key 'perfplay_cases[0].case': unknown inference case 'nosuch' (allowed: "),
    ({"case": "digits_cnn", "task": "serving"}, {}, "key 'perfplay_cases[0].task': unknown task 'serving'"),
    ("digits_cnn", {"task": "serving"}, "run vars: key 'perfplay_task': unknown task 'serving'"),
])
def test_bad_inference_selections_are_named(selection, request_vars, expected):
    result = plan(selection, **request_vars)
    assert not result["ok"]
    assert any(expected in error for error in result["errors"]), result["errors"]


def test_the_host_checks_the_inference_data_and_the_compiled_engine(tmp_path: Path):
    config = resolved_case({"case": "resnet50", "task": "inference", "data_dir": str(tmp_path)})
    # an empty dir is neither a root with val/ nor the val folder itself (FlagPerf's layout)
    assert check_data(config) == [f"{tmp_path}: no class folders; expected <data_dir>/val/<class>/<image>.JPEG, or "
                                  "data_dir the val folder itself: <data_dir>/<class>/<image>.JPEG (ImageFolder: one "
                                  "folder per class, e.g. n01440764)"]
    (tmp_path / "val" / "n01440764").mkdir(parents=True)
    (tmp_path / "val" / "n01440764" / "a.JPEG").write_bytes(b"")
    assert check_data(config) == [], "inference reads val/ only: no train/ needed"
    assert check_data(dataclasses.replace(config, data_dir=None)) == [], "no data dir: synthetic images"
    bert = resolved_case({"case": "bert", "task": "inference", "data_dir": str(tmp_path)})
    assert "no held-out shard to evaluate" in check_data(bert)[0]
    missing = tmp_path / "engine.ort.onnx"
    digits = resolved_case({"case": "digits_cnn", "task": "inference", "overrides": {
        "no_validation": True, "exist_onnx_path": "foo", "exist_compiler_path": str(missing)}})
    assert check_inference_files(digits) == [
        f"key 'exist_compiler_path' (run overrides (perfplay_cases[0].overrides)) of digits_cnn_inference_CPUx1x1: "
        f"{missing} does not exist on this host (a compiled engine file, or null to compile)"]
    missing.write_bytes(b"x")
    assert check_inference_files(digits) == []


def _round(run_dir: Path, config: dict, rank_result: dict, memory: tuple[int, int] | None) -> dict:
    node = write_node(run_dir / config["case_id"] / "round1" / f"{socket.gethostname()}_noderank0",
                      node_result(socket.gethostname(), duration_s=3.0), [inference_rank_result(**rank_result)])
    if memory:
        used, total = memory
        lines = [{"ts": t, "devices": [{"index": 0, "mem_used_bytes": used - 100 * (2 - t), "mem_total_bytes": total}]}
                 for t in (0, 1, 2)]
        (node / "cpu_monitor.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return write_round_record(node.parent, ResolvedConfig.from_json(config), 1, run_dir.name).to_json()


RANK = {"task": "inference", "steps": ["a", "b", "c", "d", "e", "f", "g"], "compiler": "onnxruntime",
        "precision": "fp32", "p_validation_whole": 100.0, "p_validation_core": 200.0, "p_inference_whole": 300.0,
        "p_inference_core": 400.0, "validation_accuracy": 0.98, "inference_accuracy": 0.97, "agreement": 0.99,
        "e2e_time": 9.0}


def test_the_record_has_seed_002_s_figures_mfu_on_the_engine_core_and_the_device_memory(tmp_path: Path):
    config = plan({"case": "digits_cnn", "task": "inference"})["cases"][0]
    config["vendor_info"]["hardware"]["peak_flops"] = {"fp32": 1.0e9, "fp16": 4.0e9}
    record = _round(tmp_path / "run1", config, RANK, (5 * 2**30, 16 * 2**30))
    assert record["status"] == "success" and record["task"] == "inference"
    assert record["metrics"]["p_inference_core"] == 400.0 and record["metrics"]["agreement"] == 0.99
    assert record["mfu"]["value"] == pytest.approx(400.0 * 2 * 337536 / 1.0e9)
    assert record["mfu"]["basis"] == "p_inference_core" and record["mfu"]["peak_flops_per_device"] == 1.0e9
    assert "1 multiply-add = 2 FLOPs" in record["mfu"]["convention"]
    assert record["metrics"]["device_memory"]["peak_used_bytes"] == 5 * 2**30
    assert record["metrics"]["device_memory"]["total_bytes"] == 16 * 2**30
    fp16 = _round(tmp_path / "run2", config, {**RANK, "precision": "fp16"}, None)
    assert fp16["mfu"]["peak_flops_per_device"] == 4.0e9, "the peak of the precision used"
    assert fp16["metrics"]["device_memory"]["peak_used_bytes"] is None
    null = _round(tmp_path / "run3", config, {**RANK, "compiler": None, "p_inference_whole": None,
                                              "p_inference_core": None, "steps": ["a", "b", "c", "g"]}, None)
    assert null["mfu"]["basis"] == "p_validation_core"
    assert null["mfu"]["value"] == pytest.approx(200.0 * 2 * 337536 / 1e9)


def test_the_summary_prints_an_inference_table_beside_the_training_one(tmp_path: Path):
    run_dir = tmp_path / "run1"
    config = plan({"case": "digits_cnn", "task": "inference"})["cases"][0]
    _round(run_dir, config, RANK, (2 * 2**30, 16 * 2**30))
    summary = summarize_run(run_dir)
    (case,) = summary.to_json()["cases"]
    assert case["task"] == "inference" and case["stats"]["p_inference_core"]["mean"] == 400.0
    table = render_table(summary)
    assert "inference (throughput in items/s" in table and "training (" not in table
    row = next(line for line in table.splitlines() if line.startswith("digits_cnn_inference_CPUx1x1"))
    assert row.split()[4:13] == ["yes", "100.0", "200.0", "300.0", "400.0", "0.9800", "0.9700", "99.0%", "9.0"]
    assert "2.00 / 16.0" in row, "peak / total device memory, GiB"
    assert "## Inference" in render_markdown(summary) and "## Training" not in render_markdown(summary)



def test_case_runners_run_takes_an_inference_case_without_ansible(digits_inference_run):
    """`python -m case_runners run CASE --task inference`: the same plan, launch, record and summary on one host."""
    out, run_dir = digits_inference_run.done, digits_inference_run.run_dir
    assert out.returncode == 0, out.stderr[-3000:]
    assert "digits_cnn_inference_CPUx1x1 round 1: success" in out.stderr
    assert "inference (throughput in items/s" in out.stdout
    record = json.loads((run_dir / "digits_cnn_inference_CPUx1x1" / "round1" / "round_record.json").read_text())
    assert record["metrics"]["steps"] == ["a", "b", "c", "g"] and record["metrics"]["validation_accuracy"] >= 0.95
    assert record["metrics"]["device_memory"]["peak_used_bytes"] > 0, "the monitors ran around the round"
    (node,) = (run_dir / "digits_cnn_inference_CPUx1x1" / "round1").glob("*_noderank0")
    events = read_events(node / "rank0.events.jsonl")
    begun = [e["value"]["step"] for e in events if e["event"] == "INFERENCE_STEP_BEGIN"]
    assert begun == ["a", "b", "c", "g"], "each step says it started: the progress line names the one running"


def test_device_memory_is_the_rank_s_own_device_on_a_host_with_several(tmp_path: Path):
    """A GPU host monitors every device; the inference rank's memory is that of the device it was given."""
    config = plan({"case": "digits_cnn", "task": "inference"})["cases"][0]
    node = write_node(tmp_path / "run1" / config["case_id"] / "round1" / "gpu01_noderank0", node_result("gpu01"),
                      [inference_rank_result(**RANK, monitor_devices=[1])])
    used = {0: 70 * 2**30, 1: 3 * 2**30, 2: 50 * 2**30}  # devices 0 and 2 busy with another job
    lines = [{"ts": t, "devices": [{"index": i, "mem_used_bytes": b, "mem_total_bytes": 80 * 2**30}
                                   for i, b in used.items()]} for t in (0, 1)]
    (node / "cpu_monitor.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    memory = write_round_record(node.parent, ResolvedConfig.from_json(config), 1, "run1").metrics["device_memory"]
    assert memory["peak_used_bytes"] == 3 * 2**30 and memory["devices"] == [1]
    assert memory["total_bytes"] == 80 * 2**30


@pytest.mark.parametrize("env, value, expected", [
    ("CUDA_VISIBLE_DEVICES", "3", [3]),
    ("CUDA_VISIBLE_DEVICES", "GPU-8f6a1c2e-0000", None),  # a UUID: the node figure instead
    ("", "", None),  # the cpu vendor has no visible-devices variable
])
def test_the_rank_names_its_devices_as_the_monitor_numbers_them(env, value, expected):
    from case_runners.tasks.inference.task import monitor_devices
    assert monitor_devices(env, {env: value} if env else {}) == expected


def test_the_nvidia_vendor_runs_the_standard_tensorrt_fp16_or_inductor_or_torch_tensorrt():
    result = make_plan({"vendor": "nvidia", "task": "inference", "cases": [
        {"case": "resnet50", "hardware": "H100"},
        {"case": "bert", "hardware": "A100", "overrides": {"compiler": "inductor", "exist_onnx_path": "unused"}},
        {"case": "resnet50", "hardware": "A100",
         "overrides": {"compiler": "torch_tensorrt", "exist_onnx_path": "unused"}}]}, check=True)
    assert result["ok"], result["errors"]
    resnet, bert, torch_trt = result["cases"]
    assert (resnet["params"]["compiler"], resnet["params"]["fp16"]) == ("tensorrt", True)
    assert resnet["vendor_info"]["hardware"]["peak_flops"]["fp16"] == 989.4e12, "MFU divides by the fp16 peak"
    assert bert["params"]["compiler"] == "inductor" and bert["flops_per_sample"] == pytest.approx(2 * 512 * 3.35e8)
    # each engine's pins (vendor/nvidia/engines/<engine>-requirements.txt) install for its rounds only
    assert "vendor/nvidia/engines/tensorrt-requirements.txt" in resnet["requirements"]
    assert torch_trt["params"]["compiler"] == "torch_tensorrt" and \
        "vendor/nvidia/engines/torch_tensorrt-requirements.txt" in torch_trt["requirements"]
    assert not any("engines/" in r for r in bert["requirements"])
