"""Format check for detr data (standard library only).

data_dir is COCO 2017 as FlagPerf lays it out (training/benchmarks/detr/README.md):
    <data_dir>/train2017/<image>.jpg                     the training images
    <data_dir>/val2017/<image>.jpg                       the validation images
    <data_dir>/annotations/instances_train2017.json      their boxes (COCO's object detection format)
    <data_dir>/annotations/instances_val2017.json
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SPLITS = ("train", "val")
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")
LAYOUT = ("<data_dir>/{train2017,val2017}/<image>.jpg and <data_dir>/annotations/instances_{train,val}2017.json "
          "(COCO 2017 as cocodataset.org unpacks it)")
ANNOTATION_KEYS = ("images", "annotations", "categories")
PARSE_LIMIT = 64 * 2**20  # annotation files up to this size are parsed whole (val's is 25 MB, train's 448 MB)


def image_dir(root: Path, split: str) -> Path:
    return root / f"{split}2017"


def annotation_file(root: Path, split: str) -> Path:
    return root / "annotations" / f"instances_{split}2017.json"


def first_image(directory: Path) -> str | None:
    with os.scandir(directory) as it:
        return next((e.name for e in it if e.is_file() and e.name.lower().endswith(IMAGE_EXTENSIONS)), None)


def check_annotations(path: Path, images: Path) -> list[str]:
    """What is wrong with one instances_*.json: missing, not a JSON object, or (when small enough to read here)
    without COCO's keys or naming an image file its folder lacks."""
    if not path.is_file():
        return [f"{path}: missing; expected {LAYOUT}"]
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(64).lstrip()
    if not head.startswith(b"{"):
        return [f"{path}: not a JSON object (COCO's instances file starts with '{{')"]
    if size > PARSE_LIMIT:  # the big training file: its head is checked, the loader reads the rest
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        return [f"{path}: not valid JSON ({e})"]
    missing = [k for k in ANNOTATION_KEYS if not isinstance(data.get(k), list)]
    if missing:
        return [f"{path}: no {', '.join(repr(k) for k in missing)} list; expected COCO's object detection format "
                f"with keys {', '.join(ANNOTATION_KEYS)}"]
    if not data["images"]:
        return [f"{path}: 'images' is empty"]
    name = data["images"][0].get("file_name")
    if not name or not (images / name).is_file():
        return [f"{path}: its first image {name!r} is not in {images}; expected {LAYOUT}"]
    return []


def check_data_dir(data_dir: str | None, params: dict) -> list[str]:
    if params.get("synthetic"):
        return []
    if not data_dir:
        return [f"detr needs data_dir laid out as {LAYOUT}, or synthetic: true"]
    root = Path(data_dir)
    if not root.is_dir():
        return [f"{root}: not a directory; expected {LAYOUT}"]
    problems = []
    for split in SPLITS:
        images = image_dir(root, split)
        if not images.is_dir():
            problems.append(f"{images}: missing; expected {LAYOUT}")
            continue
        if first_image(images) is None:
            problems.append(f"{images}: no image files ({', '.join(IMAGE_EXTENSIONS)}); expected {LAYOUT}")
            continue
        problems += check_annotations(annotation_file(root, split), images)
    return problems
