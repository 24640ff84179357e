"""yolov5 inference: YOLOv5-L (case_runners/cases/yolov5/model.py) on COCO val2017, letterboxed to image_size, its
boxes kept by confidence and class-wise non-maximum suppression (postprocess.py, FlagPerf's thresholds) and scored by
pycocotools' COCOeval (bbox mAP@[.5:.95], FlagPerf's metric; the detr case's coco_map). The accuracy of each path is
that mAP; the predictions compared for agreement are each image's most confident class (-1 for none)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader

from case_runners.cases.imagenet.inference import for_inference
from case_runners.cases.yolov5.dataset import CocoVal, SyntheticCocoVal
from case_runners.cases.yolov5.model import YOLOv5
from case_runners.cases.yolov5.postprocess import Detections
from case_runners.tasks.inference.pipeline import forward_loop, torch_forward


def build_dataloader(config: dict[str, Any]) -> DataLoader:
    size, fp16 = int(config["image_size"]), bool(config["fp16"])
    if config.get("data_dir"):
        dataset: CocoVal | SyntheticCocoVal = CocoVal(Path(config["data_dir"]), size, fp16)
    else:
        dataset = SyntheticCocoVal(int(config["synthetic_samples"]), size, int(config["num_classes"]),
                                   int(config["seed"]), fp16)
    return DataLoader(dataset, batch_size=int(config["batch_size"]), shuffle=False,
                      num_workers=int(config["num_workers"]))


def create_model(config: dict[str, Any]) -> torch.nn.Module:
    """Random weights (seeded), or `checkpoint`: a state dict of the model (.pt or .safetensors; Ultralytics' names)."""
    torch.manual_seed(int(config["seed"]))
    model = YOLOv5(int(config["num_classes"]), float(config["depth_multiple"]), float(config["width_multiple"]))
    if config.get("checkpoint"):
        from case_runners.cases.bert.case import read_state_dict

        model.load_state_dict(read_state_dict(config["checkpoint"]))
    return for_inference(model, config)


def evaluator(dataset: CocoVal | SyntheticCocoVal, config: dict[str, Any]) -> Detections:
    """A pass's evaluator: it keeps each image's detections; its mAP is the pass's accuracy."""
    return Detections(dataset, config)


def _with_map(result: dict[str, Any], detections: Detections) -> dict[str, Any]:
    return {**result, "accuracy": detections.mean_ap()}


def model_forward(model: torch.nn.Module, dataloader: DataLoader, evaluate: Callable, config: dict[str, Any]) -> dict:
    detections = evaluate(dataloader.dataset, config)
    return _with_map(torch_forward(model, dataloader, detections, config), detections)


def export_model(model: torch.nn.Module, config: dict[str, Any]) -> Path:
    """<work_dir>/yolov5.onnx: images (batch, 3, s, s) in [0, 1] to decoded boxes, the batch dimension dynamic."""
    path = Path(config["work_dir"]) / "yolov5.onnx"
    size = int(config["image_size"])
    example = torch.zeros(2, 3, size, size, dtype=torch.float16 if config["fp16"] else torch.float32,
                          device=next(model.parameters()).device)
    torch.onnx.export(model, (example,), str(path), input_names=["images"], output_names=["boxes"],
                      dynamic_shapes={"images": {0: torch.export.Dim("batch")}}, verbose=False)
    return path


def engine_forward(engine: Callable, dataloader: DataLoader, evaluate: Callable, config: dict[str, Any]) -> dict:
    detections = evaluate(dataloader.dataset, config)
    return _with_map(forward_loop(engine, dataloader, detections, config, print, "inference"), detections)
