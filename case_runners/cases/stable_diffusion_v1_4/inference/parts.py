"""stable_diffusion_v1_4's models: SD v1.4's UNet, VAE and CLIP text encoder (diffusers' and transformers' classes,
built from the numbers of parameters.yaml, which are the configs of CompVis/stable-diffusion-v1-4), or loaded from a
weights folder in diffusers' layout (unet/, vae/, text_encoder/, tokenizer/); the CLIP model of the CLIP score, from
a weights folder in transformers' layout or built at ViT-L/14's shape; FlagPerf's scheduler.

Random weights are seeded, the same in both paths of a round, so validation and inference agree; they measure
throughput only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

# diffusers' own modules: its package namespace is lazy, which type checkers cannot see through
from diffusers.models.autoencoders.autoencoder_kl import AutoencoderKL
from diffusers.models.unets.unet_2d_condition import UNet2DConditionModel
from diffusers.schedulers.scheduling_ddim import DDIMScheduler
from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel, CLIPTextConfig, CLIPTextModel, CLIPTokenizer
from transformers.convert_slow_tokenizer import bytes_to_unicode

# SD v1.4's latents are the VAE's, scaled by this (its vae/config.json scaling_factor; FlagPerf's 1 / 0.18215).
LATENT_SCALE = 0.18215
START, END = "<|startoftext|>", "<|endoftext|>"


class GuidedUNet(torch.nn.Module):
    """One denoising step of a batch with classifier-free guidance: the UNet on the unconditioned and the prompted
    halves at once (FlagPerf's batch of 2 x batch_size), combined with guidance_scale. The part that is timed as
    core, exported to ONNX and compiled; its inputs all have the batch first."""

    def __init__(self, unet: UNet2DConditionModel, guidance_scale: float) -> None:
        super().__init__()
        self.unet, self.guidance_scale = unet, guidance_scale

    def forward(self, latents: torch.Tensor, timestep: torch.Tensor, prompted: torch.Tensor,
                unconditioned: torch.Tensor) -> torch.Tensor:
        both = self.unet(torch.cat([latents, latents]), torch.cat([timestep, timestep]),
                         torch.cat([unconditioned, prompted])).sample
        plain, guided = both.chunk(2)
        return plain + self.guidance_scale * (guided - plain)


def weights_dir(config: dict[str, Any], key: str) -> Path | None:
    """The weights folder `key` names under the data dir (or an absolute path), when it is there."""
    if not config.get("data_dir"):
        return None
    path = Path(config["data_dir"]) / str(config[key])
    if not path.is_dir():
        print(f"{key}: {path} is not there; random weights (throughput only)")
        return None
    return path


def latent_scale(config: dict[str, Any]) -> int:
    """Image pixels per latent pixel: the VAE halves the image at each block but the last (8 for SD v1.4)."""
    return 2 ** (len(config["vae_channels"]) - 1)


def build_unet(config: dict[str, Any]) -> UNet2DConditionModel:
    folder = weights_dir(config, "weights")
    if folder:
        return UNet2DConditionModel.from_pretrained(folder, subfolder="unet")
    levels = len(config["unet_channels"])
    torch.manual_seed(int(config["seed"]))
    return UNet2DConditionModel(
        sample_size=int(config["height"]) // latent_scale(config), in_channels=int(config["latent_channels"]),
        out_channels=int(config["latent_channels"]), block_out_channels=tuple(config["unet_channels"]),
        layers_per_block=int(config["unet_layers_per_block"]),
        down_block_types=("CrossAttnDownBlock2D",) * (levels - 1) + ("DownBlock2D",),
        up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * (levels - 1),
        cross_attention_dim=int(config["text_hidden_size"]), attention_head_dim=int(config["unet_attention_head_dim"]))


def build_vae(config: dict[str, Any]) -> AutoencoderKL:
    folder = weights_dir(config, "weights")
    if folder:
        return AutoencoderKL.from_pretrained(folder, subfolder="vae")
    levels = len(config["vae_channels"])
    torch.manual_seed(int(config["seed"]) + 1)
    return AutoencoderKL(
        in_channels=3, out_channels=3, latent_channels=int(config["latent_channels"]),
        block_out_channels=tuple(config["vae_channels"]), layers_per_block=int(config["vae_layers_per_block"]),
        down_block_types=("DownEncoderBlock2D",) * levels, up_block_types=("UpDecoderBlock2D",) * levels,
        sample_size=int(config["height"]))


def text_config(config: dict[str, Any]) -> CLIPTextConfig:
    """SD v1.4's text encoder: CLIP ViT-L/14's text tower."""
    return CLIPTextConfig(vocab_size=int(config["vocab_size"]), hidden_size=int(config["text_hidden_size"]),
                          intermediate_size=int(config["text_intermediate_size"]),
                          num_hidden_layers=int(config["text_layers"]), num_attention_heads=int(config["text_heads"]),
                          max_position_embeddings=int(config["prompt_max_len"]), hidden_act="quick_gelu",
                          projection_dim=int(config["clip_projection_dim"]))


def build_text_encoder(config: dict[str, Any]) -> CLIPTextModel:
    folder = weights_dir(config, "weights")
    if folder:
        return CLIPTextModel.from_pretrained(folder, subfolder="text_encoder")
    torch.manual_seed(int(config["seed"]) + 2)
    return CLIPTextModel(text_config(config))


def build_tokenizer(config: dict[str, Any]) -> CLIPTokenizer:
    folder = weights_dir(config, "weights")
    if folder:
        return CLIPTokenizer.from_pretrained(folder, subfolder="tokenizer")
    return byte_tokenizer(int(config["prompt_max_len"]))


def byte_tokenizer(max_length: int) -> CLIPTokenizer:
    """CLIP's BPE tokenizer with CLIP's byte alphabet and no merges (a token a character): without CLIP's
    vocabulary the prompts are still tokenized the real way, only into more tokens."""
    alphabet = list(bytes_to_unicode().values())
    vocab = {token: i for i, token in enumerate([*alphabet, *(c + "</w>" for c in alphabet), START, END])}
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=max_length)


def scheduler(config: dict[str, Any]) -> DDIMScheduler:
    """FlagPerf's scheduler (forward.py): DDIM with SD's scaled-linear betas."""
    return DDIMScheduler(num_train_timesteps=int(config["num_train_timesteps"]), beta_start=0.00085, beta_end=0.012,
                         beta_schedule="scaled_linear", clip_sample=False, set_alpha_to_one=False)


def timesteps(config: dict[str, Any]) -> torch.Tensor:
    """FlagPerf's timesteps: num_inference_steps evenly from T - T // steps down to 0."""
    train, steps = int(config["num_train_timesteps"]), int(config["num_inference_steps"])
    return torch.linspace(train - train // steps, 0, steps).int()


@dataclass
class ClipScorer:
    """FlagPerf's metric, torchmetrics' CLIPScore: 100 x the cosine of CLIP's image and text embeddings, at least 0,
    one image and its prompt at a time."""

    model: CLIPModel
    images: CLIPImageProcessorPil
    tokenizer: CLIPTokenizer

    def __call__(self, images: torch.Tensor, prompts: list[str]) -> list[float]:
        """images: uint8 (N, H, W, 3), as FlagPerf's evaluator hands them over."""
        device = next(self.model.parameters()).device
        pixels = self.images(images=list(images.numpy()), return_tensors="pt")["pixel_values"]
        text = self.tokenizer(prompts, padding=True, truncation=True, return_tensors="pt")
        with torch.inference_mode():
            out = self.model(input_ids=text["input_ids"].to(device), attention_mask=text["attention_mask"].to(device),
                             pixel_values=pixels.to(device))
        cosine = (out.image_embeds * out.text_embeds).sum(dim=-1)
        return [max(100.0 * float(c), 0.0) for c in cosine]


def build_scorer(config: dict[str, Any], tokenizer: CLIPTokenizer, device: str) -> ClipScorer:
    """The CLIP model of eval_weights (transformers' layout: CLIPModel with its processor's files), or one of CLIP
    ViT-L/14's shape with random weights (the text tower the text encoder's shape) and the case's tokenizer."""
    folder = weights_dir(config, "eval_weights")
    if folder:
        model = CLIPModel.from_pretrained(folder)
        images, tokenizer = CLIPImageProcessorPil.from_pretrained(folder), CLIPTokenizer.from_pretrained(folder)
    else:
        torch.manual_seed(int(config["seed"]) + 3)
        size = int(config["clip_image_size"])
        vision = {"hidden_size": int(config["clip_vision_hidden_size"]),
                  "intermediate_size": 4 * int(config["clip_vision_hidden_size"]),
                  "num_hidden_layers": int(config["clip_vision_layers"]),
                  "num_attention_heads": int(config["clip_vision_heads"]), "image_size": size,
                  "patch_size": int(config["clip_patch_size"]), "hidden_act": "quick_gelu"}
        model = CLIPModel(CLIPConfig(text_config=text_config(config).to_dict(), vision_config=vision,
                                     projection_dim=int(config["clip_projection_dim"])))
        images = CLIPImageProcessorPil(size={"shortest_edge": size}, crop_size={"height": size, "width": size})
    return ClipScorer(model.eval().to(device), images, tokenizer)
