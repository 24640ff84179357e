"""DETR's outputs as COCO detections, and their mAP from pycocotools (COCOeval, bbox, AP@[.5:.95])."""

from __future__ import annotations

import contextlib
import io

import torch

# COCOeval's stats in order (the first twelve of its summary); the case reports the first three.
STATS = ("mAP", "AP50", "AP75")


def detections(logits: torch.Tensor, pred_boxes: torch.Tensor, image_ids: list[int],
               orig_sizes: torch.Tensor) -> list[dict]:
    """Every query of every image as a COCO result: its most likely class other than "no object" (the last logit),
    that class's probability as the score, the box in pixels of the original image (x, y, w, h)."""
    probs = logits.float().softmax(-1)[..., :-1]
    scores, labels = probs.max(-1)
    cx, cy, w, h = pred_boxes.float().unbind(-1)
    height, width = orig_sizes.float().unbind(-1)
    boxes = torch.stack([(cx - w / 2) * width[:, None], (cy - h / 2) * height[:, None],
                         w * width[:, None], h * height[:, None]], -1)
    out = []
    for image_id, s, c, b in zip(image_ids, scores.tolist(), labels.tolist(), boxes.tolist(), strict=True):
        out += [{"image_id": image_id, "category_id": ci, "bbox": bi, "score": si}
                for si, ci, bi in zip(s, c, b, strict=True)]
    return out


def coco_map(ground_truth: dict, results: list[dict], image_ids: list[int]) -> dict[str, float]:
    """COCOeval bbox over `image_ids` (the images evaluated): mAP (AP@[.5:.95]), AP50, AP75; 0 without detections.
    pycocotools' printing goes nowhere."""
    if not results or not image_ids:
        return dict.fromkeys(STATS, 0.0)
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = ground_truth
        gt.createIndex()
        run = COCOeval(gt, gt.loadRes(results), iouType="bbox")
        run.params.imgIds = sorted(set(image_ids))
        run.evaluate()
        run.accumulate()
        run.summarize()
    return {name: max(0.0, float(v)) for name, v in zip(STATS, run.stats, strict=False)}
