"""EfficientNetV2-S (Tan & Le, "EfficientNetV2: Smaller Models and Faster Training", 2021, Table 4), written from the
paper's architecture table: a 3x3 stem, three Fused-MBConv stages, three MBConv stages with squeeze-and-excitation,
a 1x1 head to 1280 channels, dropout and the classifier; batch norm (eps 1e-3) and SiLU throughout, stochastic depth
growing linearly with the block's index. At width and depth 1.0 it has the 21,458,488 parameters (1000 classes) of
the published EfficientNetV2-S that FlagPerf trains (torchvision's efficientnet_v2_s). `width` and `depth` shrink it
for smoke runs as EfficientNet scales: channels x width rounded to a multiple of 8, blocks ceil(layers x depth).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn


class Stage(NamedTuple):
    fused: bool  # Fused-MBConv (one full kxk convolution) or MBConv (1x1 expand, depthwise kxk, SE)
    expand: int  # expansion ratio of the block's hidden channels
    kernel: int
    stride: int  # of the stage's first block
    channels: int  # output channels
    layers: int  # blocks


# Table 4 of the paper: EfficientNetV2-S.
STAGES: tuple[Stage, ...] = (
    Stage(True, 1, 3, 1, 24, 2),
    Stage(True, 4, 3, 2, 48, 4),
    Stage(True, 4, 3, 2, 64, 4),
    Stage(False, 4, 3, 2, 128, 6),
    Stage(False, 6, 3, 1, 160, 9),
    Stage(False, 6, 3, 2, 256, 15),
)
STEM_CHANNELS = 24
HEAD_CHANNELS = 1280
SE_RATIO = 0.25  # squeeze to a quarter of the block's input channels
BN_EPS = 1e-3
PUBLISHED_PARAMS = 21_458_488  # EfficientNetV2-S at 1000 classes (torchvision's model card)


def round_channels(channels: float, divisor: int = 8) -> int:
    """Channels rounded to the nearest multiple of `divisor`, never below 90 % of `channels` (EfficientNet's rule)."""
    rounded = max(divisor, int(channels + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * channels else rounded


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1, act: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(cout, eps=BN_EPS)]
    if act:
        layers.append(nn.SiLU(inplace=True))
    return nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int, squeeze: int) -> None:
        super().__init__()
        self.reduce = nn.Conv2d(channels, squeeze, 1)
        self.expand = nn.Conv2d(squeeze, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = x.mean((2, 3), keepdim=True)
        return x * torch.sigmoid(self.expand(nn.functional.silu(self.reduce(scale))))


class Block(nn.Module):
    """One Fused-MBConv or MBConv block; the residual (with stochastic depth) where shape is kept."""

    def __init__(self, stage: Stage, cin: int, cout: int, stride: int, drop: float) -> None:
        super().__init__()
        hidden = cin * stage.expand
        layers: list[nn.Module]
        if stage.fused:
            layers = ([conv_bn(cin, hidden, stage.kernel, stride), conv_bn(hidden, cout, 1, act=False)]
                      if stage.expand != 1 else [conv_bn(cin, cout, stage.kernel, stride)])
        else:
            layers = [conv_bn(cin, hidden, 1), conv_bn(hidden, hidden, stage.kernel, stride, groups=hidden),
                      SqueezeExcite(hidden, max(1, int(cin * SE_RATIO))), conv_bn(hidden, cout, 1, act=False)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout
        self.drop = drop

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.body(x)
        if not self.residual:
            return out
        if self.training and self.drop > 0:  # stochastic depth: drop the whole branch per sample
            keep = torch.empty(out.shape[0], 1, 1, 1, dtype=out.dtype, device=out.device).bernoulli_(1 - self.drop)
            out = out * keep / (1 - self.drop)
        return x + out


class EfficientNetV2(nn.Module):
    def __init__(self, num_classes: int = 1000, width: float = 1.0, depth: float = 1.0,
                 drop_path_rate: float = 0.2, dropout: float = 0.2) -> None:
        super().__init__()
        stages = [s._replace(channels=round_channels(s.channels * width), layers=math.ceil(s.layers * depth))
                  for s in STAGES]
        cin = round_channels(STEM_CHANNELS * width)
        total = sum(s.layers for s in stages)
        blocks: list[nn.Module] = [conv_bn(3, cin, 3, 2)]
        for stage in stages:
            for i in range(stage.layers):
                drop = drop_path_rate * len(blocks[1:]) / total
                blocks.append(Block(stage, cin, stage.channels, stage.stride if i == 0 else 1, drop))
                cin = stage.channels
        head = round_channels(HEAD_CHANNELS * width)
        blocks.append(conv_bn(cin, head, 1))
        self.features = nn.Sequential(*blocks)
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(head, num_classes))
        self._init_weights()

    def _init_weights(self) -> None:
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                bound = 1.0 / math.sqrt(m.out_features)
                nn.init.uniform_(m.weight, -bound, bound)
                nn.init.zeros_(m.bias)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(images).mean((2, 3)))
