"""sam_h's inference case: its FLOPs at ViT-H's shape, FlagPerf's data (an image, a point, three ground-truth masks)
and measure, and steps a-g at the functional shape with the data and a weights folder in the real formats."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from case_runners.core.paths import project_root
from case_runners.host.data_check import data_problems
from case_runners.plan.config.resolved import INFERENCE
from case_runners.plan.inference_config import resolve_inference
from case_runners.tasks.inference.pipeline import run_pipeline

REPO = project_root()


def test_flops_per_image_are_counted_at_vit_h_shape():
    """configurations.yaml's flops = one image through SamModel at ViT-H's size (1024x1024, one point), counted by
    torch.utils.flop_counter on a meta-device model."""
    from torch.utils.flop_counter import FlopCounterMode

    from case_runners.cases.sam_h.inference import create_model

    resolved, _ = resolve_inference("sam_h", "nvidia", REPO)
    config = {**resolved.settings(), "fp16": False}
    with torch.device("meta"):
        model = create_model(config)
        pixels, points = torch.zeros(1, 3, 1024, 1024), torch.ones(1, 1, 1, 2)
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(6.41e8, rel=0.01), "SAM ViT-H"
    with FlopCounterMode(display=False) as counter:
        masks = model(pixels, points)
    assert tuple(masks.shape) == (1, 1, 3, 256, 256)
    assert counter.get_total_flops() == pytest.approx(config["flops"], rel=1e-3)


def _data_dir(tmp_path: Path, config: dict) -> Path:
    """FlagPerf's data dir: the image, SamModel's weights and SamProcessor's files (another seed than the case's
    random weights), and the ground truth as FlagPerf made it: the model's three masks on the image."""
    from PIL import Image
    from transformers import SamModel

    from case_runners.cases.sam_h.inference import SamMasks, create_model, processor, sam_config

    data = tmp_path / "data"
    torch.manual_seed(3)
    SamModel(sam_config(config)).save_pretrained(data / config["weights"])
    processor(config).save_pretrained(data / config["weights"])
    image = Image.fromarray(torch.randint(0, 256, (40, 56, 3), dtype=torch.uint8).numpy())
    image.save(data / config["image"])
    model = create_model({**config, "data_dir": str(data)})
    assert isinstance(model, SamMasks)
    inputs = processor(config)(image, input_points=[[config["point"]]], return_tensors="pt")
    with torch.no_grad():
        low = model(inputs["pixel_values"], inputs["input_points"].float())
    masks = processor(config).post_process_masks(low, inputs["original_sizes"], inputs["reshaped_input_sizes"])
    for index, mask in enumerate(masks[0][0]):
        torch.save(mask.clone(), data / f"{config['ground_truth']}_{index}.pt")
    return data


def test_steps_a_to_g_score_the_masks_against_flagperfs_ground_truth(tmp_path: Path):
    resolved, notes = resolve_inference("sam_h", "cpu", REPO, functional=True)
    assert any("'compiler' changed from 'tensorrt' to 'onnxruntime'" in n for n in notes)
    config = resolved.settings()
    config["point"] = [20, 30]
    resolved.parameters["point"] = [20, 30]
    data = _data_dir(tmp_path, config)
    assert data_problems("sam_h", config, str(data), INFERENCE) == []

    result = run_pipeline(resolved, REPO, tmp_path / "work", str(data), log=lambda _: None)
    assert result["steps"] == ["a", "b", "c", "d", "e", "f", "g"]
    assert result["validation_items"] == result["inference_items"] == 4, "datasize images, repeat 1"
    assert result["validation_accuracy"] == 1.0, "the weights folder's model made the ground truth"
    assert result["inference_accuracy"] >= 0.99 and result["agreement"] >= 0.9

    inverted = ~torch.load(data / "sam_gt_0.pt")
    torch.save(inverted, data / "sam_gt_0.pt")
    resolved.configurations["compiler"] = None  # validation only
    flipped = run_pipeline(resolved, REPO, tmp_path / "work2", str(data), log=lambda _: None)
    assert flipped["validation_accuracy"] == pytest.approx(2 / 3), "every pixel of one mask of three is wrong"


def test_the_data_check_names_each_missing_file(tmp_path: Path):
    params = {"image": "car.png", "ground_truth": "sam_gt"}
    (tmp_path / "sam_gt_1.pt").write_bytes(b"")
    assert data_problems("sam_h", params, str(tmp_path), INFERENCE) == [
        f"{tmp_path / 'car.png'}: missing; expected the image to segment (FlagPerf's car.png)",
        *(f"{tmp_path / f'sam_gt_{i}.pt'}: missing; expected a bool mask of the image's size saved with torch.save "
          "(FlagPerf's sam_gt_<i>.pt)" for i in (0, 2))]
