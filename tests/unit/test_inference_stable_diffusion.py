"""stable_diffusion_v1_4's inference case: its FLOPs at the standard shape, FlagPerf's prompts file and sample, the
CLIP score, and steps a-g at the functional shape with prompts and weights folders written in the real formats."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

from case_runners.cases.stable_diffusion_v1_4.data import load_prompts
from case_runners.core.paths import project_root
from case_runners.host.data_check import data_problems
from case_runners.plan.config.resolved import INFERENCE
from case_runners.plan.inference_config import resolve_inference
from case_runners.tasks.inference.pipeline import run_pipeline

REPO = project_root()
CASE = "stable_diffusion_v1_4"


def _settings(functional: bool) -> dict:
    resolved, _ = resolve_inference(CASE, "cpu", REPO, functional=functional)
    return resolved.settings()


def test_flops_per_image_are_the_unet_calls_counted_at_the_standard_shape():
    """configurations.yaml's flops = num_inference_steps guided UNet calls (2 latents) at 512x512, counted by
    torch.utils.flop_counter on a meta-device UNet built from SD v1.4's config."""
    from torch.utils.flop_counter import FlopCounterMode

    from case_runners.cases.stable_diffusion_v1_4.inference import create_model, example_inputs

    config = {**_settings(False), "batch_size": 1}
    with torch.device("meta"):
        model = create_model(config)
        inputs = example_inputs(model, config)
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(8.6e8, rel=0.01), "SD v1.4's UNet"
    with FlopCounterMode(display=False) as counter:
        model(*inputs)
    assert counter.get_total_flops() * config["num_inference_steps"] == pytest.approx(config["flops"], rel=1e-3)


def _captions(path: Path, captions: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"images": [], "annotations": [{"image_id": i, "caption": c}
                                                               for i, c in enumerate(captions)]}))
    return path


def test_prompts_are_flagperfs_sample_of_the_short_captions(tmp_path: Path):
    params = {"prompts": "data_vizwiz/val.json", "prompt_max_len": 20, "prompt_samples": 3, "seed": 0}
    short = [f"a dog number {i}" for i in range(6)]
    _captions(tmp_path / "data_vizwiz" / "val.json", [*short, "a caption far longer than the prompt length"])
    assert data_problems(CASE, params, str(tmp_path), INFERENCE) == []
    random.seed(0)  # FlagPerf's dataloader.py
    assert load_prompts(str(tmp_path), params) == random.sample(short, 3)
    assert data_problems(CASE, {**params, "prompt_samples": 7}, str(tmp_path), INFERENCE) == [
        f"{tmp_path / 'data_vizwiz' / 'val.json'}: 6 captions shorter than prompt_max_len - 2 = 18 characters; "
        "prompt_samples is 7"]
    (tmp_path / "data_vizwiz" / "val.json").write_text("{\"images\": []}")
    problem, = data_problems(CASE, params, str(tmp_path), INFERENCE)
    assert "not a captions JSON (KeyError" in problem and "VizWiz's val.json" in problem


def _data_dir(tmp_path: Path, config: dict) -> Path:
    """Prompts, SD weights in diffusers' layout and a CLIP model in transformers', at the functional shape, with
    weights of another seed than the case's random ones."""
    from case_runners.cases.stable_diffusion_v1_4.inference import parts

    data = tmp_path / "data"
    _captions(data / config["prompts"], ["a red car on the street", "two cats", "a bottle on a table"])
    other = {**config, "seed": 7}
    weights, evaluator = data / config["weights"], data / config["eval_weights"]
    parts.build_unet(other).save_pretrained(weights / "unet")
    parts.build_vae(other).save_pretrained(weights / "vae")
    parts.build_text_encoder(other).save_pretrained(weights / "text_encoder")
    tokenizer = parts.byte_tokenizer(config["prompt_max_len"])
    tokenizer.save_pretrained(weights / "tokenizer")
    scorer = parts.build_scorer(other, tokenizer, "cpu")
    scorer.model.save_pretrained(evaluator)
    scorer.images.save_pretrained(evaluator)
    tokenizer.save_pretrained(evaluator)
    return data


def test_steps_a_to_g_run_on_prompts_and_weights_folders(tmp_path: Path):
    """The functional shape on the cpu vendor (the UNet through ONNX Runtime): every step, both paths on the same
    images; the weights folders are the ones loaded."""
    from case_runners.cases.stable_diffusion_v1_4.inference import create_model, parts

    resolved, _ = resolve_inference(CASE, "cpu", REPO, functional=True)
    config = resolved.settings()
    data = _data_dir(tmp_path, config)
    loaded = create_model({**config, "data_dir": str(data)})
    saved = parts.build_unet({**config, "seed": 7})
    assert all(torch.equal(a, b) for a, b in zip(loaded.unet.state_dict().values(), saved.state_dict().values()))
    assert not torch.equal(next(create_model(config).parameters()), next(loaded.parameters())), "else random"

    result = run_pipeline(resolved, REPO, tmp_path / "work", str(data), log=lambda _: None)
    assert result["steps"] == ["a", "b", "c", "d", "e", "f", "g"]
    assert result["validation_items"] == result["inference_items"] == 2, "prompt_samples images, drop_last"
    assert 0 <= result["validation_accuracy"] <= 100, "a CLIP score"
    assert result["inference_accuracy"] == pytest.approx(result["validation_accuracy"], abs=0.5)
    assert result["agreement"] == 1.0
    assert result["p_inference_core"] > result["p_inference_whole"], "core is the UNet calls only"
    assert Path(result["onnx_path"]).name == "stable_diffusion_v1_4_unet.onnx"


def test_the_clip_score_is_torchmetrics_definition(tmp_path: Path):
    """100 x the cosine of CLIP's image and text embeddings, clamped at 0, on uint8 HWC images (FlagPerf's
    evaluator feeds torchmetrics' CLIPScore so)."""
    from case_runners.cases.stable_diffusion_v1_4.inference import evaluator, parts

    config = {**_settings(True), "work_dir": str(tmp_path)}
    tokenizer = parts.byte_tokenizer(config["prompt_max_len"])
    scorer = parts.build_scorer(config, tokenizer, "cpu")
    images = torch.rand(2, 3, 16, 16) * 2 - 1
    scores = evaluator(scorer, images, ["a cat", "a dog"])
    pixels = ((images / 2 + 0.5).clamp(0, 1).permute(0, 2, 3, 1) * 255).round().to(torch.uint8)
    for pixel, prompt, score in zip(pixels, ["a cat", "a dog"], scores):
        inputs = scorer.images(images=[pixel.numpy()], return_tensors="pt")
        text = tokenizer([prompt], return_tensors="pt")
        with torch.no_grad():
            image = scorer.model.get_image_features(**inputs).pooler_output
            words = scorer.model.get_text_features(**text).pooler_output
        cosine = torch.nn.functional.cosine_similarity(image, words).item()
        assert score == pytest.approx(max(100 * cosine, 0.0), abs=1e-3)
