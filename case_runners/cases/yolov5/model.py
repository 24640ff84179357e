"""YOLOv5 (v6.0 and later: a 6x6 stem, C3 blocks, SPPF) in plain torch, built by the layer table of Ultralytics'
yolov5l.yaml: 25 layers, each (inputs, repeats, block, arguments), scaled by depth_multiple (repeats) and
width_multiple (channels, rounded up to a multiple of 8). yolov5l is 1.0 / 1.0; yolov5s 0.33 / 0.5.

The modules carry Ultralytics' names (model.<i>.conv, .bn, .cv1, .m.<j>, Detect's model.24.m.<k> and anchors), so a
state dict taken from a yolov5l.pt (`torch.load(...)["model"].float().state_dict()`) loads as it is. The forward pass
is the exported model's: boxes decoded in pixels of the input, (batch, 3 x (s/8)² + 3 x (s/16)² + 3 x (s/32)², 5 +
classes) = (batch, 25200, 85) at 640: centre x, y, width, height, objectness, class probabilities.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

# COCO anchors (width, height in pixels) of the three detection levels, strides 8, 16, 32 (yolov5l.yaml's).
ANCHORS = ((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119), (116, 90, 156, 198, 373, 326))
STRIDES = (8, 16, 32)
# yolov5l.yaml's layers: (input layers, repeats, block, arguments); channels before width_multiple, -1 the layer before.
BACKBONE: tuple[tuple[Any, int, str, tuple], ...] = (
    (-1, 1, "Conv", (64, 6, 2, 2)),  # 0  P1/2
    (-1, 1, "Conv", (128, 3, 2)),  # 1  P2/4
    (-1, 3, "C3", (128,)),  # 2
    (-1, 1, "Conv", (256, 3, 2)),  # 3  P3/8
    (-1, 6, "C3", (256,)),  # 4
    (-1, 1, "Conv", (512, 3, 2)),  # 5  P4/16
    (-1, 9, "C3", (512,)),  # 6
    (-1, 1, "Conv", (1024, 3, 2)),  # 7  P5/32
    (-1, 3, "C3", (1024,)),  # 8
    (-1, 1, "SPPF", (1024, 5)),  # 9
)
HEAD: tuple[tuple[Any, int, str, tuple], ...] = (
    (-1, 1, "Conv", (512, 1, 1)),  # 10
    (-1, 1, "Upsample", ()),  # 11
    ((-1, 6), 1, "Concat", ()),  # 12 with the backbone's P4
    (-1, 3, "C3", (512, False)),  # 13
    (-1, 1, "Conv", (256, 1, 1)),  # 14
    (-1, 1, "Upsample", ()),  # 15
    ((-1, 4), 1, "Concat", ()),  # 16 with the backbone's P3
    (-1, 3, "C3", (256, False)),  # 17 P3/8 (small objects)
    (-1, 1, "Conv", (256, 3, 2)),  # 18
    ((-1, 14), 1, "Concat", ()),  # 19 with the head's P4
    (-1, 3, "C3", (512, False)),  # 20 P4/16 (medium)
    (-1, 1, "Conv", (512, 3, 2)),  # 21
    ((-1, 10), 1, "Concat", ()),  # 22 with the head's P5
    (-1, 3, "C3", (1024, False)),  # 23 P5/32 (large)
    ((17, 20, 23), 1, "Detect", ()),  # 24
)


class Conv(nn.Module):
    """Convolution (no bias, 'same' padding), batch norm, SiLU."""

    def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1, p: int | None = None) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2 if p is None else p, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c1: int, c2: int, shortcut: bool = True) -> None:
        super().__init__()
        self.cv1, self.cv2 = Conv(c1, c2, 1), Conv(c2, c2, 3)
        self.add = shortcut and c1 == c2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3(nn.Module):
    """CSP bottleneck with three convolutions: n bottlenecks on half the channels, concatenated with the other half."""

    def __init__(self, c1: int, c2: int, n: int = 1, shortcut: bool = True) -> None:
        super().__init__()
        hidden = c2 // 2
        self.cv1, self.cv2, self.cv3 = Conv(c1, hidden, 1), Conv(c1, hidden, 1), Conv(2 * hidden, c2, 1)
        self.m = nn.Sequential(*(Bottleneck(hidden, hidden, shortcut) for _ in range(n)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class SPPF(nn.Module):
    """Spatial pyramid pooling, fast: three chained k x k max pools concatenated."""

    def __init__(self, c1: int, c2: int, k: int = 5) -> None:
        super().__init__()
        hidden = c1 // 2
        self.cv1, self.cv2 = Conv(c1, hidden, 1), Conv(hidden * 4, c2, 1)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class Concat(nn.Module):
    def forward(self, xs: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat(xs, 1)


class Detect(nn.Module):
    """A 1x1 convolution per level to 3 anchors x (5 + classes), decoded: xy = (2 sigmoid - 0.5 + cell) x stride,
    wh = (2 sigmoid)² x anchor, objectness and classes sigmoid."""

    def __init__(self, num_classes: int, channels: list[int]) -> None:
        super().__init__()
        self.no, self.na = num_classes + 5, len(ANCHORS[0]) // 2
        self.m = nn.ModuleList(nn.Conv2d(c, self.no * self.na, 1) for c in channels)
        # Ultralytics keeps the anchors in units of each level's stride
        self.anchors: torch.Tensor
        self.register_buffer("anchors", torch.tensor(ANCHORS, dtype=torch.float32).view(len(ANCHORS), -1, 2)
                             / torch.tensor(STRIDES, dtype=torch.float32).view(-1, 1, 1))

    def forward(self, xs: list[torch.Tensor]) -> torch.Tensor:
        out = []
        for level, (conv, x) in enumerate(zip(self.m, xs, strict=True)):
            y = conv(x)
            batch, _, ny, nx = y.shape
            y = y.view(batch, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).sigmoid()
            gy, gx = torch.meshgrid(torch.arange(ny, device=y.device, dtype=y.dtype),
                                    torch.arange(nx, device=y.device, dtype=y.dtype), indexing="ij")
            grid = torch.stack((gx, gy), 2).view(1, 1, ny, nx, 2)
            anchor = (self.anchors[level] * STRIDES[level]).to(y.dtype).view(1, self.na, 1, 1, 2)
            xy = (y[..., :2] * 2 - 0.5 + grid) * STRIDES[level]
            wh = (y[..., 2:4] * 2) ** 2 * anchor
            out.append(torch.cat((xy, wh, y[..., 4:]), -1).view(batch, -1, self.no))
        return torch.cat(out, 1)


def scaled_channels(channels: int, width_multiple: float) -> int:
    return int(math.ceil(channels * width_multiple / 8) * 8)


class YOLOv5(nn.Module):
    def __init__(self, num_classes: int = 80, depth_multiple: float = 1.0, width_multiple: float = 1.0) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        channels = [3]  # the output channels of each layer, the input's first
        self.inputs: list[tuple[int, ...]] = []
        for index, (source, repeats, block, args) in enumerate(BACKBONE + HEAD):
            sources = (source,) if isinstance(source, int) else tuple(source)
            sources = tuple(s if s >= 0 else index + s for s in sources)
            c1 = channels[sources[0] + 1]
            n = max(round(repeats * depth_multiple), 1) if repeats > 1 else repeats
            module: nn.Module
            if block in ("Conv", "C3", "SPPF"):
                c2, rest = scaled_channels(args[0], width_multiple), args[1:]
                if block == "Conv":
                    module = Conv(c1, c2, *rest)
                elif block == "C3":
                    module = C3(c1, c2, n, *rest)
                else:
                    module = SPPF(c1, c2, *rest)
            elif block == "Upsample":
                module, c2 = nn.Upsample(scale_factor=2, mode="nearest"), c1
            elif block == "Concat":
                module, c2 = Concat(), sum(channels[s + 1] for s in sources)
            else:  # Detect
                module, c2 = Detect(num_classes, [channels[s + 1] for s in sources]), 0
            layers.append(module)
            channels.append(c2)
            self.inputs.append(sources)
        self.model = nn.ModuleList(layers)
        self.keep = {s for sources in self.inputs for s in sources}  # outputs a later layer reads again

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        outputs: dict[int, torch.Tensor] = {}
        x = images
        for index, (module, sources) in enumerate(zip(self.model, self.inputs, strict=True)):
            if len(sources) > 1:
                x = module([outputs[s] for s in sources])
            elif sources[0] != index - 1:
                x = module(outputs[sources[0]])
            else:
                x = module(x)
            if index in self.keep:
                outputs[index] = x
        return x
