"""yolov5 (FlagPerf's yolov5 inference case): YOLOv5-L by yolov5l.yaml's layer table, COCO val2017 with its instances
json, plain-torch NMS and pycocotools' mAP; steps a-g on CPU at a tiny shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from case_runners.cases.yolov5.data import VAL_LAYOUT
from case_runners.core.paths import project_root
from case_runners.host.data_check import data_problems
from case_runners.plan.config.resolved import INFERENCE
from case_runners.plan.inference_config import resolve_inference
from case_runners.tasks.inference.pipeline import run_pipeline

REPO = project_root()
# Two images of other shapes than the square input; category ids as COCO's (not 0..n-1), boxes as x, y, w, h pixels.
IMAGES = [{"id": 139, "file_name": "000000000139.jpg", "width": 96, "height": 64},
          {"id": 285, "file_name": "000000000285.jpg", "width": 48, "height": 80}]
CATEGORIES = [{"id": 1, "name": "person"}, {"id": 3, "name": "car"}, {"id": 90, "name": "toothbrush"}]
BOXES = [(139, 3, [10.0, 8.0, 40.0, 30.0]), (139, 90, [50.0, 20.0, 30.0, 40.0]), (285, 1, [5.0, 10.0, 30.0, 50.0])]


def coco_val(root: Path) -> Path:
    """<root>/val2017/*.jpg and <root>/annotations/instances_val2017.json, COCO's layout and format."""
    from PIL import Image

    (root / "val2017").mkdir(parents=True)
    (root / "annotations").mkdir()
    for k, image in enumerate(IMAGES):
        Image.new("RGB", (image["width"], image["height"]), (60 * k, 120, 200)).save(root / "val2017" /
                                                                                    image["file_name"])
    annotations = [{"id": n + 1, "image_id": image_id, "category_id": category, "bbox": box, "iscrowd": 0,
                    "area": box[2] * box[3]} for n, (image_id, category, box) in enumerate(BOXES)]
    (root / "annotations" / "instances_val2017.json").write_text(json.dumps(
        {"images": IMAGES, "annotations": annotations, "categories": CATEGORIES}))
    return root


def _tiny(**parameters):
    resolved, notes = resolve_inference("yolov5", "cpu", REPO)
    assert any("'compiler' changed from 'tensorrt' to 'onnxruntime'" in n for n in notes)
    resolved.parameters.update(image_size=64, depth_multiple=0.33, width_multiple=0.125, num_classes=3,
                               synthetic_samples=3, **parameters)
    resolved.configurations.update(batch_size=2, num_workers=0)
    return resolved


def test_every_step_runs_on_coco_val2017_and_both_paths_agree(tmp_path: Path):
    data_dir = str(coco_val(tmp_path / "coco"))
    assert data_problems("yolov5", {}, data_dir, INFERENCE) == [], "the host preflight agrees"
    result = run_pipeline(_tiny(), REPO, tmp_path / "work", data_dir, log=lambda _: None)
    assert result["steps"] == ["a", "b", "c", "d", "e", "f", "g"]
    assert result["validation_items"] == result["inference_items"] == 2, "every image of val2017 (repeat 1)"
    assert result["agreement"] == 1.0, "ONNX Runtime and torch find the same most confident class"
    assert 0.0 <= result["validation_accuracy"] <= 1.0
    assert result["inference_accuracy"] == pytest.approx(result["validation_accuracy"], abs=0.02)


def test_the_data_check_names_what_is_missing(tmp_path: Path):
    root = coco_val(tmp_path / "coco")
    (root / "annotations" / "instances_val2017.json").unlink()
    assert data_problems("yolov5", {}, str(root), INFERENCE) == [
        f"{root}/annotations/instances_val2017.json: missing; expected {VAL_LAYOUT}"]
    assert data_problems("yolov5", {}, str(tmp_path), INFERENCE) == [
        f"{tmp_path}/val2017: missing; expected {VAL_LAYOUT}"]
    assert VAL_LAYOUT == ("<data_dir>/val2017/<image>.jpg and <data_dir>/annotations/instances_val2017.json "
                          "(COCO 2017)")


def test_boxes_on_the_letterbox_score_a_map_of_one_in_the_original_pixels(tmp_path: Path):
    """The ground truth, drawn on the letterboxed input as the model's decoded output (centre, size, objectness,
    class probabilities) among low-confidence noise: NMS keeps them, they are scaled back to each image's pixels
    and mapped to COCO's category ids, and COCOeval scores 1.0; shifted by a few pixels, less."""
    from case_runners.cases.yolov5.dataset import CocoVal
    from case_runners.cases.yolov5.postprocess import Detections

    size = 64
    dataset = CocoVal(coco_val(tmp_path / "coco"), size, fp16=False)
    config = {"image_size": size, "conf_thres": 0.05, "iou_thres": 0.2, "max_det": 1000}

    def outputs(shift: float) -> torch.Tensor:
        rows = torch.zeros(2, 40, 5 + 3)
        rows[:, :, :4] = torch.tensor([32.0, 32.0, 8.0, 8.0])
        rows[:, :, 4] = 0.01  # noise below conf_thres
        for image_index, image in enumerate(IMAGES):
            gain = min(size / image["width"], size / image["height"])
            pad_x, pad_y = (size - image["width"] * gain) / 2, (size - image["height"] * gain) / 2
            found = [(c, b) for i, c, b in BOXES if i == image["id"]]
            for row, (category, (x, y, w, h)) in enumerate(found):
                rows[image_index, row, :4] = torch.tensor([(x + w / 2) * gain + pad_x + shift,
                                                           (y + h / 2) * gain + pad_y, w * gain, h * gain])
                rows[image_index, row, 4] = 0.9
                rows[image_index, row, 5 + dataset.categories.index(category)] = 0.95 - 0.1 * row
        return rows

    exact = Detections(dataset, config)
    assert exact([outputs(0.0)], torch.tensor([0, 1])) == (0, [3, 1])  # each image's most confident category
    assert exact.mean_ap() == pytest.approx(1.0)
    shifted = Detections(dataset, config)
    shifted([outputs(3.0)], torch.tensor([0, 1]))
    assert 0.0 < shifted.mean_ap() < 0.9


def test_nms_keeps_what_greedy_suppression_keeps():
    from case_runners.cases.yolov5.postprocess import box_iou, nms

    generator = torch.Generator().manual_seed(0)
    corner = torch.rand(200, 2, generator=generator) * 100
    boxes = torch.cat((corner, corner + torch.rand(200, 2, generator=generator) * 30 + 1), 1)
    scores = torch.rand(200, generator=generator)
    greedy: list[int] = []
    for i in scores.argsort(descending=True).tolist():
        if all(box_iou(boxes[i], boxes[j:j + 1])[0] <= 0.5 for j in greedy):
            greedy.append(i)
    assert nms(boxes, scores, 0.5, 1000).tolist() == greedy and len(greedy) < 200
    assert nms(boxes, scores, 0.5, 10).tolist() == greedy[:10], "max_det cuts the best"


def test_yolov5l_has_ultralytics_size_names_and_flops():
    """At the standard shape (meta device): yolov5l's 46,563,709 parameters (Ultralytics' count), its state dict's
    names, (1, 25200, 85) decoded boxes at 640 (FlagPerf's hidden_size and number_boxes) and 109.0e9 FLOPs, FlagPerf's
    5.45e10 multiply-adds x 2 within 0.1 %."""
    from case_runners.cases.yolov5.inference import create_model

    resolved, _ = resolve_inference("yolov5", "nvidia", REPO)
    assert resolved.configurations["batch_size"] == 96, "FlagPerf's nvidia config"
    with torch.device("meta"):
        model = create_model({**resolved.parameters, "fp16": False})
    assert sum(p.numel() for p in model.parameters()) == 46_563_709
    assert {"model.0.conv.weight", "model.8.m.2.cv2.bn.running_var", "model.24.anchors",
            "model.24.m.2.bias"} <= set(model.state_dict())
    with FlopCounterMode(display=False) as counter:
        out = model(torch.empty(1, 3, 640, 640, device="meta"))
    assert tuple(out.shape) == (1, 25200, 85)
    assert counter.get_total_flops() == 108_993_740_800
    assert resolved.flops == pytest.approx(counter.get_total_flops(), rel=1e-3)


def test_a_state_dict_loads(tmp_path: Path):
    from case_runners.cases.yolov5.inference import create_model

    parameters = {**_tiny().parameters, "fp16": False}
    saved = create_model({**parameters, "seed": 7})
    torch.save(saved.state_dict(), tmp_path / "yolov5.pt")
    loaded = create_model({**parameters, "checkpoint": str(tmp_path / "yolov5.pt")})
    images = torch.rand(1, 3, 64, 64)
    with torch.inference_mode():
        assert torch.equal(loaded(images), saved(images))
