"""Format check for yolov5 data (standard library only): COCO 2017's validation half, as FlagPerf's yolov5 inference
case reads it (inference/benchmarks/yolov5/pytorch/dataloader.py):
    <data_dir>/val2017/<image>.jpg                       the 5,000 validation images
    <data_dir>/annotations/instances_val2017.json        their boxes (COCO's object detection format)
"""

from __future__ import annotations

from pathlib import Path

from case_runners.cases.detr.data import IMAGE_EXTENSIONS, annotation_file, check_annotations, first_image, image_dir

SPLIT = "val"
VAL_LAYOUT = "<data_dir>/val2017/<image>.jpg and <data_dir>/annotations/instances_val2017.json (COCO 2017)"


def check_inference_data_dir(data_dir: str | None, params: dict) -> list[str]:
    if not data_dir:
        return []  # synthetic images (throughput only)
    root = Path(data_dir)
    if not root.is_dir():
        return [f"{root}: not a directory; expected {VAL_LAYOUT}"]
    images = image_dir(root, SPLIT)
    if not images.is_dir():
        return [f"{images}: missing; expected {VAL_LAYOUT}"]
    if first_image(images) is None:
        return [f"{images}: no image files ({', '.join(IMAGE_EXTENSIONS)}); expected {VAL_LAYOUT}"]
    annotations = annotation_file(root, SPLIT)
    if not annotations.is_file():
        return [f"{annotations}: missing; expected {VAL_LAYOUT}"]
    return check_annotations(annotations, images)


check_data_dir = check_inference_data_dir  # the case has no training part: its data is the inference data
