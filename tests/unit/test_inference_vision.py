"""The image inference cases beside resnet50: vit_l_16 (an inference-only case) and swin_transformer's inference part
(FlagPerf's swinTransformer). Each runs steps a-g on CPU at a tiny shape on ImageNet val in ImageFolder layout, its
FLOPs per image are counted at the standard shape, and a weights folder in transformers' format loads."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from case_runners.cases.imagenet.data import VAL_LAYOUT
from case_runners.core.errors import ConfigError
from case_runners.core.paths import project_root
from case_runners.host.data_check import check_data, data_problems
from case_runners.plan.config.resolved import INFERENCE
from case_runners.plan.inference_config import resolve_inference
from case_runners.records.resolved import InferenceConfig
from case_runners.tasks.inference.pipeline import run_pipeline
from case_runners.vendors.flagperf.importer import import_flagperf
from flagperf_tree import load, write
from test_inference import _imagenet_val
from test_inference_run import plan, resolved_case

REPO = project_root()
# Each case's parameters shrunk for a test: a model of a few thousand parameters on 32x32 images, 3 classes.
TINY = {
    "swin_transformer": {"image_size": 32, "embed_dim": 16, "depths": [1, 1], "num_heads": [1, 2], "window_size": 4},
    "vit_l_16": {"image_size": 32, "patch_size": 8, "hidden_size": 32, "num_layers": 2, "num_heads": 2,
                 "intermediate_size": 64},
}


def _tiny(case: str) -> InferenceConfig:
    resolved, notes = resolve_inference(case, "cpu", REPO)
    assert any("'compiler' changed from 'tensorrt' to 'onnxruntime'" in n for n in notes)
    resolved.parameters.update(TINY[case], num_classes=3, synthetic_samples=6)
    resolved.configurations.update(batch_size=4, num_workers=0)
    return resolved


def _model(case: str, parameters: dict) -> torch.nn.Module:
    return importlib.import_module(f"case_runners.cases.{case}.inference").create_model(
        {**parameters, "fp16": False})


@pytest.mark.parametrize("case", sorted(TINY))
def test_every_step_runs_on_imagenet_val_and_both_paths_agree(case: str, tmp_path: Path):
    data_dir = str(_imagenet_val(tmp_path / "imagenet") / "val")  # FlagPerf's data_dir: the val folder itself
    assert data_problems(case, {"num_classes": 3}, data_dir, INFERENCE) == [], "the host preflight agrees"
    result = run_pipeline(_tiny(case), REPO, tmp_path / "work", data_dir, log=lambda _: None)
    assert result["steps"] == ["a", "b", "c", "d", "e", "f", "g"]
    assert result["validation_items"] == result["inference_items"] == 6, "every image of val/ was read (repeat 1)"
    assert result["agreement"] == 1.0, "ONNX Runtime and torch predict the same classes on the same weights"
    assert result["validation_accuracy"] == result["inference_accuracy"]
    assert (tmp_path / "work" / f"{case}.onnx").is_file()


@pytest.mark.parametrize(("case", "parameters", "counted"), [
    ("vit_l_16", 304_326_632, 123_109_425_152),  # ViT-L/16: 61.55e9 multiply-adds, FlagPerf's 6.16e10
    ("swin_transformer", 87_768_224, 30_861_893_632),  # Swin-B: torchvision's swin_b's size and 15.43 GFLOPS
])
def test_the_standard_model_and_its_flops_per_image(case: str, parameters: int, counted: int):
    """At the standard shape (on the meta device: no memory, and attention runs as matmuls the counter sees), the
    model has the published size and one image's forward the FLOPs of configurations.yaml, FlagPerf's multiply-adds
    x 2 (rounded: within 0.5 %)."""
    resolved, _ = resolve_inference(case, "nvidia", REPO)
    with torch.device("meta"):
        model = _model(case, resolved.parameters)
    size = int(resolved.parameters["image_size"])
    with FlopCounterMode(display=False) as counter:
        model(torch.empty(1, 3, size, size, device="meta"))
    assert sum(p.numel() for p in model.parameters()) == parameters
    assert counter.get_total_flops() == counted
    assert resolved.flops == pytest.approx(counted, rel=5e-3)


@pytest.mark.parametrize("case", sorted(TINY))
def test_a_weights_folder_in_transformers_format_loads_and_another_shape_is_refused(case: str, tmp_path: Path):
    parameters = _tiny(case).parameters
    saved = _model(case, {**parameters, "seed": 7})
    saved.net.save_pretrained(tmp_path / "weights")
    loaded = _model(case, {**parameters, "checkpoint": str(tmp_path / "weights")})
    images = torch.randn(2, 3, parameters["image_size"], parameters["image_size"])
    with torch.inference_mode():
        assert torch.equal(loaded(images), saved(images)), "the folder's weights, not the seeded random ones"
        assert not torch.equal(_model(case, parameters)(images), saved(images))
    with pytest.raises(ValueError, match=r"weights: not the weights of this model.s shape; mismatched keys: "
                                         r".*classifier"):
        _model(case, {**parameters, "num_classes": 5, "checkpoint": str(tmp_path / "weights")})


def test_an_inference_only_case_goes_through_the_plan_and_the_host_check(tmp_path: Path):
    """vit_l_16 has no training config: a selection of it plans like resnet50's, its data checked by the host
    preflight, its parameters never overridden."""
    config = resolved_case({"case": "vit_l_16", "task": "inference", "data_dir": str(tmp_path)})
    assert config.case_id == "vit_l_16_inference_CPUx1x1" and config.flops_per_sample == 2 * 6.16e10
    assert check_data(config) == [f"{tmp_path}: no class folders; expected {VAL_LAYOUT}"]
    _imagenet_val(tmp_path)
    assert check_data(config) == [], "ImageNet val in ImageFolder layout"
    result = plan({"case": "vit_l_16", "task": "inference", "overrides": {"hidden_size": 8}})
    assert any("key 'hidden_size': is a parameter of the case" in error for error in result["errors"])


def test_an_inference_only_case_declares_its_parameters_ranges(tmp_path: Path):
    """With no training case to inherit them from, each parameter has its range in parameters.yaml, checked."""
    folder = tmp_path / "case_runners" / "cases" / "vit_l_16" / "inference"
    shutil.copytree(REPO / "case_runners" / "cases" / "vit_l_16" / "inference", folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "vendor" / "cpu", tmp_path / "vendor" / "cpu", ignore=shutil.ignore_patterns("__pycache__"))
    params = folder / "parameters.yaml"
    params.write_text(params.read_text().replace("num_layers: {default: 24,", "num_layers: {default: 500,"))
    with pytest.raises(ConfigError, match=r"vit_l_16/inference/parameters.yaml: key 'num_layers': bad default: 500 "
                                          r"is out of range \(allowed: 1 <= num_layers <= 128\)"):
        resolve_inference("vit_l_16", "cpu", tmp_path)


def test_flagperf_s_inference_host_file_maps_both_cases(tmp_path: Path):
    """FlagPerf's host.yaml names them swinTransformer and vit_l_16: the importer maps them to perfplay's cases."""
    write(tmp_path / "FlagPerf", {"inference/configs/host.yaml": """\
        VENDOR: "nvidia"
        HOSTS: ["10.1.2.59"]
        CASES:
          "swinTransformer:pytorch_2.1": "/raid/dataset/ImageNet/val"
          "vit_l_16:pytorch_2.1": "/raid/dataset/ImageNet/val"
        """, "training/run_benchmarks/config/test_conf.py": "CASES = {}\n"})
    import_flagperf(tmp_path / "FlagPerf", tmp_path / "out")
    val = "/raid/dataset/ImageNet/val"
    assert load(tmp_path / "out" / "flagperf_inference.yml")["perfplay_cases"] == {
        "swin_transformer:pytorch_2.1": val, "vit_l_16:pytorch_2.1": val}
