"""ImageNet in ImageFolder layout, read with Pillow, and a synthetic stand-in.

Samples are (uint8 CHW image tensor, class index); the case normalises on the device.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from torch.utils.data import Dataset

from case_runners.cases.imagenet.data import check_data_dir, is_image
from case_runners.cases.imagenet.transforms import Transform, eval_transform, to_uint8_chw, train_transform


def scan(split_dir: Path) -> tuple[list[str], list[tuple[str, int]]]:
    """(sorted class names, [(image path, class index)])."""
    classes = sorted(e.name for e in os.scandir(split_dir) if e.is_dir() and not e.name.startswith("."))
    samples = []
    for index, name in enumerate(classes):
        folder = split_dir / name
        samples += [(str(folder / f), index) for f in sorted(os.listdir(folder)) if is_image(f)]
    return classes, samples


class ImageFolder(Dataset):
    def __init__(self, split_dir: Path, transform: Transform) -> None:
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


def build_datasets(data_dir: str | None, params: dict, train: Transform | None = None,
                   val: Transform | None = None, eval_size: int = 0) -> tuple[Dataset, Dataset]:
    """(train, val) of params' image_size, num_classes, synthetic (synthetic_samples, seed); the transforms default
    to resnet50's (random resized crop and flip; resize to image_size * 256/224 and centre crop). eval_size: the
    synthetic eval images' side when it is not image_size."""
    size, classes = int(params["image_size"]), int(params["num_classes"])
    if params["synthetic"]:
        n = int(params["synthetic_samples"])
        return (SyntheticImages(n, size, classes, int(params["seed"])),
                SyntheticImages(max(1, n // 10), eval_size or size, classes, int(params["seed"]) + 1))
    problems = check_data_dir(data_dir, params)
    if problems:
        raise ValueError("; ".join(problems))
    assert data_dir is not None  # without synthetic, check_data_dir names a missing data_dir
    root = Path(data_dir)
    return (ImageFolder(root / "train", train or train_transform(size)),
            ImageFolder(root / "val", val or eval_transform(size)))
