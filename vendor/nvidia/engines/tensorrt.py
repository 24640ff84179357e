"""NVIDIA TensorRT 10: the standard engine of the inference cases. Parses the ONNX file, builds an engine (fp16 when the
config says so) with one optimisation profile for batch sizes 1..batch_size, serializes it next to the ONNX
file as <name>.plan, reloads it and executes it with execute_async_v3 on torch-owned CUDA buffers.
exist_compiler_path loads a serialized engine (.plan/.engine/.trt) instead of building one.

InferModel contract: __init__(config, onnx_path, model) builds once (not timed); __call__(inputs) returns
(outputs as CPU tensors, foo_time=0.0).

Unverified: written to the TensorRT 10 Python API; no machine with TensorRT has run it yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tensorrt as trt
import torch

WORKSPACE_BYTES = 4 << 30
_DTYPES = {trt.float32: torch.float32, trt.float16: torch.float16, trt.int32: torch.int32, trt.int64: torch.int64,
           trt.bool: torch.bool, trt.int8: torch.int8}


class InferModel:
    def __init__(self, config: dict[str, Any], onnx_path: str, model: Any = None) -> None:
        self.logger = trt.Logger(trt.Logger.WARNING)
        existing = config.get("exist_compiler_path")
        if existing:
            serialized = Path(existing).read_bytes()
        else:
            serialized = self._build(config, onnx_path)
            plan = Path(config["work_dir"]) / (Path(onnx_path).stem + ".plan")
            plan.write_bytes(serialized)
            self.compiled_path = str(plan)
        self.engine = trt.Runtime(self.logger).deserialize_cuda_engine(serialized)
        if self.engine is None:
            raise RuntimeError(f"TensorRT could not deserialize the engine ({existing or 'just built'})")
        self.context = self.engine.create_execution_context()
        names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        self.inputs = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        self.outputs = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
        self.stream = torch.cuda.Stream()

    def _build(self, config: dict[str, Any], onnx_path: str) -> bytes:
        builder = trt.Builder(self.logger)
        network = builder.create_network(0)  # TensorRT 10: explicit batch is the only mode
        parser = trt.OnnxParser(network, self.logger)
        # From the file, not its bytes: a model over ONNX's 2 GB (stable_diffusion_v1_4's fp32 UNet) keeps its weights
        # in external data files beside it, which only a parse that knows the path finds.
        if not parser.parse_from_file(str(onnx_path)):
            errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
            raise RuntimeError(f"TensorRT cannot parse {onnx_path}: {errors}")
        build_config = builder.create_builder_config()
        build_config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, WORKSPACE_BYTES)
        if config.get("fp16"):
            build_config.set_flag(trt.BuilderFlag.FP16)
        profile = builder.create_optimization_profile()
        batch = int(config["batch_size"])
        for i in range(network.num_inputs):
            tensor = network.get_input(i)
            rest = tuple(tensor.shape)[1:]
            profile.set_shape(tensor.name, (1, *rest), (batch, *rest), (batch, *rest))
        build_config.add_optimization_profile(profile)
        serialized = builder.build_serialized_network(network, build_config)
        if serialized is None:
            raise RuntimeError(f"TensorRT could not build an engine from {onnx_path}")
        return bytes(serialized)

    def __call__(self, inputs: list[torch.Tensor]) -> tuple[list[torch.Tensor], float]:
        keep = []
        for name, tensor in zip(self.inputs, inputs):
            wanted = _DTYPES[self.engine.get_tensor_dtype(name)]
            device_tensor = tensor.to("cuda", dtype=wanted, non_blocking=True).contiguous()
            keep.append(device_tensor)
            self.context.set_input_shape(name, tuple(device_tensor.shape))
            self.context.set_tensor_address(name, device_tensor.data_ptr())
        outputs = []
        for name in self.outputs:
            shape = tuple(self.context.get_tensor_shape(name))
            out = torch.empty(shape, dtype=_DTYPES[self.engine.get_tensor_dtype(name)], device="cuda")
            self.context.set_tensor_address(name, out.data_ptr())
            outputs.append(out)
        self.stream.wait_stream(torch.cuda.current_stream())  # the input copies ran on torch's stream
        if not self.context.execute_async_v3(self.stream.cuda_stream):
            raise RuntimeError("TensorRT execution failed")
        self.stream.synchronize()
        return [o.float().cpu() for o in outputs], 0.0
