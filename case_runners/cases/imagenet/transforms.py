"""The recipes' image transforms on Pillow images: random resized crop and flip, eval resize and centre crop, and
RandAugment (Cubuk et al. 2019, "RandAugment: Practical automated data augmentation with a reduced search space":
`num_ops` operations drawn uniformly from 14, each at one global magnitude of `bins` - 1 levels)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:  # PIL is imported where an image is transformed
    from PIL import Image

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)

Transform = Callable[["Image.Image"], "Image.Image"]


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


# RandAugment's operations: (name, the largest magnitude, whether it takes a random sign). A level m of bins - 1
# maps to largest * m / (bins - 1); posterize and solarize count down from the identity (8 bits, threshold 256).
RANDAUGMENT_OPS: tuple[tuple[str, float, bool], ...] = (
    ("identity", 0.0, False), ("shear_x", 0.3, True), ("shear_y", 0.3, True), ("translate_x", 150 / 331, True),
    ("translate_y", 150 / 331, True), ("rotate", 30.0, True), ("brightness", 0.9, True), ("color", 0.9, True),
    ("contrast", 0.9, True), ("sharpness", 0.9, True), ("posterize", 4.0, False), ("solarize", 256.0, False),
    ("autocontrast", 0.0, False), ("equalize", 0.0, False))


def apply_op(img: Image.Image, name: str, value: float) -> Image.Image:
    """One RandAugment operation at `value` (a shear factor, a fraction of the side, degrees, an enhance delta, bits
    removed, a threshold drop); the area an affine operation uncovers is black."""
    from PIL import Image, ImageEnhance, ImageOps

    w, h = img.size
    affine = {"shear_x": (1, value, 0, 0, 1, 0), "shear_y": (1, 0, 0, value, 1, 0),
              "translate_x": (1, 0, value * w, 0, 1, 0), "translate_y": (1, 0, 0, 0, 1, value * h)}
    enhance = {"brightness": ImageEnhance.Brightness, "color": ImageEnhance.Color,
               "contrast": ImageEnhance.Contrast, "sharpness": ImageEnhance.Sharpness}
    if name in affine:
        return img.transform(img.size, Image.Transform.AFFINE, affine[name], Image.Resampling.NEAREST)
    if name == "rotate":
        return img.rotate(value, Image.Resampling.NEAREST)
    if name in enhance:
        return enhance[name](img).enhance(1.0 + value)
    if name == "posterize":
        return ImageOps.posterize(img, 8 - int(value))
    if name == "solarize":
        return ImageOps.solarize(img, 256 - int(value))
    if name == "autocontrast":
        return ImageOps.autocontrast(img)
    if name == "equalize":
        return ImageOps.equalize(img)
    return img


class RandAugment:
    """`num_ops` random operations at level `magnitude` of `bins` - 1 (torchvision's and FlagPerf's defaults: 2 ops,
    magnitude 9 of 30)."""

    def __init__(self, num_ops: int = 2, magnitude: int = 9, bins: int = 31) -> None:
        if not 0 <= magnitude < bins:
            raise ValueError(f"RandAugment magnitude {magnitude} is not in 0..{bins - 1}")
        self.num_ops, self.level = num_ops, magnitude / (bins - 1)

    def __call__(self, img: Image.Image) -> Image.Image:
        for _ in range(self.num_ops):
            name, largest, signed = random.choice(RANDAUGMENT_OPS)
            value = largest * self.level
            if name in ("posterize", "solarize"):
                value = round(value)
            if signed and random.random() < 0.5:
                value = -value
            img = apply_op(img, name, value)
        return img


def train_transform(image_size: int, randaugment: RandAugment | None = None, scale_min: float = 0.08,
                    flip: float = 0.5) -> Transform:
    """Random resized crop (scale_min..100 % of the area), horizontal flip with probability `flip`, then RandAugment
    when given."""
    crop = RandomResizedCrop(image_size, scale=(scale_min, 1.0))

    def apply(img: Image.Image) -> Image.Image:
        img = crop(img)
        if random.random() < flip:
            from PIL import Image

            img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        return randaugment(img) if randaugment is not None else img

    return apply


def eval_transform(image_size: int, resize: int = 0) -> Transform:
    """Resize the shorter side to `resize` (0: image_size * 256/224), then centre-crop image_size."""
    return ResizeCenterCrop(resize or eval_resize(image_size), image_size)


def to_uint8_chw(img: Image.Image) -> torch.Tensor:
    return torch.from_numpy(np.array(img, dtype=np.uint8)).permute(2, 0, 1).contiguous()
