"""torch.compile (TorchInductor) on the case's torch model: the nvidia vendor's in-process compiler.

InferModel contract (docs/adapting-a-chip.md): __init__(config, onnx_path, model) prepares the engine once (not timed);
__call__(inputs) returns (outputs as CPU tensors, foo_time). Inductor compiles on the first call of each input
shape (as torch-tensorrt does in FlagPerf): that call is a warm-up whose time is foo_time, so compilation is
reported, not mixed into the core throughput. With inductor_dynamic true (FlagPerf's dynamo_dynamic) the first
graph has dynamic shapes, so a new prompt length does not compile again: its warm-up call only runs it.

It needs the torch model: with no_validation there is none, and exist_compiler_path has no meaning here.
Runs on CUDA when there is a GPU, else on the CPU (the inductor C++ backend, for tests).
"""

from __future__ import annotations

import time
from typing import Any

import torch


def _dynamic(value: Any) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"inductor_dynamic is {value!r}: true (dynamic shapes from the first compile), false "
                         f"(one graph per input shape) or null (torch's default)")
    return value


class InferModel:
    needs_onnx = False  # set exist_onnx_path to anything but null to skip the export

    def __init__(self, config: dict[str, Any], onnx_path: str, model: torch.nn.Module | None = None) -> None:
        if model is None:
            raise ValueError("the inductor engine compiles the case's torch model; it cannot run with "
                             "no_validation: true")
        if config.get("exist_compiler_path"):
            raise ValueError("the inductor engine compiles in process; exist_compiler_path must be null")
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        # inductor_mode and inductor_dynamic: keys a vendor's file adds (FlagPerf's dynamo_mode, dynamo_dynamic);
        # dynamic None is torch's default (static, then dynamic at the first shape that recompiles)
        self.model = torch.compile(model.to(self.device).eval(), mode=config.get("inductor_mode", "default"),
                                   dynamic=_dynamic(config.get("inductor_dynamic")))
        self.shapes: set[tuple] = set()

    def _run(self, inputs: list[torch.Tensor]) -> torch.Tensor | tuple:
        with torch.inference_mode():
            out = self.model(*[t.to(self.device, non_blocking=True) for t in inputs])
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        return out

    def __call__(self, inputs: list[torch.Tensor]) -> tuple[list[torch.Tensor], float]:
        foo = 0.0
        shape = tuple(tuple(t.shape) for t in inputs)
        if shape not in self.shapes:  # compile (or recompile) for this shape outside the core time
            tick = time.perf_counter()
            self._run(inputs)
            foo = time.perf_counter() - tick
            self.shapes.add(shape)
        out = self._run(inputs)
        outputs = list(out) if isinstance(out, (tuple, list)) else [out]
        return [o.float().cpu() for o in outputs], foo
