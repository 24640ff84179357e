"""ImageNet in ImageFolder layout, read with PIL, and a synthetic stand-in.

Samples are (uint8 CHW image tensor, class index); the case normalises on the device.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch.utils.data import Dataset

from case_runners.cases.resnet50.data import check_data_dir, is_image

if TYPE_CHECKING:  # PIL is imported where an image is read
    from PIL import Image

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def eval_resize(image_size: int) -> int:
    """Shorter side before the centre crop: 256 for a 224 crop."""
    return int(round(image_size * 256 / 224))


class RandomResizedCrop:
    """Crop a random area (8%..100%) and aspect ratio (3/4..4/3), resized to size x size."""

    def __init__(self, size: int, scale: tuple[float, float] = (0.08, 1.0),
                 ratio: tuple[float, float] = (3 / 4, 4 / 3)) -> None:
        self.size, self.scale, self.log_ratio = size, scale, (math.log(ratio[0]), math.log(ratio[1]))

    def box(self, width: int, height: int) -> tuple[int, int, int, int]:
        area = width * height
        for _ in range(10):
            target = area * random.uniform(*self.scale)
            aspect = math.exp(random.uniform(*self.log_ratio))
            w, h = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))
            if 0 < w <= width and 0 < h <= height:
                left, top = random.randint(0, width - w), random.randint(0, height - h)
                return left, top, left + w, top + h
        side = min(width, height)  # fallback: the central square
        left, top = (width - side) // 2, (height - side) // 2
        return left, top, left + side, top + side

    def __call__(self, img: Image.Image) -> Image.Image:
        from PIL import Image

        return img.resize((self.size, self.size), Image.Resampling.BILINEAR, box=self.box(*img.size))


class ResizeCenterCrop:
    def __init__(self, resize: int, crop: int) -> None:
        self.resize, self.crop = resize, crop

    def __call__(self, img: Image.Image) -> Image.Image:
        from PIL import Image

        w, h = img.size
        scale = self.resize / min(w, h)
        w, h = max(self.crop, round(w * scale)), max(self.crop, round(h * scale))
        img = img.resize((w, h), Image.Resampling.BILINEAR)
        left, top = (w - self.crop) // 2, (h - self.crop) // 2
        return img.crop((left, top, left + self.crop, top + self.crop))


def train_transform(image_size: int) -> Callable[[Image.Image], Image.Image]:
    crop = RandomResizedCrop(image_size)

    def apply(img: Image.Image) -> Image.Image:
        img = crop(img)
        if random.random() < 0.5:
            from PIL import Image

            img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        return img

    return apply


def eval_transform(image_size: int) -> Callable[[Image.Image], Image.Image]:
    return ResizeCenterCrop(eval_resize(image_size), image_size)


def to_uint8_chw(img: Image.Image) -> torch.Tensor:
    return torch.from_numpy(np.array(img, dtype=np.uint8)).permute(2, 0, 1).contiguous()


def scan(split_dir: Path) -> tuple[list[str], list[tuple[str, int]]]:
    """(sorted class names, [(image path, class index)])."""
    classes = sorted(e.name for e in os.scandir(split_dir) if e.is_dir() and not e.name.startswith("."))
    samples = []
    for index, name in enumerate(classes):
        folder = split_dir / name
        samples += [(str(folder / f), index) for f in sorted(os.listdir(folder)) if is_image(f)]
    return classes, samples


class ImageFolder(Dataset):
    def __init__(self, split_dir: Path, transform: Callable[[Image.Image], Image.Image]) -> None:
        self.classes, self.samples = scan(Path(split_dir))
        if not self.samples:
            raise ValueError(f"{split_dir}: no images found")
        self.transform = transform

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        from PIL import Image

        path, label = self.samples[index]
        with Image.open(path) as img:
            return to_uint8_chw(self.transform(img.convert("RGB"))), label


class SyntheticImages(Dataset):
    """`length` samples cycling over a small pool of fixed random images: no I/O, no decoding."""

    def __init__(self, length: int, image_size: int, num_classes: int, seed: int, pool: int = 64) -> None:
        g = torch.Generator().manual_seed(seed)
        self.images = torch.randint(0, 256, (pool, 3, image_size, image_size), dtype=torch.uint8, generator=g)
        self.length, self.num_classes = length, num_classes

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return self.images[index % len(self.images)], index % self.num_classes


def build_datasets(data_dir: str | None, params: dict) -> tuple[Dataset, Dataset]:
    size, classes = int(params["image_size"]), int(params["num_classes"])
    if params["synthetic"]:
        n = int(params["synthetic_samples"])
        return (SyntheticImages(n, size, classes, int(params["seed"])),
                SyntheticImages(max(1, n // 10), size, classes, int(params["seed"]) + 1))
    problems = check_data_dir(data_dir, params)
    if problems:
        raise ValueError("; ".join(problems))
    assert data_dir is not None  # without synthetic, check_data_dir names a missing data_dir
    root = Path(data_dir)
    return (ImageFolder(root / "train", train_transform(size)), ImageFolder(root / "val", eval_transform(size)))
