"""Format check for ImageNet data, shared by the image classification cases (standard library only: the host data
check imports it, through each case's data.py, before torch is on the path).

data_dir is an ImageNet tree in ImageFolder layout:
    <data_dir>/train/<class>/<image>.JPEG   one folder per class (e.g. the wnid n01440764)
    <data_dir>/val/<class>/<image>.JPEG     the same class folders
The inference cases (resnet50, vit_l_16, swin_transformer) read val/ only; data_dir may also be that val folder itself
(FlagPerf's inference configs point at .../imagenet/val):
    <data_dir>/<class>/<image>.JPEG
"""

from __future__ import annotations

import os
from pathlib import Path

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
SPLITS = ("train", "val")
LAYOUT = "<data_dir>/{train,val}/<class>/<image>.JPEG (ImageFolder: one folder per class, e.g. n01440764)"
VAL_LAYOUT = ("<data_dir>/val/<class>/<image>.JPEG, or data_dir the val folder itself: <data_dir>/<class>/<image>.JPEG "
              "(ImageFolder: one folder per class, e.g. n01440764)")


def is_image(name: str) -> bool:
    return name.lower().endswith(IMAGE_EXTENSIONS)


def class_dirs(split_dir: Path) -> list[str]:
    with os.scandir(split_dir) as it:
        return sorted(e.name for e in it if e.is_dir() and not e.name.startswith("."))


def first_image(directory: Path) -> str | None:
    with os.scandir(directory) as it:
        return next((e.name for e in it if e.is_file() and is_image(e.name)), None)


def check_split(root: Path, split: str, layout: str = LAYOUT) -> tuple[list[str], list[str]]:
    """(class names, problems) of one split directory; `layout` is the expected layout the problems name."""
    split_dir = root / split
    if not split_dir.is_dir():
        return [], [f"{split_dir}: missing; expected {layout}"]
    classes = class_dirs(split_dir)
    if not classes:
        loose = first_image(split_dir)
        hint = (f" (it holds images such as {loose} directly: sort them into one folder per class)"
                if loose else "")
        return [], [f"{split_dir}: no class folders{hint}; expected {layout}"]
    if first_image(split_dir / classes[0]) is None:
        return classes, [f"{split_dir / classes[0]}: no image files ({', '.join(IMAGE_EXTENSIONS)}); "
                         f"expected {layout}"]
    return classes, []


def check_data_dir(data_dir: str | None, params: dict) -> list[str]:
    if params.get("synthetic"):
        return []
    if not data_dir:
        return [f"this case needs data_dir laid out as {LAYOUT}, or synthetic: true"]
    root = Path(data_dir)
    if not root.is_dir():
        return [f"{root}: not a directory; expected {LAYOUT}"]
    (train, train_problems), (val, val_problems) = (check_split(root, s) for s in SPLITS)
    problems = train_problems + val_problems
    if train and val and train != val:
        only = sorted(set(train) ^ set(val))[:5]
        problems.append(f"{root}: train/ and val/ have different class folders (e.g. {', '.join(only)})")
    expected = params.get("num_classes")
    if train and expected is not None and len(train) != int(expected):
        problems.append(f"{root / 'train'}: {len(train)} class folders but num_classes is {expected}; "
                        f"set num_classes: {len(train)} or fix the folder")
    return problems


def inference_split(data_dir: str) -> Path:
    """The folder the inference case reads: <data_dir>/val when there is one, else data_dir itself."""
    root = Path(data_dir)
    return root / "val" if (root / "val").is_dir() else root


def check_inference_data_dir(data_dir: str, params: dict) -> list[str]:
    """The inference case's data dir: val/ in ImageFolder layout, or that val folder itself."""
    root = Path(data_dir)
    if not root.is_dir():
        return [f"{root}: not a directory; expected {VAL_LAYOUT}"]
    split = inference_split(data_dir)
    if split == root and (root / "train").is_dir():
        return [f"{root / 'val'}: missing; expected {VAL_LAYOUT}"]
    classes, problems = check_split(split.parent, split.name, VAL_LAYOUT)
    expected = params.get("num_classes")
    if classes and expected is not None and len(classes) > int(expected):
        problems.append(f"{split}: {len(classes)} class folders but the model has {expected} classes")
    return problems
