"""COCO 2017 detection data read with Pillow and DETR's transforms, a synthetic stand-in, and the padding collate.

A sample is (uint8 CHW image, target): target holds `boxes` (normalised cx, cy, w, h, as DETR's loss takes them),
`class_labels` (COCO category ids), `image_id` and `orig_size` (h, w: where the evaluator scales boxes back to).
The case normalises images on the device and zeroes the padding there.

The transforms follow FlagPerf's detr (training/benchmarks/detr/pytorch/dataloaders/coco.py make_coco_transforms):
training flips half the images, then either resizes the shorter side to one of `train_scales` (the longer at most
`max_size`) or resizes to 400/500/600, crops a random region of 384..600 px and resizes to one of `train_scales`;
evaluation resizes the shorter side to `eval_size`. Crowd boxes are left out of the targets (kept for COCOeval).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.utils.data import Dataset

from case_runners.cases.detr.data import annotation_file, check_data_dir, image_dir

if TYPE_CHECKING:  # PIL is imported where an image is read
    from PIL import Image

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
# The crop branch's sizes as shares of the largest training scale (800): resize to 400/500/600, crop 384..600.
CROP_RESIZE = (0.5, 0.625, 0.75)
CROP_RANGE = (0.48, 0.75)

Target = dict[str, Any]
Transform = Callable[["Image.Image", torch.Tensor], tuple["Image.Image", torch.Tensor]]  # boxes: xyxy pixels


def resized_shape(width: int, height: int, size: int, max_size: int | None) -> tuple[int, int]:
    """(width, height) with the shorter side `size`, lowered so that the longer is at most max_size."""
    short, long = min(width, height), max(width, height)
    if max_size and long / short * size > max_size:
        size = int(round(max_size * short / long))
    if width < height:
        return size, int(size * height / width)
    return int(size * width / height), size


def resize(img: Image.Image, boxes: torch.Tensor, size: int, max_size: int | None) -> tuple[Image.Image, torch.Tensor]:
    from PIL import Image

    w, h = resized_shape(*img.size, size, max_size)
    scale = torch.tensor([w / img.width, h / img.height] * 2)
    return img.resize((w, h), Image.Resampling.BILINEAR), boxes * scale


def hflip(img: Image.Image, boxes: torch.Tensor) -> tuple[Image.Image, torch.Tensor]:
    from PIL import Image

    flipped = boxes[:, [2, 1, 0, 3]] * torch.tensor([-1, 1, -1, 1]) + torch.tensor([img.width, 0, img.width, 0])
    return img.transpose(Image.Transpose.FLIP_LEFT_RIGHT), flipped


def random_crop(img: Image.Image, boxes: torch.Tensor, low: int, high: int) -> tuple[Image.Image, torch.Tensor]:
    """A random region low..high px on each side (at most the image), boxes clipped to it."""
    w = random.randint(min(low, img.width), min(img.width, high))
    h = random.randint(min(low, img.height), min(img.height, high))
    left, top = random.randint(0, img.width - w), random.randint(0, img.height - h)
    shifted = boxes - torch.tensor([left, top, left, top], dtype=boxes.dtype)
    clipped = torch.minimum(shifted.clamp(min=0), torch.tensor([w, h, w, h], dtype=boxes.dtype))
    return img.crop((left, top, left + w, top + h)), clipped


def train_transform(scales: Sequence[int], max_size: int) -> Transform:
    top = max(scales)
    crop_sizes = [int(round(top * r)) for r in CROP_RESIZE]
    low, high = (int(round(top * r)) for r in CROP_RANGE)

    def apply(img: Image.Image, boxes: torch.Tensor) -> tuple[Image.Image, torch.Tensor]:
        if random.random() < 0.5:
            img, boxes = hflip(img, boxes)
        if random.random() < 0.5:
            img, boxes = resize(img, boxes, random.choice(crop_sizes), None)
            img, boxes = random_crop(img, boxes, low, high)
        return resize(img, boxes, random.choice(list(scales)), max_size)

    return apply


def eval_transform(size: int, max_size: int) -> Transform:
    return lambda img, boxes: resize(img, boxes, size, max_size)


def to_cxcywh(boxes: torch.Tensor, width: int, height: int) -> torch.Tensor:
    """xyxy pixels to cx, cy, w, h as shares of the image."""
    x0, y0, x1, y1 = boxes.unbind(-1)
    return torch.stack([(x0 + x1) / 2 / width, (y0 + y1) / 2 / height, (x1 - x0) / width, (y1 - y0) / height], -1)


def load_annotations(path: Path) -> dict:
    with path.open(encoding="utf-8") as f:
        return json.load(f)


class CocoDetection(Dataset):
    """COCO's images in `folder` with the boxes of `coco` (an instances_*.json, loaded): every image, sorted by id,
    those without boxes included (as torchvision's CocoDetection, which FlagPerf reads with)."""

    def __init__(self, folder: Path, coco: dict, transform: Transform) -> None:
        self.folder, self.coco, self.transform = Path(folder), coco, transform
        self.images = sorted(coco["images"], key=lambda im: im["id"])
        if not self.images:
            raise ValueError(f"{folder}: its annotations list no images")
        self.boxes: dict[int, list[dict]] = {im["id"]: [] for im in self.images}
        for ann in coco["annotations"]:
            if not ann.get("iscrowd", 0) and ann["image_id"] in self.boxes:
                self.boxes[ann["image_id"]].append(ann)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, Target]:
        from PIL import Image

        info = self.images[index]
        anns = self.boxes[info["id"]]
        with Image.open(self.folder / info["file_name"]) as raw:
            img = raw.convert("RGB")
        w, h = img.size
        boxes = torch.tensor([a["bbox"] for a in anns], dtype=torch.float32).reshape(-1, 4)
        boxes[:, 2:] += boxes[:, :2]  # COCO's x, y, w, h to x0, y0, x1, y1
        boxes = torch.minimum(boxes.clamp(min=0), torch.tensor([w, h, w, h], dtype=torch.float32))
        labels = torch.tensor([a["category_id"] for a in anns], dtype=torch.int64)
        img, boxes = self.transform(img, boxes)
        keep = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])  # crops leave empty boxes
        image = torch.from_numpy(np.array(img, dtype=np.uint8)).permute(2, 0, 1).contiguous()
        return image, {"boxes": to_cxcywh(boxes[keep], img.width, img.height), "class_labels": labels[keep],
                       "image_id": torch.tensor(info["id"]), "orig_size": torch.tensor([h, w])}


class SyntheticCoco(Dataset):
    """`length` samples of height x width cycling over a small pool of random images, each with 1..8 random boxes;
    `coco` is that pool's ground truth in COCO's format (image ids 1..pool), so the evaluator runs as on COCO."""

    def __init__(self, length: int, height: int, width: int, num_classes: int, seed: int, pool: int = 16) -> None:
        g = torch.Generator().manual_seed(seed)
        self.images = torch.randint(0, 256, (pool, 3, height, width), dtype=torch.uint8, generator=g)
        self.length, self.targets = length, []
        images: list[dict] = []
        annotations: list[dict] = []
        for i in range(pool):
            n = int(torch.randint(1, 9, (), generator=g))
            centre = torch.rand(n, 2, generator=g) * 0.6 + 0.2
            size = torch.rand(n, 2, generator=g) * 0.3 + 0.05
            boxes = torch.cat([centre, size], 1)
            labels = torch.randint(1, num_classes, (n,), generator=g)
            self.targets.append({"boxes": boxes, "class_labels": labels, "image_id": torch.tensor(i + 1),
                                 "orig_size": torch.tensor([height, width])})
            images.append({"id": i + 1, "height": height, "width": width, "file_name": f"{i + 1}.jpg"})
            for (cx, cy, bw, bh), label in zip(boxes.tolist(), labels.tolist(), strict=True):
                bbox = [(cx - bw / 2) * width, (cy - bh / 2) * height, bw * width, bh * height]
                annotations.append({"id": len(annotations) + 1, "image_id": i + 1, "category_id": label,
                                    "bbox": bbox, "area": bbox[2] * bbox[3], "iscrowd": 0})
        self.coco = {"images": images, "annotations": annotations,
                     "categories": [{"id": c} for c in range(1, num_classes)]}

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, Target]:
        i = index % len(self.images)
        return self.images[i], self.targets[i]


def collate(batch: list[tuple[torch.Tensor, Target]]) -> tuple[torch.Tensor, torch.Tensor, list[Target]]:
    """Images zero-padded at the bottom and right to the batch's largest height and width, the pixel mask (True on
    an image's own pixels) and the targets."""
    height = max(img.shape[1] for img, _ in batch)
    width = max(img.shape[2] for img, _ in batch)
    images = torch.zeros(len(batch), 3, height, width, dtype=torch.uint8)
    mask = torch.zeros(len(batch), height, width, dtype=torch.bool)
    for i, (img, _) in enumerate(batch):
        images[i, :, : img.shape[1], : img.shape[2]] = img
        mask[i, : img.shape[1], : img.shape[2]] = True
    return images, mask, [t for _, t in batch]


def standard_shape(eval_size: int) -> tuple[int, int]:
    """The shape synthetic images have and FLOPs are counted at: COCO's usual 640x480 at the evaluation size."""
    width, height = resized_shape(640, 480, eval_size, None)
    return height, width


def build_datasets(data_dir: str | None, params: dict) -> tuple[Dataset, Dataset, dict]:
    """(train, val, the val split's ground truth in COCO's format)."""
    scales, max_size, eval_size = [int(s) for s in params["train_scales"]], int(params["max_size"]), \
        int(params["eval_size"])
    if params["synthetic"]:
        n, seed, classes = int(params["synthetic_samples"]), int(params["seed"]), int(params["num_classes"])
        height, width = standard_shape(eval_size)
        val = SyntheticCoco(max(1, n // 10), height, width, classes, seed + 1)
        return SyntheticCoco(n, height, width, classes, seed), val, val.coco
    problems = check_data_dir(data_dir, params)
    if problems:
        raise ValueError("; ".join(problems))
    assert data_dir is not None  # without synthetic, check_data_dir names a missing data_dir
    root = Path(data_dir)
    val_coco = load_annotations(annotation_file(root, "val"))
    train = CocoDetection(image_dir(root, "train"), load_annotations(annotation_file(root, "train")),
                          train_transform(scales, max_size))
    return train, CocoDetection(image_dir(root, "val"), val_coco, eval_transform(eval_size, max_size)), val_coco
