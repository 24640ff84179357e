"""BiT's released weights (the .npz files of storage.googleapis.com/bit_models, BiT-M-R152x2.npz for FlagPerf's case)
into transformers' BitForImageClassification: TensorFlow's names and HWIO kernels to the model's parameters. The
head is not loaded: BiT fine-tunes from a zero head (FlagPerf's zero_head=True)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import numpy as np
import torch
from torch import nn

PREFIX = "resnet/"
CONV = "standardized_conv2d/kernel"


def npz_names(model: nn.Module) -> dict[str, str]:
    """{parameter name of the model: its name in BiT's .npz}, the backbone's (every parameter but the classifier's)."""
    names = {"bit.embedder.convolution.weight": f"{PREFIX}root_block/{CONV}",
             "bit.norm.weight": f"{PREFIX}group_norm/gamma", "bit.norm.bias": f"{PREFIX}group_norm/beta"}
    stages = cast(nn.ModuleList, model.get_submodule("bit.encoder.stages"))
    for s, stage in enumerate(stages):
        for u, _ in enumerate(cast(nn.ModuleList, stage.layers)):
            ours, theirs = f"bit.encoder.stages.{s}.layers.{u}.", f"{PREFIX}block{s + 1}/unit{u + 1:02d}/"
            for i, part in enumerate("abc", start=1):
                names[f"{ours}conv{i}.weight"] = f"{theirs}{part}/{CONV}"
                names[f"{ours}norm{i}.weight"] = f"{theirs}{part}/group_norm/gamma"
                names[f"{ours}norm{i}.bias"] = f"{theirs}{part}/group_norm/beta"
            if u == 0:
                names[f"{ours}downsample.conv.weight"] = f"{theirs}a/proj/{CONV}"
    return names


def load_bit_npz(model: nn.Module, path: Path) -> int:
    """Copy the backbone of BiT's .npz at `path` into `model`; the number of tensors copied. ValueError naming the
    file and the tensor when one is missing or of another shape (another BiT variant than the model's)."""
    with np.load(path) as weights:
        params = dict(model.named_parameters())
        with torch.no_grad():
            for ours, theirs in npz_names(model).items():
                if theirs not in weights:
                    raise ValueError(f"{path}: no tensor {theirs} (the model's {ours}): not a BiT ResNetV2 .npz of "
                                     f"this layout")
                value = weights[theirs]
                tensor = torch.from_numpy(value.transpose(3, 2, 0, 1) if value.ndim == 4 else value)  # HWIO: OIHW
                if tensor.shape != params[ours].shape:
                    raise ValueError(f"{path}: {theirs} is {tuple(tensor.shape)}, the model's {ours} "
                                     f"{tuple(params[ours].shape)}: another BiT variant than depths/hidden_sizes say")
                params[ours].copy_(tensor)
    return len(npz_names(model))
