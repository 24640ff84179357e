"""ONNX Runtime on the CPU: the cpu vendor's inference engine, the reference every engine is compared with.

InferModel contract (docs/adapting-a-chip.md): __init__(config, onnx_path, model) builds the engine once (not timed);
__call__(inputs) takes the case's inputs (CPU tensors) and returns (outputs as CPU tensors, foo_time), foo_time
being seconds spent on anything but inference (0.0 here).

"Compiling" is ONNX Runtime's graph optimisation, saved as <onnx>.ort.onnx; exist_compiler_path loads such a
file instead of optimising again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import torch


class InferModel:
    def __init__(self, config: dict[str, Any], onnx_path: str, model: Any = None) -> None:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        threads = int(os.environ.get("OMP_NUM_THREADS") or 0)
        options.intra_op_num_threads = threads  # 0: ONNX Runtime's default (one per physical core)
        existing = config.get("exist_compiler_path")
        if existing:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # optimised already
            source = existing
        else:
            source = onnx_path
            options.optimized_model_filepath = str(Path(config["work_dir"]) / (Path(onnx_path).stem + ".ort.onnx"))
        self.compiled_path = existing or options.optimized_model_filepath
        self.session = ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.fp16 = bool(config.get("fp16"))  # the exported graph's precision decides; inputs follow it

    def __call__(self, inputs: list[torch.Tensor]) -> tuple[list[torch.Tensor], float]:
        feed = {name: tensor.numpy() for name, tensor in zip(self.input_names, inputs)}
        outputs = self.session.run(None, feed)
        return [torch.from_numpy(np.asarray(o)) for o in outputs], 0.0
