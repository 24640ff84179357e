"""COCO val2017 for yolov5: each image read with Pillow, letterboxed to image_size x image_size (scaled to fit, its
aspect kept, centred on grey 114 padding, as FlagPerf's dataloader.py letterbox with auto=False), as floats in [0, 1]
(halves with fp16), with its index; or synthetic images without a data dir (no ground truth: throughput only).

Each dataset keeps the ground truth (COCO's instances dict, for pycocotools), each image's id and original size, and
the COCO category ids of the model's classes (class k is the k-th category id in order: COCO's 80 of 91)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from case_runners.cases.detr.data import annotation_file, image_dir

PAD_VALUE = 114


def letterbox_geometry(width: int, height: int, size: int) -> tuple[float, int, int, int, int]:
    """(gain, new width, new height, left pad, top pad) of an image letterboxed into size x size."""
    gain = min(size / height, size / width)
    new_w, new_h = int(round(width * gain)), int(round(height * gain))
    return gain, new_w, new_h, int(round((size - new_w) / 2 - 0.1)), int(round((size - new_h) / 2 - 0.1))


def letterbox(image: Any, size: int) -> torch.Tensor:
    """A Pillow RGB image letterboxed into a uint8 CHW tensor of size x size."""
    from PIL import Image

    _, new_w, new_h, left, top = letterbox_geometry(image.width, image.height, size)
    canvas = Image.new("RGB", (size, size), (PAD_VALUE,) * 3)
    canvas.paste(image.resize((new_w, new_h), Image.Resampling.BILINEAR), (left, top))
    return torch.from_numpy(np.asarray(canvas, dtype=np.uint8)).permute(2, 0, 1).contiguous()


class CocoVal(Dataset):
    def __init__(self, root: Path, size: int, fp16: bool) -> None:
        self.root, self.size, self.dtype = root, size, torch.float16 if fp16 else torch.float32
        self.ground_truth = json.loads(annotation_file(root, "val").read_text(encoding="utf-8"))
        self.images = sorted(self.ground_truth["images"], key=lambda image: image["id"])
        self.categories = sorted(category["id"] for category in self.ground_truth["categories"])

    def __len__(self) -> int:
        return len(self.images)

    def original_size(self, index: int) -> tuple[int, int]:
        return int(self.images[index]["width"]), int(self.images[index]["height"])

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        from PIL import Image

        with Image.open(image_dir(self.root, "val") / self.images[index]["file_name"]) as image:
            pixels = letterbox(image.convert("RGB"), self.size)
        return (pixels.float() / 255).to(self.dtype), index


class SyntheticCocoVal(Dataset):
    """`samples` random 640x480 images (a fixed pool of 8, seeded), letterboxed; an empty ground truth."""

    WIDTH, HEIGHT, POOL = 640, 480, 8

    def __init__(self, samples: int, size: int, num_classes: int, seed: int, fp16: bool) -> None:
        self.samples, self.size, self.dtype = samples, size, torch.float16 if fp16 else torch.float32
        generator = torch.Generator().manual_seed(seed)
        self.pool = torch.randint(0, 256, (self.POOL, self.HEIGHT, self.WIDTH, 3), dtype=torch.uint8,
                                  generator=generator)
        self.images = [{"id": index + 1, "width": self.WIDTH, "height": self.HEIGHT} for index in range(samples)]
        self.categories = list(range(1, num_classes + 1))
        self.ground_truth = {"images": self.images, "annotations": [],
                             "categories": [{"id": c} for c in self.categories]}

    def __len__(self) -> int:
        return self.samples

    def original_size(self, index: int) -> tuple[int, int]:
        return self.WIDTH, self.HEIGHT

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        from PIL import Image

        pixels = letterbox(Image.fromarray(self.pool[index % self.POOL].numpy()), self.size)
        return (pixels.float() / 255).to(self.dtype), index
