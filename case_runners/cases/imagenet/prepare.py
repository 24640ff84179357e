"""A small real dataset in ImageNet's layout: scikit-learn's 8x8 handwritten digits (1,797 images, 10 classes, shipped
with scikit-learn) rendered as upscaled JPEG files in class folders, split into train/ and val/ per class by a
seeded shuffle. The image classifiers train on it through their whole data path (JPEG, Pillow, transforms)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from case_runners.core.errors import PerfplayError

DEFAULT_SIZE = 32
DEFAULT_VAL_FRACTION = 0.2
DEFAULT_SEED = 0


def class_name(digit: int) -> str:
    return f"digit_{digit}"


def render(pixels: np.ndarray, size: int) -> object:
    """An 8x8 image of 0..16 as an RGB Pillow image of size x size (bicubic), dark digits on white."""
    from PIL import Image

    gray = (255 - np.asarray(pixels, dtype=np.float64).reshape(8, 8) * (255 / 16)).round().astype(np.uint8)
    return Image.fromarray(gray).resize((size, size), Image.Resampling.BICUBIC).convert("RGB")


def prepare_images(out: str | Path, size: int = DEFAULT_SIZE, val_fraction: float = DEFAULT_VAL_FRACTION,
                   seed: int = DEFAULT_SEED) -> dict[str, int]:
    """Write <out>/{train,val}/digit_<d>/<index>.JPEG (written beside out, then renamed into place); the images per
    split. PerfplayError for bad options or an out that exists and is not empty."""
    from sklearn.datasets import load_digits

    out = Path(out)
    if not 8 <= size <= 1024:
        raise PerfplayError(f"--size {size}: expected 8..1024 pixels")
    if not 0 < val_fraction < 1:
        raise PerfplayError(f"--val-fraction {val_fraction}: expected a fraction between 0 and 1 (exclusive)")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise PerfplayError(f"{out}: exists and is not an empty directory; give a new one")
    digits = load_digits()
    rng = np.random.default_rng(seed)
    partial = out.parent / f".{out.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    counts = {"train": 0, "val": 0}
    for digit in range(10):
        indices = rng.permutation(np.flatnonzero(digits.target == digit))
        held = max(1, round(len(indices) * val_fraction))
        for split, chosen in (("val", indices[:held]), ("train", indices[held:])):
            folder = partial / split / class_name(digit)
            folder.mkdir(parents=True)
            for index in chosen:
                render(digits.images[index], size).save(folder / f"{index:04d}.JPEG", format="JPEG",  # type: ignore[attr-defined]
                                                         quality=95)
            counts[split] += len(chosen)
    if out.exists():
        out.rmdir()
    partial.rename(out)
    return counts
