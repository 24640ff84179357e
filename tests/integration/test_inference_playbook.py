"""ansible-playbook run_case.yml with task: inference on localhost (cpu vendor): the inference pipeline's steps a-g, its
four switches and its override rules, run through the playbook as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from case_runners.plan.config.resolved import TASKS
from playbook_run import REPO, checkout_copy, flat, launched_anything, run_playbook

DIGITS = "digits_cnn_inference_CPUx1x1"
RESNET = "resnet50_inference_CPUx1x1"
PEAK_FP32 = 1.0e11  # set in the test checkout's vendor.yaml, so that MFU has a peak to divide by
DIGITS_FLOPS = 2 * 337536


def run_inference(checkout: Path, results: Path, run_id: str, *selections, **run_vars):
    extra = {"perfplay_results_dir": str(results), "perfplay_run_id": run_id, "perfplay_task": "inference",
             "perfplay_cases": list(selections), **run_vars}
    return run_playbook(checkout, "run_case.yml", "-e", json.dumps(extra))


def record(results: Path, run_id: str, case_id: str = DIGITS) -> dict:
    return json.loads((results / run_id / case_id / "round1" / "round_record.json").read_text())


def imagefolder(root: Path) -> Path:
    """ImageNet val in ImageFolder layout: 2 classes of 4 JPEGs."""
    for index, wnid in enumerate(("n01440764", "n01443537")):
        folder = root / "val" / wnid
        folder.mkdir(parents=True)
        for k in range(4):
            Image.new("RGB", (300 + 10 * k, 260), (90 * index, 30 * k, 180)).save(folder / f"val_{index}{k}.JPEG")
    return root


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The checkout with a peak FLOP/s for the CPU and a vendor override of digits that adds a key (a warning)
    and changes one (logged)."""
    path = checkout_copy(tmp_path_factory.mktemp("inference") / "checkout")
    vendor_yaml = path / "vendor" / "cpu" / "vendor.yaml"
    vendor_yaml.write_text(vendor_yaml.read_text().replace("peak_flops: {}", f"peak_flops: {{fp32: {PEAK_FP32}}}"))
    (path / "vendor" / "cpu" / "cases" / "digits_cnn").mkdir(parents=True, exist_ok=True)
    (path / "vendor" / "cpu" / "cases" / "digits_cnn" / "cpu_configurations.yaml").write_text(
        "batch_size: 32\nort_probe: 7\n")
    return path


@pytest.fixture(scope="module")
def standard(checkout: Path, tmp_path_factory) -> tuple:
    """One run of the standard digits case and resnet50 on a small ImageNet val folder."""
    results = tmp_path_factory.mktemp("results")
    data = imagefolder(tmp_path_factory.mktemp("imagenet"))
    run = run_inference(checkout, results, "run_standard", {"case": "digits_cnn"},
                        {"case": "resnet50", "data_dir": str(data)})
    return run, results


def test_the_standard_case_runs_every_step_and_both_paths_reach_the_target(standard):
    run, results = standard
    assert run.rc == 0, run.output[-5000:]
    rec = record(results, "run_standard")
    metrics = rec["metrics"]
    assert rec["task"] == "inference" and rec["status"] == "success"
    assert metrics["steps"] == ["a", "b", "c", "d", "e", "f", "g"]
    assert metrics["validation_accuracy"] >= 0.95 and metrics["inference_accuracy"] >= 0.95
    assert metrics["agreement"] >= 0.99
    assert metrics["validation_items"] == metrics["inference_items"] == 3 * 360, "repeat 3 of the held-out 360"
    for key in ("p_validation_whole", "p_validation_core", "p_inference_whole", "p_inference_core"):
        assert metrics[key] > 0, key
    assert metrics["p_inference_core"] >= metrics["p_inference_whole"], "core leaves out data and evaluation"
    assert Path(metrics["onnx_path"]).is_file() and Path(metrics["compiled_path"]).is_file()


def test_mfu_uses_the_vendor_peak_of_the_precision_and_states_the_convention(standard):
    _, results = standard
    rec = record(results, "run_standard")
    mfu = rec["mfu"]
    assert mfu["basis"] == "p_inference_core" and mfu["precision"] == "fp32"
    assert mfu["peak_flops_per_device"] == PEAK_FP32 and mfu["flops_per_sample"] == DIGITS_FLOPS
    assert mfu["value"] == pytest.approx(rec["metrics"]["p_inference_core"] * DIGITS_FLOPS / PEAK_FP32)
    assert "1 multiply-add = 2 FLOPs" in mfu["convention"]


def test_the_monitors_give_the_peak_device_memory_and_the_total(standard):
    _, results = standard
    memory = record(results, "run_standard")["metrics"]["device_memory"]
    assert memory["samples"] > 0 and memory["source"] == "cpu monitor of localhost"
    assert 0 < memory["peak_used_bytes"] <= memory["total_bytes"]


def test_a_vendor_override_warns_on_a_new_key_and_logs_a_change(standard):
    run, results = standard
    assert flat("[WARNING]: digits_cnn_inference_CPUx1x1: vendor/cpu/cases/digits_cnn/cpu_configurations.yaml: key "
                "'ort_probe' is not in") in flat(run.output)
    config = json.loads((results / "run_standard" / DIGITS / "resolved_config.json").read_text())
    changed = ("info: vendor/cpu/cases/digits_cnn/cpu_configurations.yaml: key 'batch_size' changed from 64 to 32")
    assert changed in config["notes"] and config["params"]["batch_size"] == 32
    log = (results / "run_standard" / DIGITS / "round1" / "localhost_noderank0" / "rank0.out.log").read_text()
    assert changed in log, "the rank's log records the change"


def test_resnet50_reads_imagenet_val_and_the_summary_shows_both_cases(standard):
    run, results = standard
    rec = record(results, "run_standard", RESNET)
    assert rec["status"] == "success", rec["reason"]
    assert rec["metrics"]["validation_items"] == 8 and rec["metrics"]["agreement"] >= 0.99
    summary = json.loads((results / "run_standard" / "summary.json").read_text())
    assert {c["case_id"]: c["status"] for c in summary["cases"]} == {DIGITS: "success", RESNET: "success"}
    assert "inference (throughput in items/s" in run.output
    assert "## Inference" in (results / "run_standard" / "summary.md").read_text()


def _standard_files(standard) -> tuple[str, str]:
    metrics = record(standard[1], "run_standard")["metrics"]
    return metrics["onnx_path"], metrics["compiled_path"]


@pytest.mark.parametrize("switches, steps", [
    pytest.param({"compiler": None}, ["a", "b", "c", "g"], id="compiler-null"),
    pytest.param({"exist_onnx_path": "{onnx}"}, ["a", "b", "c", "e", "f", "g"], id="exist-onnx-path"),
    pytest.param({"no_validation": True, "exist_onnx_path": "{onnx}"}, ["a", "b", "e", "f", "g"], id="no-validation"),
    pytest.param({"no_validation": True, "exist_onnx_path": "foo", "exist_compiler_path": "{compiled}"},
                 ["a", "b", "f", "g"], id="exist-compiler-path"),
])
def test_each_switch_skips_its_steps(standard, checkout: Path, tmp_path: Path, switches: dict,
                                                    steps: list[str]):
    onnx, compiled = _standard_files(standard)
    overrides = {k: v.format(onnx=onnx, compiled=compiled) if isinstance(v, str) else v for k, v in switches.items()}
    run = run_inference(checkout, tmp_path, "run_switch", {"case": "digits_cnn", "overrides": overrides})
    assert run.rc == 0, run.output[-5000:]
    rec = record(tmp_path, "run_switch")
    metrics = rec["metrics"]
    assert metrics["steps"] == steps
    validated, engine = "c" in steps, "f" in steps
    assert (metrics["validation_accuracy"] is not None) == validated
    assert (metrics["p_inference_core"] is not None) == engine
    accuracy = metrics["inference_accuracy"] if engine else metrics["validation_accuracy"]
    assert accuracy >= 0.95, "the given ONNX file or engine is the standard run's trained model"
    assert rec["mfu"]["basis"] == ("p_inference_core" if engine else "p_validation_core")
    assert rec["mfu"]["value"] > 0
    assert not (tmp_path / "run_switch" / DIGITS / "inference_work" / "digits_cnn.onnx").exists(), "no export"


def _vendor_file(checkout: Path, text: str) -> Path:
    path = checkout / "vendor" / "cpu" / "cases" / "digits_cnn" / "cpu_configurations.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def assert_rejected(run, results: Path, *expected: str) -> None:
    assert run.rc != 0, run.output[-3000:]
    for text in expected:
        assert flat(text) in flat(run.output), f"{text!r} not in:\n{run.output[-3000:]}"
    assert launched_anything(results) == []


VENDOR_FILE = "vendor/cpu/cases/digits_cnn/cpu_configurations.yaml"


@pytest.mark.parametrize("vendor_text, overrides, expected", [
    pytest.param("compiler: onnxruntime\n", {},
                 [VENDOR_FILE, "key 'compiler'", "sets the value 'onnxruntime' it already has"], id="same-value"),
    pytest.param("seed: 7\n", {}, [VENDOR_FILE, "key 'seed'", "is a parameter of the case"], id="vendor-sets-a-param"),
    pytest.param(None, {"train_epochs": 1},
                 ["run overrides (perfplay_cases[0].overrides)", "key 'train_epochs'", "is a parameter of the case"],
                 id="run-sets-a-param"),
    pytest.param(None, {"no_validation": True},
                 ["key 'exist_onnx_path'", "no_validation: true needs exist_onnx_path"], id="no-validation-alone"),
    pytest.param(None, {"compiler": "tensorrt"},
                 ["key 'compiler'", "vendor 'cpu' has no engine 'tensorrt'", "(allowed: null, onnxruntime)"],
                 id="compiler-the-vendor-lacks"),
    pytest.param("flops: __import__('os').getcwd()\n", {},
                 [VENDOR_FILE, "key 'flops'", "is not a number or a product of numbers"], id="flops-not-a-product"),
])
def test_override_rules_and_bad_switches_stop_the_run_before_any_host(tmp_path: Path, vendor_text, overrides,
                                                                        expected):
    checkout = checkout_copy(tmp_path / "checkout")
    if vendor_text is not None:
        _vendor_file(checkout, vendor_text)
    results = tmp_path / "results"
    run = run_inference(checkout, results, "run_rejected", {"case": "digits_cnn", "overrides": overrides})
    assert_rejected(run, results, "the run was rejected", *expected)
    assert not (results / "run_rejected").exists(), "a rejected plan creates no run directory"


@pytest.mark.parametrize("selection, run_vars, expected", [
    pytest.param({"case": "digits_cnn", "nproc": 2}, {},
                 ["key 'perfplay_cases[0].nproc'", "one process on one device"], id="nproc-2"),
    pytest.param({"case": "digits_cnn"}, {"perfplay_task": "serving"},
                 ["key 'perfplay_task'", "unknown task 'serving'", f"(allowed: {', '.join(sorted(TASKS))})"],
                 id="unknown-task"),
])
def test_an_inference_selection_is_checked_like_any_other(tmp_path: Path, selection, run_vars, expected):
    run = run_inference(REPO, tmp_path, "run_rejected", selection, **run_vars)
    assert_rejected(run, tmp_path, "the run was rejected", *expected)


def test_a_missing_compiled_engine_is_rejected_by_the_host_preflight(tmp_path: Path):
    missing = tmp_path / "nowhere" / "digits_cnn.ort.onnx"
    run = run_inference(REPO, tmp_path, "run_rejected", {"case": "digits_cnn", "overrides": {
        "no_validation": True, "exist_onnx_path": "foo", "exist_compiler_path": str(missing)}})
    assert_rejected(run, tmp_path, f"key 'exist_compiler_path' (run overrides (perfplay_cases[0].overrides)) of "
                                   f"{DIGITS}: {missing} does not exist on this host")


def test_a_corrupt_onnx_file_fails_the_round_with_a_clear_reason(tmp_path: Path):
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"\x08\x07not an onnx model")
    run = run_inference(REPO, tmp_path, "run_corrupt", {"case": "digits_cnn", "overrides": {
        "no_validation": True, "exist_onnx_path": str(corrupt)}})
    assert run.rc != 0
    rec = record(tmp_path, "run_corrupt")
    assert rec["status"] == "failed"
    assert f"exited with code 1: key 'exist_onnx_path': {corrupt} is not a valid ONNX model" in rec["reason"]
    assert "Traceback" not in rec["reason"]
    assert f"{DIGITS} round 1: failed" in run.output
