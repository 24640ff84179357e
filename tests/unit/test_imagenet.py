"""The ImageNet layer shared by the image classifiers: RandAugment, mixup/cutmix, EMA, optimizers, schedules and the
classifier base's evaluation (case_runners/cases/imagenet/)."""

import math

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

from case_runners.cases import list_cases
from case_runners.cases.imagenet.classifier import ImageClassifierCase
from case_runners.cases.imagenet.recipe import ModelEma, build_optimizer, lr_factor, mix_batch
from case_runners.cases.imagenet.transforms import RANDAUGMENT_OPS, RandAugment, apply_op
from case_runners.tasks.training.case_api import RunContext


def gradient_image(size: int = 32) -> Image.Image:
    """Diagonal gradients and a grid of dots: every operation changes it."""
    x = np.linspace(0, 255, size, dtype=np.float32)
    pixels = np.stack([np.add.outer(x, x) / 2, np.add.outer(x, 255 - x) / 2, np.full((size, size), 90.0)], axis=-1)
    pixels[::4, ::4] = 200  # edges, for sharpness
    return Image.fromarray(pixels.astype(np.uint8))


def test_the_support_package_is_not_a_case():
    assert "imagenet" not in list_cases() and {"mobilenetv2", "vit", "resnet50"} <= set(list_cases())


@pytest.mark.parametrize("name,largest,signed", RANDAUGMENT_OPS)
def test_each_randaugment_operation_changes_the_image_but_not_its_size(name, largest, signed):
    img = gradient_image()
    out = apply_op(img, name, largest if name not in ("posterize", "solarize") else round(largest * 0.5))
    assert (out.size, out.mode) == (img.size, img.mode)
    changed = not np.array_equal(np.asarray(out), np.asarray(img))
    assert changed == (name != "identity"), name


def test_randaugment_is_seeded_by_random_and_checks_its_magnitude():
    import random

    img = gradient_image()
    random.seed(3)
    first = np.asarray(RandAugment(magnitude=9)(img))
    random.seed(3)
    assert np.array_equal(first, np.asarray(RandAugment(magnitude=9)(img)))
    with pytest.raises(ValueError, match="magnitude 31 is not in 0..30"):
        RandAugment(magnitude=31)


def test_mixup_blends_images_and_targets_with_the_same_weight():
    torch.manual_seed(0)
    images = torch.arange(4, dtype=torch.float32).view(4, 1, 1, 1).expand(4, 3, 8, 8).contiguous()
    labels = torch.tensor([0, 1, 2, 3])
    mixed, targets = mix_batch(images, labels, 5, mixup_alpha=0.4, cutmix_alpha=0.0)
    lam = float(targets[1, 1])
    assert torch.allclose(targets.sum(dim=1), torch.ones(4))
    assert torch.allclose(mixed[1], images[1] * lam + images[0] * (1 - lam))
    assert math.isclose(float(targets[1, 0]), 1 - lam, rel_tol=1e-6) and 0 < lam < 1


def test_cutmix_pastes_a_box_and_weights_the_targets_by_its_area():
    torch.manual_seed(1)
    images = torch.stack([torch.full((3, 16, 16), float(i)) for i in range(4)])
    labels = torch.tensor([0, 1, 2, 3])
    for _ in range(5):
        mixed, targets = mix_batch(images, labels, 4, mixup_alpha=0.0, cutmix_alpha=1.0)
        pasted = float((mixed[2] == 1.0).float().mean())  # image 2 got a box of image 1
        assert math.isclose(float(targets[2, 1]), pasted, abs_tol=1e-6)
        assert math.isclose(float(targets[2, 2]), 1 - pasted, abs_tol=1e-6)


def test_no_mixing_gives_one_hot_targets():
    images = torch.zeros(2, 3, 4, 4)
    same, targets = mix_batch(images, torch.tensor([1, 0]), 3, 0.0, 0.0)
    assert same is images and targets.tolist() == [[0, 1, 0], [1, 0, 0]]


def test_ema_averages_the_weights_and_swaps_them_in_only_for_the_block():
    model = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(0.0)
    ema = ModelEma(model, decay=0.5)
    with torch.no_grad():
        model.weight.fill_(4.0)
    ema.update()  # 0.5 * 0 + 0.5 * 4
    ema.update()  # 0.5 * 2 + 0.5 * 4
    with ema.swapped_in():
        assert model.weight.item() == 3.0
    assert model.weight.item() == 4.0
    ema.update(warmup=True)
    with ema.swapped_in():
        assert model.weight.item() == 4.0, "copied during the warmup"


def test_lr_schedules_warm_up_then_decay():
    cosine = dict(total_steps=110, warmup_steps=10, warmup_start=0.1, schedule="cosine", min_factor=0.01)
    assert lr_factor(0, **cosine) == pytest.approx(0.1) and lr_factor(5, **cosine) == pytest.approx(0.55)
    assert lr_factor(10, **cosine) == pytest.approx(1.0) and lr_factor(60, **cosine) == pytest.approx(0.505)
    assert lr_factor(110, **cosine) == pytest.approx(0.01) and lr_factor(500, **cosine) == pytest.approx(0.01)
    step = dict(total_steps=0, schedule="step", step_size=100, gamma=0.98)
    assert [lr_factor(s, **step) for s in (0, 99, 100, 250)] == pytest.approx([1, 1, 0.98, 0.98 ** 2])
    with pytest.raises(ValueError, match="lr schedule 'poly' is not one of cosine, step, constant"):
        lr_factor(20, total_steps=10, schedule="poly")


@pytest.mark.parametrize("name,kind", [("sgd", torch.optim.SGD), ("adamw", torch.optim.AdamW),
                                       ("rmsprop", torch.optim.RMSprop)])
def test_optimizers_decay_matrices_and_vectors_by_their_own_weight_decay(name, kind):
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    opt = build_optimizer(model, name, 0.1, 0.9, weight_decay=1e-4, norm_weight_decay=0.0)
    assert type(opt) is kind
    assert [(len(g["params"]), g["weight_decay"]) for g in opt.param_groups] == [(1, 1e-4), (3, 0.0)]
    same = build_optimizer(model, name, 0.1, 0.9, weight_decay=1e-4)
    assert [g["weight_decay"] for g in same.param_groups] == [1e-4, 1e-4]


class Pixels(ImageClassifierCase):
    def build_network(self) -> nn.Module:
        return nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 2))


def test_the_classifier_evaluates_its_ema_weights_when_the_recipe_has_one():
    params = {"max_grad_norm": 0.0, "channels_last": False, "ema_decay": 0.99, "ema_steps": 1}
    case = Pixels(params, RunContext(rank=0, local_rank=0, world_size=1, device=torch.device("cpu"), data_dir=None,
                                     log=None))  # type: ignore[arg-type]
    model = case.build_model()
    with torch.no_grad():
        model[1].weight.zero_()
        model[1].bias.copy_(torch.tensor([1.0, 0.0]))  # class 0 for every image
    batches = [(torch.zeros(4, 3, 4, 4, dtype=torch.uint8), torch.zeros(4, dtype=torch.long))]
    assert case.evaluate(model, batches)["acc1"] == 100.0
    case.after_step(model)
    with torch.no_grad():
        model[1].bias.copy_(torch.tensor([0.0, 1.0]))  # now class 1; the average still says 0
    assert case.evaluate(model, batches) == {"acc1": 100.0, "acc5": 100.0}
    assert model[1].bias.tolist() == [0.0, 1.0], "the model's own weights are back"
    case.p["ema_decay"], case.ema = 0.0, None
    assert case.evaluate(model, batches)["acc1"] == 0.0


def test_prepare_images_writes_digits_as_an_image_folder_the_classifiers_accept(tmp_path, capsys):
    from case_runners.cases.imagenet.dataset import ImageFolder
    from case_runners.cases.imagenet.prepare import prepare_images
    from case_runners.cases.imagenet.transforms import eval_transform
    from case_runners.cases.mobilenetv2.data import check_data_dir
    from case_runners.cli.main import main
    from case_runners.core.errors import PerfplayError

    out = tmp_path / "digits"
    assert main(["prepare-images", str(out), "--size", "16", "--seed", "3"]) == 0
    assert "1438 train and 359 val JPEGs of 16x16" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["train", "val"]
    assert check_data_dir(str(out), {"num_classes": 10}) == []
    val = ImageFolder(out / "val", eval_transform(16, resize=16))
    assert val.classes == [f"digit_{d}" for d in range(10)] and len(val) == 359
    image, label = val[0]
    assert (tuple(image.shape), label) == ((3, 16, 16), 0) and image.float().std() > 20, "a digit, not a blank"
    again = tmp_path / "again"
    prepare_images(again, size=16, seed=3)
    assert sorted(p.name for p in (again / "val" / "digit_0").iterdir()) == \
        sorted(p.name for p in (out / "val" / "digit_0").iterdir()), "the split is the seed's"
    with pytest.raises(PerfplayError, match="exists and is not an empty directory"):
        prepare_images(out)
    with pytest.raises(PerfplayError, match="--size 4: expected 8..1024"):
        prepare_images(tmp_path / "small", size=4)


def test_the_training_crop_keeps_at_least_crop_scale_min_of_the_image():
    from case_runners.cases.imagenet.transforms import train_transform

    img = gradient_image(16)
    whole, flipped = np.asarray(img), np.asarray(img)[:, ::-1]
    for _ in range(10):
        out = np.asarray(train_transform(16, scale_min=1.0)(img))
        assert np.array_equal(out, whole) or np.array_equal(out, flipped)
    assert any(not np.array_equal(np.asarray(train_transform(16)(img)), a) for a in (whole, flipped) for _ in range(5))


def test_hflip_sets_how_often_the_training_image_is_mirrored():
    """Digits change class in a mirror: hflip 0 never flips them; the recipes' 0.5 flips about half the images."""
    from case_runners.cases.imagenet.transforms import train_transform

    img = gradient_image(16)
    whole, flipped = np.asarray(img), np.asarray(img)[:, ::-1]
    never, half = train_transform(16, scale_min=1.0, flip=0.0), train_transform(16, scale_min=1.0)
    assert all(np.array_equal(np.asarray(never(img)), whole) for _ in range(40))
    mirrored = sum(np.array_equal(np.asarray(half(img)), flipped) for _ in range(200))
    assert 50 < mirrored < 150, mirrored
