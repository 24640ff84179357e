"""Inference cases: the config files and their override rules, safe FLOPs expressions, and the
pipeline's steps a-g under each switch, on the digits case with ONNX Runtime."""

from __future__ import annotations

import contextlib
import copy
import shutil
from pathlib import Path

import pytest

from case_runners.cases.resnet50.data import VAL_LAYOUT
from case_runners.core.errors import ConfigError
from case_runners.core.paths import project_root
from case_runners.host.data_check import data_problems
from case_runners.plan.config.resolved import INFERENCE
from case_runners.plan.inference_config import parse_flops, resolve_inference
from case_runners.records.resolved import InferenceConfig, ResolvedConfig
from case_runners.records.schema import RecordError
from case_runners.tasks.inference.pipeline import run_pipeline
from record_helpers import resolved as resolved_config

REPO = project_root()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The digits inference case and the vendors, to edit."""
    root = tmp_path / "checkout"
    shutil.copytree(REPO / "case_runners" / "cases" / "digits_cnn" / "inference",
                    root / "case_runners" / "cases" / "digits_cnn" / "inference")
    shutil.copytree(REPO / "vendor", root / "vendor", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _vendor_file(root: Path, text: str) -> Path:
    path = root / "vendor" / "cpu" / "cases" / "digits_cnn" / "cpu_configurations.yaml"
    path.write_text(text)
    return path


def test_a_resolved_inference_config_is_typed_and_checked_where_it_is_read():
    """resolve_inference gives an InferenceConfig; in a resolved config it is a checked document: a broken block
    is refused naming its key when the config is read, not by a KeyError in the rank."""
    config, _ = resolve_inference("digits_cnn", "cpu", REPO)
    assert isinstance(config, InferenceConfig)
    assert (config.compiler, config.flops, config.settings()["train_epochs"]) == ("onnxruntime", 675072.0, 15)
    doc = resolved_config("digits_cnn", selection={"task": INFERENCE})
    assert ResolvedConfig.from_json(doc).inference == config
    del doc["inference"]["configurations"]
    doc["inference"]["standard"] = "yes"
    with pytest.raises(RecordError) as caught:
        ResolvedConfig.from_json(doc, "resolved_config.json")
    assert "inference.configurations" in str(caught.value) and "inference.standard" in str(caught.value)


@pytest.mark.parametrize("text, value", [(4.12e9, 4.12e9), ("2*512*0.33e9", 2 * 512 * 0.33e9),
                                         ("2 * 337536", 675072.0), (".5e3", 500.0)])
def test_flops_are_a_number_or_a_product_of_numbers(text, value):
    assert parse_flops(text, file="f.yaml") == pytest.approx(value)


@pytest.mark.parametrize("text", ["2**64", "__import__('os').system('true')", "1e9+1", "-5", "2*", "0", True, None])
def test_anything_else_in_flops_is_rejected_without_being_evaluated(text):
    with pytest.raises(ConfigError, match="key 'flops'"):
        parse_flops(text, file="f.yaml")


def test_the_case_resolves_with_its_defaults():
    resolved, notes = resolve_inference("digits_cnn", "cpu", REPO)
    assert notes == []
    assert resolved.configurations["flops"] == 675072.0
    assert resolved.configurations["compiler"] == "onnxruntime"
    assert resolved.parameters["train_epochs"] == 15


def test_a_vendor_override_warns_on_a_new_key_and_logs_a_change(root: Path):
    _vendor_file(root, "batch_size: 128\nort_threads: 2\n")
    resolved, notes = resolve_inference("digits_cnn", "cpu", root)
    assert resolved.configurations["batch_size"] == 128 and resolved.configurations["ort_threads"] == 2
    assert any(n.startswith("info:") and "'batch_size' changed from 64 to 128" in n for n in notes)
    assert any(n.startswith("warning:") and "'ort_threads' is not in" in n for n in notes)


def test_how_a_vendor_runs_the_case_keeps_it_standard(root: Path):
    _vendor_file(root, "batch_size: 128\nfp16: true\nort_threads: 2\n")
    resolved, _ = resolve_inference("digits_cnn", "cpu", root, {"repeat": 1, "flops": "2 * 337536"})
    assert resolved.standard is True and resolved.non_standard == []


def test_another_flops_figure_or_a_model_file_the_run_did_not_export_is_non_standard(root: Path):
    _vendor_file(root, "flops: 1.0e9\n")
    resolved, _ = resolve_inference("digits_cnn", "cpu", root, {"exist_onnx_path": "/models/digits.onnx"})
    assert resolved.standard is False and resolved.non_standard == ["exist_onnx_path", "flops"]


def test_an_override_that_changes_nothing_stops_the_run(root: Path):
    _vendor_file(root, "batch_size: 64\n")
    with pytest.raises(ConfigError) as error:
        resolve_inference("digits_cnn", "cpu", root)
    assert str(error.value).startswith("vendor/cpu/cases/digits_cnn/cpu_configurations.yaml: key 'batch_size': "
                                       "sets the value 64 it already has")


def test_a_parameter_cannot_be_overridden_nor_be_in_two_files(root: Path):
    _vendor_file(root, "train_epochs: 3\n")
    with pytest.raises(ConfigError, match="key 'train_epochs': is a parameter of the case"):
        resolve_inference("digits_cnn", "cpu", root)
    _vendor_file(root, "batch_size: 32\n")
    params = root / "case_runners" / "cases" / "digits_cnn" / "inference" / "parameters.yaml"
    params.write_text(params.read_text() + "batch_size: 16\n")
    with pytest.raises(ConfigError, match=r"keys \['batch_size'\] are in both"):
        resolve_inference("digits_cnn", "cpu", root)


def test_configurations_keep_the_common_keys_and_the_switches_are_checked(root: Path):
    base = root / "case_runners" / "cases" / "digits_cnn" / "inference" / "configurations.yaml"
    text = base.read_text()
    base.write_text(text.replace("log_freq: 10\n", ""))
    with pytest.raises(ConfigError, match=r"missing \['log_freq'\]"):
        resolve_inference("digits_cnn", "cpu", root)
    base.write_text(text)
    _vendor_file(root, "no_validation: true\n")
    with pytest.raises(ConfigError, match="key 'exist_onnx_path': no_validation: true needs exist_onnx_path"):
        resolve_inference("digits_cnn", "cpu", root)
    _vendor_file(root, "compiler: tensorrt\n")
    with pytest.raises(ConfigError, match=r"vendor 'cpu' has no engine 'tensorrt'.*\(allowed: null, onnxruntime\)"):
        resolve_inference("digits_cnn", "cpu", root)


@pytest.fixture(scope="module")
def standard(tmp_path_factory) -> dict:
    """The standard flow, a to g: validation in torch, export, ONNX Runtime."""
    resolved, _ = resolve_inference("digits_cnn", "cpu", REPO)
    work = tmp_path_factory.mktemp("standard")
    return {"resolved": resolved, "work": work, "result": run_pipeline(resolved, REPO, work, log=lambda _: None)}


def _with(standard: dict, **changes) -> dict:
    resolved = copy.deepcopy(standard["resolved"])
    resolved.configurations.update(changes)
    return resolved


def test_both_paths_reach_the_target_and_agree(standard):
    result = standard["result"]
    assert result["steps"] == ["a", "b", "c", "d", "e", "f", "g"]
    assert result["validation_accuracy"] >= 0.95 and result["inference_accuracy"] >= 0.95
    assert result["agreement"] >= 0.99
    for key in ("p_validation_whole", "p_validation_core", "p_inference_whole", "p_inference_core"):
        assert result[key] > 0
    assert result["p_inference_core"] >= result["p_inference_whole"], "core excludes data and evaluation"
    assert result["flops_per_s"] == pytest.approx(675072 * result["p_inference_core"])


def test_compiler_null_goes_from_validation_to_the_summary(standard, tmp_path: Path):
    result = run_pipeline(_with(standard, compiler=None), REPO, tmp_path, log=lambda _: None)
    assert result["steps"] == ["a", "b", "c", "g"]
    assert result["p_inference_core"] is None and result["validation_accuracy"] >= 0.95
    assert not list(tmp_path.glob("*.onnx")), "nothing exported"


def test_no_validation_runs_the_given_onnx_without_a_model(standard, tmp_path: Path):
    onnx_path = str(standard["work"] / "digits_cnn.onnx")
    result = run_pipeline(_with(standard, no_validation=True, exist_onnx_path=onnx_path), REPO, tmp_path,
                          log=lambda _: None)
    assert result["steps"] == ["a", "b", "e", "f", "g"]
    assert result["p_validation_core"] is None
    assert result["inference_accuracy"] == standard["result"]["inference_accuracy"]


def test_exist_compiler_path_skips_the_compile(standard, tmp_path: Path):
    compiled = str(standard["work"] / "digits_cnn.ort.onnx")
    result = run_pipeline(_with(standard, no_validation=True, exist_onnx_path="foo", exist_compiler_path=compiled),
                          REPO, tmp_path, log=lambda _: None)
    assert result["steps"] == ["a", "b", "f", "g"]
    assert result["inference_accuracy"] == standard["result"]["inference_accuracy"]


def test_a_corrupt_onnx_or_a_missing_compiled_file_is_a_clear_error(standard, tmp_path: Path):
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a protobuf at all")
    with pytest.raises(ConfigError, match="key 'exist_onnx_path': .*broken.onnx is not a valid ONNX model"):
        run_pipeline(_with(standard, no_validation=True, exist_onnx_path=str(broken)), REPO, tmp_path,
                     log=lambda _: None)
    with pytest.raises(ConfigError, match="key 'exist_compiler_path': .*nowhere.ort.onnx does not exist"):
        run_pipeline(_with(standard, no_validation=True, exist_onnx_path="foo",
                           exist_compiler_path=str(tmp_path / "nowhere.ort.onnx")), REPO, tmp_path, log=lambda _: None)


def _tiny_resnet(tmp_path: Path, data_dir: str | None = None) -> tuple[dict, dict]:
    """resnet50's inference case on a tiny network and 32x32 images (its parameters, shrunk for a test)."""
    resolved, notes = resolve_inference("resnet50", "cpu", REPO)
    assert any("'compiler' changed from 'tensorrt' to 'onnxruntime'" in n for n in notes)
    resolved.parameters.update(image_size=32, embedding_size=8, hidden_sizes=[8, 8, 8, 8], depths=[1, 1, 1, 1],
                                  num_classes=3, synthetic_samples=12)
    resolved.configurations.update(batch_size=4, num_workers=0)
    return resolved, run_pipeline(resolved, REPO, tmp_path / "work", data_dir, log=lambda _: None)


def test_resnet50_runs_every_step_on_synthetic_images(tmp_path: Path):
    resolved, result = _tiny_resnet(tmp_path)
    assert result["steps"] == ["a", "b", "c", "d", "e", "f", "g"]
    assert result["precision"] == "fp32" and result["flops_per_item"] == pytest.approx(8.2e9)
    assert result["agreement"] >= 0.99, "ONNX Runtime and torch agree on the same weights"


def _imagenet_val(root: Path) -> Path:
    """<root>/val/<wnid>/*.JPEG: 3 classes of 2 real JPEGs each."""
    from PIL import Image

    for index, name in enumerate(["n01440764", "n01443537", "n01484850"]):
        folder = root / "val" / name
        folder.mkdir(parents=True)
        for k in range(2):
            image = Image.new("RGB", (48 + k * 8, 40), (80 * index, 40 * k, 200))
            image.save(folder / f"ILSVRC2012_val_{index}{k}.JPEG")
    return root


@pytest.mark.parametrize("folder", ["", "val"], ids=["imagenet root", "the val folder itself (FlagPerf)"])
def test_resnet50_reads_imagenet_val_in_imagefolder_layout(tmp_path: Path, folder: str):
    data_dir = str(_imagenet_val(tmp_path / "imagenet") / folder)
    assert data_problems("resnet50", {"num_classes": 3}, data_dir, INFERENCE) == [], "the host preflight agrees"
    _, result = _tiny_resnet(tmp_path, data_dir)
    assert result["steps"] == ["a", "b", "c", "d", "e", "f", "g"]
    assert result["inference_items"] == 6, "every image of val/ was read (repeat 1)"
    assert 0.0 <= result["inference_accuracy"] <= 1.0 and result["agreement"] >= 0.99


def test_resnet50_inference_data_check_names_the_folder_at_fault(tmp_path: Path):
    from PIL import Image

    root = _imagenet_val(tmp_path / "imagenet")
    assert data_problems("resnet50", {"num_classes": 2}, str(root / "val"), INFERENCE) == [
        f"{root / 'val'}: 3 class folders but the model has 2 classes"]
    train_only = tmp_path / "train_only"
    (train_only / "train" / "n01").mkdir(parents=True)
    assert data_problems("resnet50", {}, str(train_only), INFERENCE) == [
        f"{train_only / 'val'}: missing; expected {VAL_LAYOUT}"]
    flat = tmp_path / "flat_val"
    flat.mkdir()
    Image.new("RGB", (8, 8)).save(flat / "ILSVRC2012_val_00000001.JPEG")
    problems = data_problems("resnet50", {}, str(flat), INFERENCE)
    assert len(problems) == 1 and problems[0].startswith(f"{flat}: no class folders (it holds images such as "
                                                         "ILSVRC2012_val_00000001.JPEG directly")


def test_the_nvidia_inductor_engine_compiles_the_torch_model_outside_the_core_time(standard, tmp_path: Path):
    """vendor/nvidia/engines/inductor.py on this CPU (inductor's C++ backend): no ONNX needed, compilation
    reported as foo_time."""
    resolved = _with(standard, compiler="inductor", exist_onnx_path="unused", batch_size=60)  # one shape: 360 = 6 x 60
    resolved.vendor = "nvidia"
    result = run_pipeline(resolved, REPO, tmp_path, log=lambda _: None)
    assert result["steps"] == ["a", "b", "c", "e", "f", "g"]
    assert result["foo_time_s"] > 0, "the first call of each shape compiles, outside the core time"
    assert result["inference_accuracy"] >= 0.95 and result["agreement"] >= 0.99


@pytest.mark.parametrize("dynamic", [True, False])
def test_inductor_dynamic_compiles_once_for_every_length_or_once_per_length(dynamic: bool):
    """inductor_dynamic (FlagPerf's dynamo_dynamic, which its MMLU cases set): true, a new sequence length runs the
    first graph; false, it compiles again (which torch reports here as an error, error_on_recompile)."""
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location("inductor_engine", REPO / "vendor/nvidia/engines/inductor.py")
    assert spec is not None and spec.loader is not None
    engine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(engine)
    torch.compiler.reset()
    model = engine.InferModel({"inductor_dynamic": dynamic}, "", torch.nn.Sequential(torch.nn.Linear(4, 3)))
    model([torch.ones(1, 5, 4)])
    with torch._dynamo.config.patch(error_on_recompile=True), \
            (contextlib.nullcontext() if dynamic else pytest.raises(Exception, match="[Rr]ecompil")):
        outputs, _ = model([torch.ones(1, 7, 4)])
        assert outputs[0].shape == (1, 7, 3)
    with pytest.raises(ValueError, match="inductor_dynamic is 'yes': true"):
        engine.InferModel({"inductor_dynamic": "yes"}, "", torch.nn.Linear(4, 3))


def _tiny_bert(tmp_path: Path, data_dir: str | None = None) -> dict:
    """bert's inference case on a 2-layer, 32-wide BERT and 16-token sequences (shrunk for a test)."""
    resolved, notes = resolve_inference("bert", "cpu", REPO)
    assert any("'compiler' changed from 'tensorrt' to 'onnxruntime'" in n for n in notes)
    resolved.parameters.update(seq_len=16, max_predictions_per_seq=3, hidden_size=32, num_layers=2, num_heads=2,
                                  intermediate_size=64, synthetic_samples=10)
    return run_pipeline(resolved, REPO, tmp_path / "work", data_dir, log=lambda _: None)


def test_bert_masks_the_same_tokens_on_both_paths_and_they_agree(tmp_path: Path):
    result = _tiny_bert(tmp_path)
    assert result["steps"] == ["a", "b", "c", "d", "e", "f", "g"]
    assert result["inference_items"] == 10, "throughput counts sequences"
    assert result["agreement"] >= 0.99
    assert result["validation_accuracy"] == pytest.approx(result["inference_accuracy"], abs=0.02)


def test_bert_reads_token_shards(tmp_path: Path):
    import numpy as np

    shards = tmp_path / "tokens"
    (shards / "eval").mkdir(parents=True)
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 30522, size=(6, 16), dtype=np.int32)
    ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
    np.savez(shards / "eval" / "part-00000.npz", input_ids=ids, attention_mask=np.ones_like(ids))
    result = _tiny_bert(tmp_path, str(shards))
    assert result["inference_items"] == 6 and result["agreement"] >= 0.99


def test_bert_reads_flagperf_hdf5_shards_with_their_masks(tmp_path: Path):
    from bert_shards import masked_rows, token_rows, write_shard

    shards = tmp_path / "bert"
    write_shard(shards / "eval_set_uncompressed" / "part_eval_10k.hdf5", masked_rows(token_rows(6, 16), 3),
                compressed=True)
    assert data_problems("bert", {"seq_len": 16, "max_predictions_per_seq": 3}, str(shards), INFERENCE) == []
    result = _tiny_bert(tmp_path, str(shards))
    assert result["inference_items"] == 6 and result["agreement"] >= 0.99
