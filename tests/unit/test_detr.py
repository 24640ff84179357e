"""detr: the COCO format check, the dataset's transforms and collate, the pycocotools evaluator, and a few-step run on
COCO data the tests write in the real format (JPEGs and an instances json)."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from case_runners.cases.detr import data
from case_runners.cases.detr.dataset import (
    CocoDetection,
    SyntheticCoco,
    collate,
    eval_transform,
    hflip,
    load_annotations,
    resized_shape,
    train_transform,
)
from case_runners.cases.detr.evaluator import coco_map, detections
from case_runners.rank.worker import main
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round_build import mfu
from record_helpers import resolved, write_resolved

TINY = {"train_scales": [64], "eval_size": 64, "max_size": 128, "num_classes": 5, "num_queries": 10,
        "hidden_dim": 32, "encoder_layers": 1, "decoder_layers": 1, "dim_feedforward": 64, "nheads": 2,
        "depths": [1, 1], "hidden_sizes": [16, 32], "embedding_size": 8, "batch_size": 2, "eval_batch_size": 2,
        "num_workers": 0, "log_freq": 1}
# Per image: (width, height), [(x, y, w, h, category)] of its boxes.
IMAGES = [((80, 60), [(10, 10, 30, 20, 1), (50, 30, 20, 25, 3)]), ((60, 80), [(5, 40, 40, 30, 2)]),
          ((72, 54), [(20, 5, 30, 40, 4)]), ((64, 64), [(0, 0, 64, 32, 1)])]


def make_coco(root: Path, per_split: dict[str, int] | None = None) -> Path:
    """COCO 2017's layout: train2017/, val2017/ JPEGs with bright boxes on grey, annotations/instances_*.json."""
    from PIL import Image

    for split, count in (per_split or {"train": 4, "val": 2}).items():
        folder = root / f"{split}2017"
        folder.mkdir(parents=True)
        images, annotations = [], []
        for i, ((w, h), boxes) in enumerate(IMAGES[:count]):
            pixels = np.full((h, w, 3), 90, dtype=np.uint8)
            for x, y, bw, bh, cat in boxes:
                pixels[y:y + bh, x:x + bw] = 40 * cat
                annotations.append({"id": len(annotations) + 1, "image_id": 100 + i, "category_id": cat,
                                    "bbox": [x, y, bw, bh], "area": bw * bh, "iscrowd": 0})
            name = f"{100 + i:012d}.jpg"
            Image.fromarray(pixels).save(folder / name, format="JPEG")
            images.append({"id": 100 + i, "file_name": name, "width": w, "height": h})
        ann = root / "annotations" / f"instances_{split}2017.json"
        ann.parent.mkdir(exist_ok=True)
        ann.write_text(json.dumps({"images": images, "annotations": annotations,
                                   "categories": [{"id": c, "name": f"c{c}"} for c in range(1, 5)]}))
    return root


# -- the format check ------------------------------------------------------------------------------

def test_coco_check_accepts_the_layout_and_names_what_is_wrong(tmp_path):
    check = data.check_data_dir
    root = make_coco(tmp_path / "coco")
    assert check(str(root), {}) == []
    assert check(None, {"synthetic": True}) == [] and "synthetic: true" in check(None, {})[0]
    assert check(str(tmp_path / "nowhere"), {}) == [f"{tmp_path / 'nowhere'}: not a directory; expected {data.LAYOUT}"]

    val_json = root / "annotations" / "instances_val2017.json"
    coco = json.loads(val_json.read_text())
    val_json.write_text(json.dumps({"images": coco["images"]}))
    assert check(str(root), {}) == [f"{val_json}: no 'annotations', 'categories' list; expected COCO's object "
                                    "detection format with keys images, annotations, categories"]
    val_json.write_text("[1, 2]")
    assert check(str(root), {}) == [f"{val_json}: not a JSON object (COCO's instances file starts with '{{')"]
    val_json.write_text(json.dumps({**coco, "images": [{"id": 1, "file_name": "gone.jpg"}]}))
    assert check(str(root), {}) == [f"{val_json}: its first image 'gone.jpg' is not in {root / 'val2017'}; "
                                    f"expected {data.LAYOUT}"]
    val_json.unlink()
    for image in (root / "train2017").iterdir():
        image.unlink()
    assert check(str(root), {}) == [
        f"{root / 'train2017'}: no image files (.jpg, .jpeg, .png); expected {data.LAYOUT}",
        f"{val_json}: missing; expected {data.LAYOUT}"]


# -- the dataset -----------------------------------------------------------------------------------

def test_coco_samples_carry_normalised_boxes_through_the_transforms(tmp_path):
    root = make_coco(tmp_path / "coco")
    coco = load_annotations(root / "annotations" / "instances_val2017.json")
    val = CocoDetection(root / "val2017", coco, eval_transform(120, 1333))
    image, target = val[0]
    # 80x60 resized to a shorter side of 120: 160x120; the first box (10, 10, 30, 20) in cx, cy, w, h shares
    assert (image.shape, image.dtype) == ((3, 120, 160), torch.uint8)
    assert target["boxes"][0].tolist() == pytest.approx([25 / 80, 20 / 60, 30 / 80, 20 / 60])
    assert target["class_labels"].tolist() == [1, 3] and target["orig_size"].tolist() == [60, 80]
    assert resized_shape(640, 480, 800, 1333) == (1066, 800) and resized_shape(500, 2000, 800, 1333) == (333, 1332)
    # the box lies where the picture's bright pixels are, after a flip too
    img, boxes = hflip(*eval_transform(60, 1333)(_pil(root / "val2017" / "000000000100.jpg"),
                                                 torch.tensor([[10.0, 10, 40, 30]])))
    assert boxes.tolist() == [[40.0, 10, 70, 30]] and np.asarray(img)[20, 55, 0] < 60 < np.asarray(img)[20, 20, 0]

    train = CocoDetection(root / "train2017", load_annotations(root / "annotations" / "instances_train2017.json"),
                          train_transform([48, 64], 96))
    for i in range(len(train)):
        image, target = train[i]
        assert min(image.shape[1:]) in (48, 64) or max(image.shape[1:]) == 96
        assert ((target["boxes"] >= 0) & (target["boxes"] <= 1)).all()
        assert len(target["boxes"]) == len(target["class_labels"])
    images, mask, targets = collate([val[0], val[1]])
    assert images.shape == (2, 3, 160, 160) and mask.shape == (2, 160, 160)
    assert mask[0, :120].all() and not mask[0, 120:].any() and images[0, :, 120:].eq(0).all()
    assert mask[1, :, :120].all() and not mask[1, :, 120:].any()


def _pil(path):
    from PIL import Image

    with Image.open(path) as img:
        return img.convert("RGB")


# -- the evaluator ---------------------------------------------------------------------------------

def _logits_for(labels: list[int], classes: int = 6) -> torch.Tensor:
    """Logits whose softmax is near one at each label (the last column is "no object")."""
    logits = torch.full((len(labels), classes), -10.0)
    logits[range(len(labels)), labels] = 10.0
    return logits


def test_coco_map_is_one_for_the_ground_truth_and_less_when_boxes_shift(tmp_path):
    root = make_coco(tmp_path / "coco")
    coco = load_annotations(root / "annotations" / "instances_val2017.json")
    ids = [im["id"] for im in coco["images"]]
    sizes = torch.tensor([[im["height"], im["width"]] for im in coco["images"]])

    def predictions(shift: float) -> list[dict]:
        out = []
        for k, im in enumerate(coco["images"]):
            anns = [a for a in coco["annotations"] if a["image_id"] == im["id"]]
            boxes = torch.tensor([[(x + w / 2 + shift) / im["width"], (y + h / 2) / im["height"], w / im["width"],
                                   h / im["height"]] for x, y, w, h in (a["bbox"] for a in anns)])
            logits = _logits_for([a["category_id"] for a in anns])
            out += detections(logits[None], boxes[None], [ids[k]], sizes[k:k + 1])
        return out

    perfect = predictions(0.0)
    assert perfect[0]["bbox"] == pytest.approx([10, 10, 30, 20]) and perfect[0]["category_id"] == 1
    assert coco_map(coco, perfect, ids)["mAP"] == pytest.approx(1.0)
    shifted = coco_map(coco, predictions(6.0), ids)
    assert 0 < shifted["mAP"] < 1 and shifted["AP50"] == pytest.approx(1.0)
    assert coco_map(coco, [], ids) == {"mAP": 0.0, "AP50": 0.0, "AP75": 0.0}


# -- runs ------------------------------------------------------------------------------------------

def _run(tmp_path: Path, data_dir, **params) -> tuple[dict, dict]:
    config = resolved("detr", params={**TINY, **params}, data_dir=data_dir)
    path = write_resolved(tmp_path / "detr.json", config)
    code = main(str(path), str(tmp_path / "logs"))
    result = json.loads((tmp_path / "logs" / "rank0.result.json").read_text())
    assert code == 0, result.get("reason")
    return config, result


def test_detr_trains_on_generated_coco_and_reports_map_throughput_and_mfu(tmp_path, monkeypatch):
    from torch.utils.flop_counter import FlopCounterMode

    from case_runners.cases.detr.case import Detr

    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    root = make_coco(tmp_path / "coco")
    config, result = _run(tmp_path, str(root), max_steps=2)
    assert (result["status"], result["stop_reason"], result["steps"], result["samples"]) == \
        ("not_converged", "max_steps", 2, 4)
    assert result["metric"] == "mAP" and 0 <= result["final_metric"] <= 1
    assert set(result["metrics_history"][-1]) >= {"mAP", "AP50", "AP75"} and result["p_core"] > 0
    # MFU at this shape: FLOPs counted as the case's figure is (FlopCounterMode on one forward, x 3)
    params = {**config["params"], **TINY}
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        Detr(params).eval()(torch.zeros(1, 3, 64, 85), torch.ones(1, 64, 85, dtype=torch.bool))
    config["flops_per_sample"] = 3 * counter.get_total_flops()
    assert "no peak FLOP/s for fp32" in mfu(result, ResolvedConfig.from_json(config)).reason  # the cpu vendor's
    config["vendor_info"]["hardware"]["peak_flops"] = {"fp32": 1e11}  # a nominal 2-core CPU
    value = mfu(result, ResolvedConfig.from_json(config)).value
    assert value == pytest.approx(result["p_core"] * config["flops_per_sample"] / 1e11) and 0 < value < 1


def test_synthetic_coco_has_its_ground_truth_in_cocos_format():
    synthetic = SyntheticCoco(length=5, height=32, width=40, num_classes=4, seed=0, pool=3)
    image, target = synthetic[4]
    assert image.shape == (3, 32, 40) and int(target["image_id"]) == 2
    gt = [a for a in synthetic.coco["annotations"] if a["image_id"] == 2]
    cx, cy, w, h = target["boxes"][0].tolist()
    assert gt[0]["bbox"] == pytest.approx([(cx - w / 2) * 40, (cy - h / 2) * 32, w * 40, h * 32])
    assert {c["id"] for c in synthetic.coco["categories"]} == {1, 2, 3}


def test_the_backbone_trains_from_its_second_stage_at_its_own_rate_and_the_rates_drop_tenfold():
    """FlagPerf's recipe: layer2..layer4 trained (transformers would freeze a transformers ResNet whole), the stem
    and layer1 frozen; AdamW with lr_backbone for them; both rates / 10 every lr_drop epochs."""
    from case_runners.cases.detr.case import Detr, DetrCase
    from case_runners.tasks.training.case_api import RunContext

    params = {**resolved("detr")["params"], **TINY, "depths": [1, 1, 1, 1], "hidden_sizes": [8, 16, 32, 64],
              "lr_drop": 2}
    model = Detr(params)
    trained = {n.split(".stages.")[1][0] for n, w in model.net.model.backbone.named_parameters()
               if w.requires_grad and ".stages." in n}
    frozen_stem = [w.requires_grad for n, w in model.net.model.backbone.named_parameters() if "embedder" in n]
    assert trained == {"1", "2", "3"} and frozen_stem and not any(frozen_stem)
    assert not any(w.requires_grad for w in Detr({**params, "lr_backbone": 0}).net.model.backbone.parameters())

    case = DetrCase(params, RunContext(rank=0, local_rank=0, world_size=1, device=torch.device("cpu"),
                                       data_dir=None, log=None))
    case.train_loader = [None] * 3  # 3 steps an epoch: the rates drop after 6
    opt, schedule = case.build_optimizer(model)
    assert [g["lr"] for g in opt.param_groups] == [1e-4, 1e-5]
    rates = []
    for _ in range(7):
        rates.append([g["lr"] for g in opt.param_groups])
        opt.step()
        schedule.step()
    assert rates[5] == [1e-4, 1e-5] and rates[6] == pytest.approx([1e-5, 1e-6])


class _Answers(torch.nn.Module):
    """A stand-in model for the evaluator: the given (logits, boxes) of each image, in the order the rank's loader
    yields them (its shard: every world_size-th image from its rank)."""

    def __init__(self, answers: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        super().__init__()
        self.answers = answers

    def forward(self, images: torch.Tensor, mask: torch.Tensor) -> object:
        from types import SimpleNamespace

        batch, self.answers = self.answers[:len(images)], self.answers[len(images):]
        return SimpleNamespace(logits=torch.stack([a[0] for a in batch]), pred_boxes=torch.stack([a[1] for a in batch]))


def _answers(coco: dict, shift: float) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per image: its boxes shifted right by `shift` px, with sure logits for their classes."""
    out = []
    for im in sorted(coco["images"], key=lambda im: im["id"]):
        anns = [a for a in coco["annotations"] if a["image_id"] == im["id"]]
        boxes = torch.tensor([[(x + w / 2 + shift) / im["width"], (y + h / 2) / im["height"], w / im["width"],
                               h / im["height"]] for x, y, w, h in (a["bbox"] for a in anns)])
        out.append((_logits_for([a["category_id"] for a in anns]), boxes))
    return out


def evaluate_on_rank(root: str, out: str) -> None:
    """A rank of test_the_evaluator_gathers_every_ranks_detections: rank 0's images answered right, rank 1's
    shifted; writes the metrics the case's evaluate returns."""
    import os

    import torch.distributed as td

    from case_runners.cases.detr.case import DetrCase
    from case_runners.tasks.training.case_api import RunContext

    rank = int(os.environ["RANK"])
    td.init_process_group("gloo", rank=rank, world_size=2)
    try:
        params = {**resolved("detr")["params"], **TINY, "eval_size": 60, "max_size": 1333, "synthetic": False,
                  "batch_size": 1, "eval_batch_size": 1}
        case = DetrCase(params, RunContext(rank=rank, local_rank=rank, world_size=2, device=torch.device("cpu"),
                                           data_dir=root, log=None))
        _, val_loader = case.build_data()
        answers = _answers(case.val_coco, 6.0 * rank)[rank::2]
        Path(out).write_text(json.dumps(case.evaluate(_Answers(answers), val_loader)))
    finally:
        td.destroy_process_group()


def test_the_evaluator_gathers_every_ranks_detections(tmp_path):
    """Two ranks over gloo, rank 1's answers off by 6 px: both report the mAP of every image's detections together,
    as pycocotools gives it for them in one process, not rank 0's alone (which would be 1.0)."""
    import os
    import subprocess
    import sys

    from process_helpers import communicate_or_kill
    from test_trainer import REPO, free_port

    root = make_coco(tmp_path / "coco", {"train": 2, "val": 4})
    env = {**os.environ, "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
           "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests"), str(REPO / "tests" / "unit")])}
    procs = [subprocess.Popen([sys.executable, "-c", f"import test_detr; test_detr.evaluate_on_rank("
                               f"{str(root)!r}, {str(tmp_path / f'rank{r}.json')!r})"],
                              env={**env, "RANK": str(r)}, cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(2)]
    outputs = communicate_or_kill(procs)
    assert [p.returncode for p in procs] == [0, 0], outputs
    reported = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    coco = load_annotations(root / "annotations" / "instances_val2017.json")
    ids = sorted(im["id"] for im in coco["images"])
    sizes = {im["id"]: [im["height"], im["width"]] for im in coco["images"]}
    results = []
    for image_id, rank, (logits, boxes) in zip(ids, [0, 1, 0, 1], _answers(coco, 0.0), strict=True):
        shifted = boxes + torch.tensor([6.0 * rank / sizes[image_id][1], 0, 0, 0])
        results += detections(logits[None], shifted[None], [image_id], torch.tensor([sizes[image_id]]))
    expected = coco_map(coco, results, ids)
    assert 0 < expected["mAP"] < 1
    assert reported[0] == reported[1] and reported[0]["mAP"] == pytest.approx(expected["mAP"])
