"""The test chip's inference engine "testrt" (the InferModel engine contract): the torch model run in inference
mode, standing in for a vendor's graph compiler."""

from __future__ import annotations

from typing import Any

import torch


class InferModel:
    needs_onnx = False  # it runs the torch model, not the ONNX file

    def __init__(self, config: dict[str, Any], onnx_path: str, model: Any = None) -> None:
        if model is None:
            raise ValueError("testrt runs the torch model: set no_validation false")
        self.model = model.eval()
        self.compiled_path = None

    def __call__(self, inputs: list[torch.Tensor]) -> tuple[list[torch.Tensor], float]:
        with torch.inference_mode():
            return [self.model(*inputs).cpu()], 0.0
