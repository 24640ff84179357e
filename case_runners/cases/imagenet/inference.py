"""The inference pipeline's functions shared by the ImageNet classifiers (resnet50, vit_l_16, swin_transformer):
ImageNet val in ImageFolder layout (data_dir/val/<class>/*.JPEG, or data_dir/<class>/*.JPEG when data_dir is the val
folder itself as in FlagPerf's configs; resized to image_size x 256/224 and centre-cropped to image_size), or
synthetic images without a data dir; inputs are normalised float32 NCHW tensors (fp16 when the config says so),
the metric top-1 accuracy. Each case adds its create_model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from case_runners.cases.imagenet.data import inference_split
from case_runners.cases.imagenet.dataset import ImageFolder, SyntheticImages
from case_runners.cases.imagenet.transforms import MEAN, STD, eval_transform
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


def for_inference(model: nn.Module, config: dict[str, Any]) -> nn.Module:
    """The model in eval mode, in half precision when the config says fp16."""
    model = model.eval()
    return model.half() if config["fp16"] else model


def transformers_classifier(model_class: Any, model_config: Any, config: dict[str, Any]) -> nn.Module:
    """A transformers *ForImageClassification of model_config returning plain logits, ready for inference: random
    weights (seeded), or the weights of the `checkpoint` folder in transformers' format (config.json and
    model.safetensors or pytorch_model.bin, as save_pretrained writes them), loaded into the shape the parameters give
    (a folder of another shape, or with tensors missing, is an error naming them)."""
    from case_runners.cases.imagenet.classifier import Logits

    torch.manual_seed(int(config["seed"]))
    if config.get("checkpoint"):
        net, info = model_class.from_pretrained(config["checkpoint"], config=model_config, output_loading_info=True,
                                                ignore_mismatched_sizes=True)  # reported below, by name
        wrong = {kind: info[kind] for kind in ("missing_keys", "mismatched_keys") if info.get(kind)}
        if wrong:  # transformers would keep random weights for them, with a warning only
            raise ValueError(f"checkpoint {config['checkpoint']}: not the weights of this model's shape; "
                             + "; ".join(f"{kind.replace('_', ' ')}: {sorted(map(str, keys))[:5]}"
                                         for kind, keys in wrong.items()))
    else:
        net = model_class(model_config)
    return for_inference(Logits(net), config)


def evaluator(outputs: list[torch.Tensor], labels: torch.Tensor) -> tuple[int, list[int]]:
    """Top-1 hits of a batch (FlagPerf's acc1) and its predicted classes."""
    predicted = outputs[0].float().argmax(dim=1)
    return int((predicted == labels).sum()), predicted.tolist()


def model_forward(model: nn.Module, dataloader: DataLoader, evaluate: Callable, config: dict[str, Any]) -> dict:
    return torch_forward(model, dataloader, evaluate, config)


def export_onnx(model: nn.Module, config: dict[str, Any], name: str, traced: bool = False) -> Path:
    """<work_dir>/<name>.onnx: images (batch, 3, image_size, image_size) to logits, the batch dimension dynamic.
    traced: torch's TorchScript exporter instead of torch.export, for a model whose reshapes torch.export cannot make
    symbolic in the batch (transformers' Swin windows)."""
    path = Path(config["work_dir"]) / f"{name}.onnx"
    size = int(config["image_size"])
    example = torch.zeros(2, 3, size, size, dtype=torch.float16 if config["fp16"] else torch.float32,
                          device=next(model.parameters()).device)
    if traced:
        torch.onnx.export(model, (example,), str(path), input_names=["images"], output_names=["logits"],
                          dynamic_axes={"images": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)
    else:
        torch.onnx.export(model, (example,), str(path), input_names=["images"], output_names=["logits"],
                          dynamic_shapes={"images": {0: torch.export.Dim("batch")}}, verbose=False)
    return path


def engine_forward(engine: Callable, dataloader: DataLoader, evaluate: Callable, config: dict[str, Any]) -> dict:
    return forward_loop(engine, dataloader, evaluate, config, print, "inference")
