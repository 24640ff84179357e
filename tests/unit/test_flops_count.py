"""FLOPs per sample counted on the rank (config.yaml `flops_per_sample: counted`): the counter against the hand
figures, the count cached per shape, and a count that cannot be made."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
import torch

from case_context import cpu_context
from case_runners.cases.digits_cnn.case import build_case as build_digits
from case_runners.cases.imagenet import classifier
from case_runners.cases.imagenet.classifier import ImageClassifierCase
from case_runners.cases.resnet50 import case as resnet50_case
from case_runners.cases.resnet50.case import build_case as build_resnet
from case_runners.core.paths import FLOPS_CACHE_ENV, project_root
from case_runners.plan.layering import load_case_base
from case_runners.tasks.training import case_api, flops

RESNET50_HAND = 3 * 2 * 4.1e9  # its README: 4.1e9 forward MACs at 224x224, 1 MAC = 2 FLOPs, training = 3 x forward
DIGITS_HAND = 3 * 2 * 337_536  # its README's arithmetic


def params(case: str, **changed) -> dict:
    return {**load_case_base(case, project_root())[0]["params"], **changed}


def images(batch: int, size: int, channels: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    return flops.meta_like((torch.empty(batch, channels, size, size), torch.zeros(batch, dtype=torch.long)))


@pytest.fixture
def cache(monkeypatch, tmp_path):
    path = tmp_path / "flops.json"
    monkeypatch.setenv(FLOPS_CACHE_ENV, str(path))
    return path


# ViT-B/16's attention matmuls per image forward: scores and values, 2 FLOPs per MAC, 197 tokens, width 768, 12 layers
VIT_ATTENTION = 2 * 2 * 197**2 * 768 * 12


@pytest.mark.parametrize(("case", "hand", "missed"), [("mobilenetv2", 1_804_645_632, 0),
                                                      ("vit", 101_091_004_416, 3 * VIT_ATTENTION)])
def test_the_image_cases_figures_and_the_counter_so_counted_is_a_one_line_switch(case, hand, missed):
    """Their READMEs' figures, counted with FlopCounterMode on real CPU tensors at batch 1, are what rank 0 counts at
    their standard shape, but for vit's attention: on the CPU, torch's flash-attention kernel has no FLOP formula in
    the counter; on the meta device attention runs as matmuls, which it counts (ViT-B/16: 17.56e9 MACs forward)."""
    build = importlib.import_module(f"case_runners.cases.{case}.case").build_case
    assert flops.count_per_sample(build(params(case), cpu_context()), images(2, 224)) == hand + missed


def test_the_counter_agrees_with_the_hand_figures():
    resnet = flops.count_per_sample(build_resnet(params("resnet50"), cpu_context()), images(2, 224))
    assert resnet == pytest.approx(RESNET50_HAND, rel=0.01)  # 24.54e9: the hand figure rounds 4.089e9 MACs up
    digits = flops.count_per_sample(build_digits(params("digits_cnn"), cpu_context()), images(4, 8, channels=1))
    assert digits == DIGITS_HAND


def test_counts_are_cached_per_shape_and_a_failed_count_says_why(cache):
    small = params("resnet50", image_size=32, depths=[1, 1, 1, 1], hidden_sizes=[16, 32, 64, 128], embedding_size=8)
    depend_on = load_case_base("resnet50", project_root())[0]["flops_depend_on"]
    case = build_resnet(small, cpu_context())
    first = flops.flops_count("resnet50", case, small, depend_on, images(2, 32))
    assert not first.cached and first.per_sample and first.note is None and "FlopCounterMode" in first.convention
    again = flops.flops_count("resnet50", case, small, depend_on, images(2, 32))
    assert again.cached and again.per_sample == first.per_sample
    larger = {**small, "image_size": 64}  # another shape: counted again, its convolutions on 4 x the pixels
    bigger = flops.flops_count("resnet50", build_resnet(larger, cpu_context()), larger, depend_on, images(2, 64))
    assert not bigger.cached and 2 * first.per_sample < bigger.per_sample < 4 * first.per_sample
    entries = json.loads(cache.read_text())
    assert sorted(e["params"]["image_size"] for e in entries.values()) == [32, 64]
    wrong = flops.flops_count("resnet50", case, {**small, "image_size": 48}, depend_on, images(2, 48, channels=5))
    assert wrong.per_sample is None and "failed" in wrong.note and not wrong.cached
    assert len(json.loads(cache.read_text())) == 2  # a failed count is not remembered



class TinyClassifier(ImageClassifierCase):
    def build_network(self) -> torch.nn.Module:
        return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LazyLinear(int(self.p["num_classes"])))


def test_the_cache_key_follows_the_case_s_sources_and_its_shared_base():
    """A count is not reused once the model's code may have changed: the key covers the case's package and the
    modules of its base classes (the classifiers' shared base lives outside their packages)."""
    resnet = flops.case_sources(build_resnet(params("resnet50"), cpu_context()))
    assert Path(resnet50_case.__file__) in resnet and Path(case_api.__file__) in resnet
    assert Path(classifier.__file__) not in resnet
    tiny = TinyClassifier({**params("resnet50"), "max_grad_norm": 0}, cpu_context())
    assert Path(classifier.__file__) in flops.case_sources(tiny)
