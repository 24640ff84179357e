"""stable_diffusion_v1_4 inference: SD v1.4 text-to-image as FlagPerf runs it (inference/benchmarks/
stable_diffusion_v1_4): each batch of prompts is encoded by the CLIP text encoder, denoised from seeded noise in
num_inference_steps DDIM steps with classifier-free guidance, decoded by the VAE and scored with the CLIP score.

The UNet with its guidance (parts.GuidedUNet) is the model of steps b-f: validated in torch, exported to ONNX and
compiled, as FlagPerf compiles its UNet only. The text encoder, the scheduler and the VAE run in torch in both paths.
An item is an image: core time is the denoising steps' UNet calls (less the engine's foo_time), whole time all of
it (tokenizing, text encoding, denoising, decoding, scoring); seconds per image = 1 / items per second.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from case_runners.cases.stable_diffusion_v1_4.data import load_prompts
from case_runners.cases.stable_diffusion_v1_4.inference import parts
from case_runners.rank import stop_request

INPUTS = ("latents", "timestep", "prompted", "unconditioned")
Denoise = Callable[[list[torch.Tensor]], tuple[torch.Tensor, float]]  # a step's inputs -> (noise, foo_time)


class Prompts(Dataset):
    def __init__(self, prompts: list[str]) -> None:
        self.prompts = prompts

    def __len__(self) -> int:
        return len(self.prompts)

    def __getitem__(self, index: int) -> str:
        return self.prompts[index]


def build_dataloader(config: dict[str, Any]) -> DataLoader:
    """Batches of prompts; drop_last as FlagPerf's."""
    return DataLoader(Prompts(load_prompts(config.get("data_dir"), config)), batch_size=int(config["batch_size"]),
                      shuffle=False, drop_last=True, num_workers=int(config["num_workers"]))


def create_model(config: dict[str, Any]) -> torch.nn.Module:
    model = parts.GuidedUNet(parts.build_unet(config), float(config["guidance_scale"])).eval()
    return model.half() if config["fp16"] else model


def evaluator(scorer: parts.ClipScorer, images: torch.Tensor, prompts: list[str]) -> list[float]:
    """FlagPerf's evaluator.py: the VAE's images in [-1, 1] to uint8 HWC, then the CLIP score of each image."""
    pixels = ((images.float() / 2 + 0.5).clamp(0, 1).permute(0, 2, 3, 1) * 255).round().to(torch.uint8)
    return scorer(pixels.cpu(), prompts)


def model_forward(model: torch.nn.Module, dataloader: DataLoader, evaluate: Callable,
                  config: dict[str, Any]) -> dict:
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    synchronize = config.get("synchronize") or (lambda: None)

    def denoise(inputs: list[torch.Tensor]) -> tuple[torch.Tensor, float]:
        with torch.inference_mode():
            noise = model(*[t.to(device, dtype if t.is_floating_point() else t.dtype) for t in inputs])
            synchronize()
        return noise.float().cpu(), 0.0
    return generate(denoise, dataloader, evaluate, config, "validation")


def export_model(model: torch.nn.Module, config: dict[str, Any]) -> Path:
    """The guided UNet to ONNX, the batch dynamic. TorchScript's exporter: the dynamo one specialises the batch on
    diffusers' shape checks (and takes minutes on the full UNet)."""
    path = Path(config["work_dir"]) / "stable_diffusion_v1_4_unet.onnx"
    with warnings.catch_warnings():  # diffusers' shape checks, constant for a given latent size
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.onnx.export(model, example_inputs(model, config), str(path), input_names=list(INPUTS),
                          output_names=["noise"], dynamic_axes={name: {0: "batch"} for name in (*INPUTS, "noise")},
                          dynamo=False, verbose=False)
    return path


def example_inputs(model: torch.nn.Module, config: dict[str, Any]) -> tuple[torch.Tensor, ...]:
    """One step's inputs for a batch of batch_size, on the model's device and in its precision."""
    parameter = next(model.parameters())
    batch, side = int(config["batch_size"]), parts.latent_scale(config)
    latents = torch.zeros(batch, int(config["latent_channels"]), int(config["height"]) // side,
                          int(config["width"]) // side, dtype=parameter.dtype, device=parameter.device)
    text = torch.zeros(batch, int(config["prompt_max_len"]), int(config["text_hidden_size"]), dtype=parameter.dtype,
                       device=parameter.device)
    return latents, torch.full((batch,), 1, dtype=torch.long, device=parameter.device), text, text


def engine_forward(engine: Callable, dataloader: DataLoader, evaluate: Callable, config: dict[str, Any]) -> dict:
    dtype = torch.float16 if config["fp16"] else torch.float32

    def denoise(inputs: list[torch.Tensor]) -> tuple[torch.Tensor, float]:
        outputs, foo = engine([t.to(dtype) if t.is_floating_point() else t for t in inputs])
        return outputs[0].float(), foo
    return generate(denoise, dataloader, evaluate, config, "inference")


def generate(denoise: Denoise, dataloader: DataLoader, evaluate: Callable, config: dict[str, Any],
             what: str) -> dict[str, Any]:
    """FlagPerf's forward.py loop over `repeat` passes: the pipeline's result dict (items are images; accuracy is the
    mean CLIP score; predictions the images' CLIP scores rounded to whole points, what `agreement` compares)."""
    device = str(config.get("device") or "cpu")
    tokenizer = parts.build_tokenizer(config)
    encoder = parts.build_text_encoder(config).eval().to(device)
    vae = parts.build_vae(config).eval().to(device)  # type: ignore[arg-type]  # diffusers' wrapper hides `self`
    scorer = parts.build_scorer(config, tokenizer, device)
    noise_scheduler, steps = parts.scheduler(config), parts.timesteps(config)
    side = parts.latent_scale(config)
    shape = (int(config["latent_channels"]), int(config["height"]) // side, int(config["width"]) // side)
    generator = torch.Generator().manual_seed(int(config["seed"]))

    def encode(prompts: list[str]) -> torch.Tensor:
        ids = tokenizer(prompts, padding="max_length", max_length=tokenizer.model_max_length, truncation=True,
                        return_tensors="pt").input_ids
        return encoder(ids.to(device))[0].float().cpu()

    core = foo_total = 0.0
    items, scores, predictions = 0, [], []
    started = time.perf_counter()
    for epoch in range(int(config["repeat"])):
        for step, prompts in enumerate(dataloader, 1):
            stop_request.check()
            with torch.inference_mode():
                prompted, unconditioned = encode(list(prompts)), encode([""] * len(prompts))
                latents = torch.randn((len(prompts), *shape), generator=generator)
                noise_scheduler.set_timesteps(len(steps))
                for t in steps:
                    tick = time.perf_counter()
                    noise, foo = denoise([latents, t.long().repeat(len(prompts)), prompted, unconditioned])
                    core += time.perf_counter() - tick - foo
                    foo_total += foo
                    latents = noise_scheduler.step(noise, t, latents, return_dict=False)[0]
                images = vae.decode((latents / parts.LATENT_SCALE).to(device)).sample
            batch_scores = evaluate(scorer, images, list(prompts))
            scores += batch_scores
            items += len(prompts)
            if epoch == 0:
                predictions += [round(s) for s in batch_scores]
            if step % int(config["log_freq"]) == 0:
                print(f"{what}: repeat {epoch + 1} step {step}: {items / (time.perf_counter() - started):.3f} images/s")
    return {"items": items, "whole_s": time.perf_counter() - started, "core_s": core, "foo_s": foo_total,
            "accuracy": sum(scores) / max(len(scores), 1), "predictions": predictions}
