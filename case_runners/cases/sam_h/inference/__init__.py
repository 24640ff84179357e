"""sam_h inference: Segment Anything with the ViT-H image encoder (transformers' SamModel) as FlagPerf runs it
(inference/benchmarks/sam_h): one image and one point prompt, datasize times; the three masks of each are scored
against the ground truth by FlagPerf's measure, the share of pixels where the mask and the truth agree.

The model of steps b-f gives the low-resolution masks (SamMasks); SamProcessor prepares the image and the point
(data, in whole time) and scales the masks back to the image (evaluation, in whole time), as in FlagPerf.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset
from transformers import SamConfig, SamImageProcessorPil, SamModel, SamProcessor

from case_runners.cases.sam_h.data import MASKS, truth_files
from case_runners.tasks.inference.pipeline import forward_loop, torch_forward

INPUTS = ("pixel_values", "input_points")


class SamMasks(torch.nn.Module):
    """SamModel's low-resolution masks (batch, 1, 3, image_size / 4, image_size / 4) for one point an image: FlagPerf's
    model_utils/sam.py forward, its second output."""

    def __init__(self, sam: SamModel) -> None:
        super().__init__()
        self.sam = sam

    def forward(self, pixel_values: torch.Tensor, input_points: torch.Tensor) -> torch.Tensor:
        return self.sam(pixel_values=pixel_values, input_points=input_points, multimask_output=True).pred_masks


def weights_dir(config: dict[str, Any]) -> Path | None:
    if not config.get("data_dir"):
        return None
    path = Path(config["data_dir"]) / str(config["weights"])
    if not path.is_dir():
        print(f"weights: {path} is not there; random weights (throughput only)")
        return None
    return path


def sam_config(config: dict[str, Any]) -> SamConfig:
    size = int(config["image_size"])
    vision = {"hidden_size": int(config["hidden_size"]), "num_hidden_layers": int(config["num_layers"]),
              "num_attention_heads": int(config["num_heads"]), "mlp_dim": int(config["mlp_dim"]),
              "window_size": int(config["window_size"]), "global_attn_indexes": list(config["global_attn_indexes"]),
              "image_size": size, "patch_size": 16, "output_channels": 256}
    return SamConfig(vision_config=vision, prompt_encoder_config={"image_size": size,
                                                                   "image_embedding_size": size // 16})


def processor(config: dict[str, Any]) -> SamProcessor:
    folder = weights_dir(config)
    if folder:
        return SamProcessor.from_pretrained(folder)
    size = int(config["image_size"])
    return SamProcessor(image_processor=SamImageProcessorPil(size={"longest_edge": size},
                                                             pad_size={"height": size, "width": size}))


class OneImage(Dataset):
    """FlagPerf's SamInferDataset: the processed image and point, datasize times; the labels are the original and
    the model's sizes (height, width, height, width), which the masks are scaled back with."""

    def __init__(self, config: dict[str, Any]) -> None:
        from PIL import Image

        if config.get("data_dir"):
            image = Image.open(Path(config["data_dir"]) / str(config["image"])).convert("RGB")
        else:
            height, width = config["synthetic_size"]
            generator = torch.Generator().manual_seed(int(config["seed"]))
            image = Image.fromarray(torch.randint(0, 256, (height, width, 3), generator=generator,
                                                  dtype=torch.uint8).numpy())
        inputs = processor(config)(image, input_points=[[list(config["point"])]], return_tensors="pt")
        self.pixels = inputs["pixel_values"][0].to(torch.float16 if config["fp16"] else torch.float32)
        self.points = inputs["input_points"][0].to(self.pixels.dtype)
        self.sizes = torch.cat([inputs["original_sizes"][0], inputs["reshaped_input_sizes"][0]])
        self.length = int(config["datasize"])

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, ...]:
        return self.pixels, self.points, self.sizes


def build_dataloader(config: dict[str, Any]) -> DataLoader:
    return DataLoader(OneImage(config), batch_size=int(config["batch_size"]), shuffle=False, drop_last=True,
                      num_workers=int(config["num_workers"]))


def create_model(config: dict[str, Any]) -> torch.nn.Module:
    folder = weights_dir(config)
    if folder:
        sam = SamModel.from_pretrained(folder)
    else:
        torch.manual_seed(int(config["seed"]))
        sam = SamModel(sam_config(config))
    model = SamMasks(sam).eval()
    return model.half() if config["fp16"] else model


@dataclass
class Truth:
    """The ground-truth masks (MASKS of the image's height x width) and the processor that scales masks to them."""

    masks: list[torch.Tensor]
    processor: SamProcessor


def ground_truth(config: dict[str, Any]) -> Truth:
    """FlagPerf's sam_gt_<i>.pt files; without a data dir, empty masks (the score then means nothing)."""
    if config.get("data_dir"):
        masks = [torch.load(path, map_location="cpu", weights_only=True).bool()
                 for path in truth_files(config["data_dir"], config)]
    else:
        masks = [torch.zeros(tuple(config["synthetic_size"]), dtype=torch.bool)] * MASKS
    return Truth(masks, processor(config))


def evaluator(outputs: list[torch.Tensor], sizes: torch.Tensor, truth: Truth) -> tuple[int, list[int], int]:
    """FlagPerf's evaluator.py: each mask, scaled to the image and thresholded at 0 (SamProcessor.post_process_masks),
    against its ground truth: (pixels that agree, each mask's agreement in whole percent, pixels compared)."""
    masks = truth.processor.post_process_masks(outputs[0].float(), sizes[:, :2], sizes[:, 2:])
    agree = compared = 0
    percents = []
    for image in masks:
        for mask, expected in zip(image[0], truth.masks):
            same = int(torch.eq(mask, expected).sum())
            agree, compared = agree + same, compared + expected.numel()
            percents.append(round(100 * same / expected.numel()))
    return agree, percents, compared


def model_forward(model: torch.nn.Module, dataloader: DataLoader, evaluate: Callable,
                  config: dict[str, Any]) -> dict:
    return torch_forward(model, dataloader, functools.partial(evaluate, truth=ground_truth(config)), config)


def export_model(model: torch.nn.Module, config: dict[str, Any]) -> Path:
    """SamMasks to ONNX, the batch dynamic (TorchScript's exporter, as the stable_diffusion_v1_4 case)."""
    path = Path(config["work_dir"]) / "sam_h.onnx"
    parameter = next(model.parameters())
    size = int(config["image_size"])
    example = (torch.zeros(2, 3, size, size, dtype=parameter.dtype, device=parameter.device),
               torch.full((2, 1, 1, 2), size / 2, dtype=parameter.dtype, device=parameter.device))
    with warnings.catch_warnings():  # transformers' shape checks, constant for a given image size
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.onnx.export(model, example, str(path), input_names=list(INPUTS), output_names=["masks"],
                          dynamic_axes={name: {0: "batch"} for name in (*INPUTS, "masks")}, dynamo=False,
                          verbose=False)
    return path


def engine_forward(engine: Callable, dataloader: DataLoader, evaluate: Callable, config: dict[str, Any]) -> dict:
    return forward_loop(engine, dataloader, functools.partial(evaluate, truth=ground_truth(config)), config, print,
                        "inference")
