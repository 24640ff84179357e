"""yolov5's detections from the model's decoded boxes, as FlagPerf's forward.py and utils.py non_max_suppression
make them (best class only, no merge): candidates with objectness > conf_thres, score = objectness x class
probability, kept when > conf_thres, the 30,000 best suppressed class by class at iou_thres (greedy, in plain torch:
torchvision.ops.nms cannot load here), at most max_det an image; boxes scaled back from the letterbox to the original
image. Their mAP is pycocotools' (the detr case's coco_map)."""

from __future__ import annotations

from typing import Any

import torch

from case_runners.cases.detr.evaluator import coco_map
from case_runners.cases.yolov5.dataset import letterbox_geometry

MAX_NMS = 30_000  # boxes into the suppression, the best first (FlagPerf's max_nms)
MAX_WH = 7680  # the class offset that keeps boxes of different classes apart (FlagPerf's max_wh)


def box_iou(box: torch.Tensor, boxes: torch.Tensor) -> torch.Tensor:
    """IoU of one xyxy box with each of boxes (n, 4)."""
    top_left = torch.maximum(box[:2], boxes[:, :2])
    bottom_right = torch.minimum(box[2:], boxes[:, 2:])
    inter = (bottom_right - top_left).clamp(min=0).prod(1)
    area = (box[2:] - box[:2]).prod()
    areas = (boxes[:, 2:] - boxes[:, :2]).prod(1)
    return inter / (area + areas - inter + 1e-7)


def nms(boxes: torch.Tensor, scores: torch.Tensor, iou_thres: float, max_det: int) -> torch.Tensor:
    """Indices of the boxes greedy non-maximum suppression keeps, the best first (torchvision.ops.nms's result, cut
    at max_det): each box in score order is kept unless it overlaps a kept one by more than iou_thres."""
    order = scores.argsort(descending=True)
    keep: list[torch.Tensor] = []
    while order.numel() and len(keep) < max_det:
        best = order[0]
        keep.append(best)
        rest = order[1:]
        order = rest[box_iou(boxes[best], boxes[rest]) <= iou_thres]
    return torch.stack(keep) if keep else torch.zeros(0, dtype=torch.long)


def select(prediction: torch.Tensor, conf_thres: float, iou_thres: float, max_det: int) -> torch.Tensor:
    """One image's (boxes, 5 + classes) prediction to its detections (n, 6): x1, y1, x2, y2, score, class."""
    x = prediction[prediction[:, 4] > conf_thres].float()
    if not len(x):
        return torch.zeros(0, 6)
    scores, classes = (x[:, 5:] * x[:, 4:5]).max(1)
    xy, wh = x[:, :2], x[:, 2:4]
    found = torch.cat((xy - wh / 2, xy + wh / 2, scores[:, None], classes[:, None].float()), 1)[scores > conf_thres]
    found = found[found[:, 4].argsort(descending=True)[:MAX_NMS]]
    kept = nms(found[:, :4] + found[:, 5:6] * MAX_WH, found[:, 4], iou_thres, max_det)
    return found[kept]


def to_original(boxes: torch.Tensor, width: int, height: int, size: int) -> torch.Tensor:
    """xyxy boxes on the letterboxed image to pixels of the original, clipped to it."""
    gain, new_w, new_h, _, _ = letterbox_geometry(width, height, size)
    pad = torch.tensor([(size - width * gain) / 2, (size - height * gain) / 2] * 2)
    out = (boxes - pad) / gain
    out[:, 0::2] = out[:, 0::2].clamp(0, width)
    out[:, 1::2] = out[:, 1::2].clamp(0, height)
    return out


class Detections:
    """A forward pass's evaluator (forward_loop's contract: (correct, predictions) a batch): each image's detections
    as COCO results, kept by image (a repeated pass replaces them); mean_ap() scores them all."""

    def __init__(self, dataset: Any, config: dict[str, Any]) -> None:
        self.dataset, self.size = dataset, int(config["image_size"])
        self.conf, self.iou, self.max_det = float(config["conf_thres"]), float(config["iou_thres"]), int(
            config["max_det"])
        self.results: dict[int, list[dict]] = {}

    def __call__(self, outputs: list[torch.Tensor], indices: torch.Tensor) -> tuple[int, list[int]]:
        most_confident = []
        for prediction, index in zip(outputs[0], indices.tolist(), strict=True):
            found = select(prediction, self.conf, self.iou, self.max_det)
            width, height = self.dataset.original_size(index)
            boxes = to_original(found[:, :4], width, height, self.size)
            categories = [self.dataset.categories[int(c)] for c in found[:, 5].tolist()]
            image_id = self.dataset.images[index]["id"]
            self.results[index] = [
                {"image_id": image_id, "category_id": category, "score": score,
                 "bbox": [x1, y1, x2 - x1, y2 - y1]}
                for (x1, y1, x2, y2), score, category in zip(boxes.tolist(), found[:, 4].tolist(), categories,
                                                             strict=True)]
            most_confident.append(categories[0] if categories else -1)
        return 0, most_confident

    def mean_ap(self) -> float:
        """COCOeval's bbox mAP@[.5:.95] over the images seen (0 without detections or ground truth)."""
        ids = [self.dataset.images[index]["id"] for index in self.results]
        return coco_map(self.dataset.ground_truth, [r for found in self.results.values() for r in found], ids)["mAP"]
