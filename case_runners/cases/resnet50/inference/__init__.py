"""resnet50 inference: ResNet-50 v1.5 (the training case's model) on ImageNet val in ImageFolder layout
(data_dir/val/<class>/*.JPEG, or data_dir/<class>/*.JPEG when data_dir is the val folder itself as in FlagPerf's
configs; resized to 256 and centre-cropped to 224), or on synthetic images without a
data dir. Inputs are normalised float32 NCHW tensors (fp16 when the config says so)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from case_runners.cases.imagenet.data import inference_split
from case_runners.cases.imagenet.dataset import ImageFolder, SyntheticImages
from case_runners.cases.imagenet.transforms import MEAN, STD, eval_transform
from case_runners.cases.resnet50.case import ResNetClassifier
from case_runners.tasks.inference.pipeline import forward_loop, torch_forward


class Normalised(Dataset):
    """uint8 CHW images to normalised float tensors, in the data pipeline (timed as whole, not core)."""

    def __init__(self, images: ImageFolder | SyntheticImages, fp16: bool) -> None:
        self.images, self.dtype = images, torch.float16 if fp16 else torch.float32
        self.mean = torch.tensor(MEAN).view(3, 1, 1) * 255
        self.std = torch.tensor(STD).view(3, 1, 1) * 255

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        image, label = self.images[index]
        return ((image.float() - self.mean) / self.std).to(self.dtype), label


def build_dataloader(config: dict[str, Any]) -> DataLoader:
    size = int(config["image_size"])
    if config.get("data_dir"):
        images: ImageFolder | SyntheticImages = ImageFolder(inference_split(config["data_dir"]), eval_transform(size))
    else:
        images = SyntheticImages(int(config["synthetic_samples"]), size, int(config["num_classes"]),
                                 int(config["seed"]))
    return DataLoader(Normalised(images, bool(config["fp16"])), batch_size=int(config["batch_size"]),
                      shuffle=False, num_workers=int(config["num_workers"]))


def create_model(config: dict[str, Any]) -> torch.nn.Module:
    torch.manual_seed(int(config["seed"]))
    model = ResNetClassifier(config)
    if config.get("checkpoint"):
        model.load_state_dict(torch.load(config["checkpoint"], map_location="cpu", weights_only=True))
    model = model.eval()
    return model.half() if config["fp16"] else model


def evaluator(outputs: list[torch.Tensor], labels: torch.Tensor) -> tuple[int, list[int]]:
    predicted = outputs[0].float().argmax(dim=1)
    return int((predicted == labels).sum()), predicted.tolist()


def model_forward(model: torch.nn.Module, dataloader: DataLoader, evaluate: Callable,
                  config: dict[str, Any]) -> dict:
    return torch_forward(model, dataloader, evaluate, config)


def export_model(model: torch.nn.Module, config: dict[str, Any]) -> Path:
    path = Path(config["work_dir"]) / "resnet50.onnx"
    size = int(config["image_size"])
    example = torch.zeros(2, 3, size, size, dtype=torch.float16 if config["fp16"] else torch.float32,
                          device=next(model.parameters()).device)
    torch.onnx.export(model, (example,), str(path), input_names=["images"], output_names=["logits"],
                      dynamic_shapes={"images": {0: torch.export.Dim("batch")}}, verbose=False)
    return path


def engine_forward(engine: Callable, dataloader: DataLoader, evaluate: Callable, config: dict[str, Any]) -> dict:
    return forward_loop(engine, dataloader, evaluate, config, print, "inference")
