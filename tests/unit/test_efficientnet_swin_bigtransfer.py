"""efficientnet, swin_transformer and bigtransfer: their models at the standard shape (parameter counts against the
published figures, FLOPs against config.yaml, on the meta device), their tiny shapes, the plan's refusal of a layout
that cannot be built, BiT's schedule and metric, and a short real run of each through the direct runner (a record
with throughput, the FLOPs convention and the metric)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from torch.utils.flop_counter import FlopCounterMode

import real_runs
from case_context import cpu_context
from case_runners.cases.bigtransfer import case as bigtransfer_case
from case_runners.cases.bigtransfer.case import BigTransferCase, staircase
from case_runners.cases.bigtransfer.weights import load_bit_npz, npz_names
from case_runners.cases.efficientnet.case import EfficientNetCase
from case_runners.cases.efficientnet.model import PUBLISHED_PARAMS, EfficientNetV2
from case_runners.cases.swin_transformer.case import SwinCase
from case_runners.core.paths import project_root
from case_runners.plan.layering import load_case_base
from case_runners.plan.run_plan import make_plan
from flagperf_tree import import_nvidia_configs

REPO = project_root()
CASES = {"efficientnet": EfficientNetCase, "swin_transformer": SwinCase, "bigtransfer": BigTransferCase}
# Published parameter counts at 1000 classes: torchvision's efficientnet_v2_s, Swin-T (Liu et al. 2021, Table 1:
# 28M; the official swin_tiny_patch4_window7_224 has 28,288,354), and FlagPerf's BiT-M-R152x2 (its
# models.ResNetV2([3, 8, 36, 3], 2, 1000) counts 236,335,208).
PARAMS = {"efficientnet": PUBLISHED_PARAMS, "swin_transformer": 28_288_354, "bigtransfer": 236_335_208}
STANDARD_SIZE = {"efficientnet": 300, "swin_transformer": 224, "bigtransfer": 480}
# Training FLOPs per sample at the standard shape, as the READMEs give them (the runs count them: `counted`).
STANDARD_FLOPS = {"efficientnet": 31_845_367_488, "swin_transformer": 26_943_399_936, "bigtransfer": 1_262_144_716_800}
# Tiny shapes (run-only keys) for CPU runs.
TINY = {
    "efficientnet": {"image_size": 32, "eval_image_size": 32, "eval_resize": 36, "width_mult": 0.25,
                     "depth_mult": 0.1},
    "swin_transformer": {"image_size": 32, "embed_dim": 16, "depths": [1, 1], "num_heads": [1, 2], "window_size": 2},
    "bigtransfer": {"image_size": 32, "train_resize": 36, "depths": [1, 1], "hidden_sizes": [128, 256],
                    "embedding_size": 32},
}


def params(case: str, **overrides: object) -> dict:
    return {**load_case_base(case, REPO)[0]["params"], "num_workers": 0, **overrides}


def network(case: str, **overrides: object) -> torch.nn.Module:
    return CASES[case](params(case, **overrides), cpu_context()).build_network()


@pytest.mark.parametrize("case", CASES)
def test_the_standard_model_has_the_published_parameters_and_the_readmes_flops(case: str) -> None:
    with torch.device("meta"):
        model = network(case).eval()
        assert sum(p.numel() for p in model.parameters()) == PARAMS[case]
        size = STANDARD_SIZE[case]
        with FlopCounterMode(display=False) as counter:
            logits = model(torch.empty(1, 3, size, size))
    assert logits.shape == (1, 1000)
    base = load_case_base(case, REPO)[0]
    assert base["params"]["image_size"] == size
    assert base["flops_per_sample"] == "counted"
    assert 3 * counter.get_total_flops() == STANDARD_FLOPS[case]


def test_efficientnet_is_the_papers_stages() -> None:
    with torch.device("meta"):
        model = EfficientNetV2()
    blocks = list(model.features)[1:-1]
    assert len(blocks) == 2 + 4 + 4 + 6 + 9 + 15
    fused = [b for b in blocks if not any(type(m).__name__ == "SqueezeExcite" for m in b.modules())]
    assert len(fused) == 10  # the three Fused-MBConv stages; the MBConv ones squeeze and excite
    drops = [b.drop for b in blocks]
    assert drops[0] == 0 and drops == sorted(drops) and drops[-1] == pytest.approx(0.2 * 39 / 40)
    tiny = EfficientNetV2(num_classes=10, width=0.25, depth=0.1)  # ceil(layers x 0.1): 1, 1, 1, 1, 1, 2 blocks
    assert len(tiny.features) == 1 + 7 + 1 and sum(p.numel() for p in tiny.parameters()) < 200_000


@pytest.mark.parametrize("case", CASES)
def test_the_tiny_shape_trains_on_small_images(case: str) -> None:
    torch.manual_seed(0)
    model = network(case, num_classes=3, **TINY[case]).train()
    logits = model(torch.randn(2, 3, 32, 32))
    assert logits.shape == (2, 3)
    logits.sum().backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_bigtransfer_starts_from_a_zero_head() -> None:
    logits = network("bigtransfer", num_classes=3, **TINY["bigtransfer"]).eval()(torch.randn(2, 3, 32, 32))
    assert torch.equal(logits, torch.zeros(2, 3))  # BiT's zero_head: every class equally likely at step 0


def test_bigtransfer_follows_bits_staircase() -> None:
    factor = staircase(500, [3000, 6000, 9000, 10000], 0.1)
    assert [factor(s) for s in (0, 250, 500, 3000)] == [0.0, 0.5, 1.0, 1.0]
    assert factor(3001) == pytest.approx(0.1) and factor(6001) == pytest.approx(0.01)
    assert factor(10001) == pytest.approx(1e-4)


def plan_errors(case: str, overrides: dict) -> list[str]:
    plan = make_plan({"vendor": "cpu", "cases": [{"case": case, "overrides": overrides}]}, check=True)
    return [str(e) for e in plan["errors"]]


def test_a_layout_that_cannot_be_built_is_refused_naming_the_key() -> None:
    (error,) = plan_errors("swin_transformer", {"depths": [2, 2], "num_heads": [3, 6, 12]})
    assert "key 'num_heads' has 3 entries but depths has 2" in error
    (error,) = plan_errors("swin_transformer", {"embed_dim": 16, "num_heads": [3, 6, 12, 24]})
    assert "stage 0 is 16 wide (embed_dim 16 x 1), which its 3 heads do not divide" in error
    (error,) = plan_errors("bigtransfer", {"hidden_sizes": [256, 512, 1000, 2048]})
    assert "key 'hidden_sizes' has 1000" in error and "a multiple of 128" in error
    (error,) = plan_errors("bigtransfer", {"image_size": 64, "train_resize": 48})
    assert "key 'train_resize' is 48, smaller than the image_size 64" in error
    assert plan_errors("efficientnet", {"width_mult": 0}) and "width_mult" in plan_errors("efficientnet",
                                                                                          {"width_mult": 0})[0]


@pytest.fixture(scope="module")
def functional_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return real_runs.functional_run(tmp_path_factory.mktemp("image_cases"), *CASES)


@pytest.mark.parametrize("case", CASES)
def test_a_short_run_records_throughput_mfu_and_the_cases_metric(functional_run: Path, case: str) -> None:
    record, evaluated = real_runs.short_round(functional_run, case)
    metrics = record["metrics"]
    assert metrics["samples"] == 12 and 0 <= metrics["final_metric"] <= (1 if case == "bigtransfer" else 100)
    assert {"acc1", "acc5"} <= set(evaluated)
    if case == "bigtransfer":  # FlagPerf's mAP: the top-1 accuracy as a fraction
        assert evaluated["mAP"] == pytest.approx(evaluated["acc1"] / 100)


def bit_npz(model: torch.nn.Module, path: Path, drop: str = "") -> dict[str, np.ndarray]:
    """An .npz in BiT's naming and layout (HWIO kernels) for `model`'s backbone, random values; `drop`: a name left
    out."""
    rng = np.random.default_rng(0)
    params = dict(model.named_parameters())
    arrays = {}
    for ours, theirs in npz_names(model).items():
        shape = tuple(params[ours].shape)
        arrays[theirs] = rng.standard_normal(shape[2:] + shape[1::-1] if len(shape) == 4 else shape).astype("f4")
    np.savez(path, **{k: v for k, v in arrays.items() if k != drop})
    return arrays


def test_bigtransfer_fine_tunes_from_bits_released_weights(tmp_path: Path) -> None:
    model = network("bigtransfer", num_classes=3, **TINY["bigtransfer"]).net
    names = npz_names(model)
    assert names["bit.encoder.stages.0.layers.0.downsample.conv.weight"] == \
        "resnet/block1/unit01/a/proj/standardized_conv2d/kernel"
    assert names["bit.encoder.stages.1.layers.0.norm2.bias"] == "resnet/block2/unit01/b/group_norm/beta"
    arrays = bit_npz(model, tmp_path / "BiT.npz")
    assert load_bit_npz(model, tmp_path / "BiT.npz") == len(arrays)
    conv = model.bit.encoder.stages[1].layers[0].conv2.weight  # (out, in, 3, 3) from TensorFlow's (3, 3, in, out)
    kernel = arrays["resnet/block2/unit01/b/standardized_conv2d/kernel"]
    assert conv[5, 2, 0, 1].item() == kernel[0, 1, 2, 5]
    assert torch.equal(model.bit.norm.weight, torch.from_numpy(arrays["resnet/group_norm/gamma"]))
    assert not model.classifier[-1].weight.any()  # the head stays zero: BiT fine-tunes from a zero head
    bit_npz(model, tmp_path / "short.npz", drop="resnet/block2/unit01/c/group_norm/gamma")
    with pytest.raises(ValueError, match=r"short.npz: no tensor resnet/block2/unit01/c/group_norm/gamma \(the "
                                         r"model's bit.encoder.stages.1.layers.0.norm3.weight\)"):
        load_bit_npz(model, tmp_path / "short.npz")


def test_bigtransfer_data_check_names_the_missing_weights(tmp_path: Path) -> None:
    root = tmp_path / "imagenet"
    for split in ("train", "val"):
        (root / split / "n01").mkdir(parents=True)
        (root / split / "n01" / "a.JPEG").write_bytes(b"")
    check = importlib.import_module("case_runners.cases.bigtransfer.data").check_data_dir
    wanted = {"num_classes": 1, "transfer_weights": "backbone_weights/bigtransfer/BiT-M-R152x2.npz"}
    (problem,) = check(str(root), wanted)
    assert problem.startswith(f"{root}/backbone_weights/bigtransfer/BiT-M-R152x2.npz: missing: the BiT weights")
    assert check(str(root), {**wanted, "transfer_weights": ""}) == []
    assert check(None, {**wanted, "synthetic": True}) == []
    (root / "backbone_weights" / "bigtransfer").mkdir(parents=True)
    (root / "backbone_weights" / "bigtransfer" / "BiT-M-R152x2.npz").write_bytes(b"")
    assert check(str(root), wanted) == []


# FlagPerf's own efficientnet configs (training/nvidia/efficientnet-pytorch/config/), as they are.
FLAGPERF_EFFICIENTNET = {
    "config_common.py": """\
vendor = "nvidia"
dist_backend = "nccl"

lr = 0.5
lr_scheduler = "cosineannealinglr"
lr_warmup_epochs = 5
lr_warmup_method = "linear"
auto_augment = "ta_wide"
random_erase = 0.1
label_smoothing = 0.1
mixup_alpha = 0.2
cutmix_alpha = 1.0
weight_decay = 0.00002
norm_weight_decay = 0.0
ra_sampler = True
ra_reps = 4
epochs = 600
num_workers = 8

# efficientnet_v2_s
TRAIN_SIZE = 300
train_crop_size = TRAIN_SIZE
EVAL_SIZE = 384
val_crop_size = EVAL_SIZE
val_resize_size = EVAL_SIZE
""",
    "config_A100x1x1.py": "from config_common import *\n\ntrain_batch_size = 128\neval_batch_size = 128\nlr = 0.1\n",
}


def test_import_flagperf_maps_flagperfs_efficientnet_configs(tmp_path: Path) -> None:
    report = import_nvidia_configs(tmp_path, "efficientnet-pytorch", FLAGPERF_EFFICIENTNET)
    written = yaml.safe_load((tmp_path / "out/vendor/nvidia/cases/efficientnet/config_A100x1x1.yaml").read_text())
    assert written == {"lr": 0.1, "label_smoothing": 0.1, "mixup_alpha": 0.2, "cutmix_alpha": 1.0,
                       "weight_decay": 2e-05, "norm_weight_decay": 0.0, "max_epochs": 600, "num_workers": 8,
                       "batch_size": 128, "eval_batch_size": 128}
    why = {line.split(" (from ")[0].split()[-1]: line.split("): ", 1)[1] for line in report
           if line.startswith("no counterpart") and "config_A100x1x1.py " in line and " (from " in line}
    assert why["lr_scheduler"].endswith("lr_schedule (cosine, step, constant)")
    assert why["train_crop_size"] == "the case's image_size: run-only, the standard shape is the case's"
    assert why["auto_augment"].startswith("-> auto_augment: ") and "ta_wide" in why["auto_augment"]
    assert why["random_erase"].startswith("not in perfplay's image recipe")


def test_bigtransfer_squashes_images_as_bit_does() -> None:
    from PIL import Image

    from case_runners.cases.bigtransfer.case import eval_transform, train_transform

    pixels = np.zeros((50, 100, 3), dtype=np.uint8)
    pixels[:, :25] = 255  # the left quarter white: a centre crop would lose it, BiT's squash keeps it
    image = Image.fromarray(pixels)
    evaluated = np.asarray(eval_transform(64)(image))
    assert evaluated.shape == (64, 64, 3) and evaluated[:, :14].min() == 255 and evaluated[:, 18:].max() == 0
    trained = np.asarray(train_transform(72, 64)(image))  # 72 x 72, then a random 64 x 64 crop, maybe flipped
    assert trained.shape == (64, 64, 3) and 0 < (trained == 255).mean() < 0.3


def test_bigtransfer_fine_tunes_on_jpegs_from_the_weights_in_its_data_dir(tmp_path: Path, monkeypatch) -> None:
    """The whole data path of the case (JPEG folders, BiT's transforms, the .npz under data_dir) in one rank."""
    from PIL import Image

    from case_runners.rank.worker import main
    from record_helpers import resolved, write_resolved

    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "imagenet"
    for split in ("train", "val"):
        for c, name in enumerate(("n01", "n02")):
            (root / split / name).mkdir(parents=True)
            for i in range(4):
                pixels = np.full((40, 48, 3), 60 * c + 10 * i, dtype=np.uint8)
                Image.fromarray(pixels).save(root / split / name / f"{i}.JPEG")
    tiny = {**TINY["bigtransfer"], "num_classes": 2}
    weights = root / "backbone_weights" / "bigtransfer" / "BiT-M-R152x2.npz"
    weights.parent.mkdir(parents=True)
    bit_npz(network("bigtransfer", **tiny).net, weights)
    loaded: list[Path] = []
    monkeypatch.setattr(bigtransfer_case, "load_bit_npz", lambda model, path: loaded.append(path) or
                        load_bit_npz(model, path))
    config = resolved("bigtransfer", data_dir=str(root), params={
        **tiny, "max_steps": 2, "batch_size": 4, "eval_batch_size": 8, "warmup_steps": 1, "num_workers": 0})
    assert main(str(write_resolved(tmp_path / "config.json", config)), str(tmp_path / "logs")) == 0
    assert loaded == [weights]
    result = json.loads((tmp_path / "logs" / "rank0.result.json").read_text())
    assert (result["metric"], result["steps"], result["samples"]) == ("mAP", 2, 8)
    evaluated = result["metrics_history"][-1]
    assert evaluated["mAP"] == pytest.approx(evaluated["acc1"] / 100) and evaluated["acc5"] == 100.0
