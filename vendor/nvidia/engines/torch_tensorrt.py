"""torch-TensorRT (torch_tensorrt.compile, its dynamo path) on the case's torch model: FlagPerf's torchtrt engine.

InferModel contract (docs/adapting-a-chip.md): __init__(config, onnx_path, model) takes the model onto the GPU (not
timed); __call__(inputs) returns (outputs as CPU tensors, foo_time). Like inductor.py, it compiles on the first call
of each input shape: that compilation is foo_time, reported apart from the core throughput. fp16: true lets
TensorRT pick fp16 kernels beside fp32 ones, as FlagPerf's engine does.

It needs the torch model (not with no_validation); exist_compiler_path has no meaning here. Pinned in
torch_tensorrt-requirements.txt. Unverified: written to torch-TensorRT 2's API; no machine with a GPU has run it.
"""

from __future__ import annotations

import time
from typing import Any

import torch
import torch_tensorrt


class InferModel:
    needs_onnx = False  # set exist_onnx_path to anything but null to skip the export

    def __init__(self, config: dict[str, Any], onnx_path: str, model: torch.nn.Module | None = None) -> None:
        if model is None:
            raise ValueError("the torch_tensorrt engine compiles the case's torch model; it cannot run with "
                             "no_validation: true")
        if config.get("exist_compiler_path"):
            raise ValueError("the torch_tensorrt engine compiles in process; exist_compiler_path must be null")
        self.model = model.to("cuda").eval()
        self.precisions = {torch.float32, torch.float16} if config.get("fp16") else {torch.float32}
        self.compiled: dict[tuple, Any] = {}  # per input shapes

    def __call__(self, inputs: list[torch.Tensor]) -> tuple[list[torch.Tensor], float]:
        on_device = [t.to("cuda", non_blocking=True) for t in inputs]
        shape = tuple(tuple(t.shape) for t in on_device)
        foo = 0.0
        if shape not in self.compiled:  # compile for this shape outside the core time
            tick = time.perf_counter()
            self.compiled[shape] = torch_tensorrt.compile(self.model, ir="dynamo", inputs=on_device,
                                                          enabled_precisions=self.precisions, truncate_double=True)
            torch.cuda.synchronize()
            foo = time.perf_counter() - tick
        with torch.inference_mode():
            out = self.compiled[shape](*on_device)
        torch.cuda.synchronize()
        outputs = list(out) if isinstance(out, (tuple, list)) else [out]
        return [o.float().cpu() for o in outputs], foo
