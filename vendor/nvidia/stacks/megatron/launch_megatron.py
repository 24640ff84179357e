"""The megatron stack's program: perfplay's inputs (the JSON file $PERFPLAY_STACK_INPUTS names; the case's
stack_inputs and the rank's) as Megatron-LM's pretrain_gpt.py arguments, then pretrain_gpt.py in this process
(os.execv: the same pid, which perfplay's watchdog and cleanup follow). The rank's environment already holds
RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT as torchrun would set them.

The arguments follow FlagPerf's training/benchmarks/llama3_8B/megatron/pretrain_llama3.sh (Apache-2.0; the flags,
not its code); the shape's every number comes from the inputs (perfplay's one definition, cases/llama/shapes.py).
Standard library only: it runs in the vendor's image, beside Megatron-LM.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any

INPUTS_ENV = "PERFPLAY_STACK_INPUTS"
MEGATRON_PATH_ENV = "MEGATRON_PATH"
MEGATRON_PATH = "/workspace/Megatron-LM"  # NGC PyTorch's, FlagPerf's megatron_path
# The shape families megatron-core's GPT model builds as perfplay's do: Llama's, and Mixtral's routed experts.
# Not Qwen2-MoE (its shared expert's sigmoid gate and q/k/v biases), GLM's half-head rotary, Baichuan's ALiBi.
FAMILIES = ("llama", "mixtral")
PRECISION_FLAGS = {"bf16": ["--bf16"], "fp16": ["--fp16"], "fp32": [], "tf32": []}


class InputsError(ValueError):
    """Inputs this stack cannot run, said before Megatron starts."""


def model_args(model: dict[str, Any], seq_len: int) -> list[str]:
    """The GPT model of the shape: rotary positions, RMSNorm, SwiGLU, no linear biases, grouped-query attention; a
    mixture of experts with its routed experts."""
    if model["family"] not in FAMILIES:
        raise InputsError(f"model {model['name']}: the {model['family']} family is not one megatron-core's GPT "
                          f"model builds as perfplay does (this stack runs {', '.join(FAMILIES)})")
    args = ["--use-mcore-models", "--num-layers", str(model["layers"]), "--hidden-size", str(model["hidden"]),
            "--num-attention-heads", str(model["heads"]), "--seq-length", str(seq_len),
            "--max-position-embeddings", str(model["max_positions"]), "--position-embedding-type", "rope",
            "--rotary-base", f"{model['rope_theta']:g}", "--normalization", "RMSNorm",
            "--norm-epsilon", f"{model['norm_eps']:g}", "--swiglu", "--disable-bias-linear",
            "--attention-softmax-in-fp32", "--vocab-size", str(model["vocab"])]
    if model["kv_heads"] != model["heads"]:
        args += ["--group-query-attention", "--num-query-groups", str(model["kv_heads"])]
    if not model["tied"]:
        args += ["--untie-embeddings-and-output-weights"]
    if model["experts"]:
        args += ["--num-experts", str(model["experts"]), "--moe-router-topk", str(model["experts_per_token"]),
                 "--moe-ffn-hidden-size", str(model["expert_intermediate"])]
        if model.get("router_aux_loss_coef"):  # FlagPerf's mixtral_8x7B: --moe-aux-loss-coeff 1e-2
            args += ["--moe-router-load-balancing-type", "aux_loss",
                     "--moe-aux-loss-coeff", f"{model['router_aux_loss_coef']:g}"]
    else:
        args += ["--ffn-hidden-size", str(model["intermediate"])]
    return args


def data_args(data: dict[str, Any]) -> list[str]:
    """A Megatron indexed dataset (its prefix and --split) as it is, or Megatron's mock data for a synthetic round;
    perfplay's own token files are not a format Megatron reads."""
    if data["dir"] is None:
        return ["--mock-data", "--tokenizer-type", "NullTokenizer"]
    if data["format"] != "megatron_indexed":
        raise InputsError(f"data dir {data['dir']}: {data['format']} token files, which Megatron does not read; "
                          f"give it a Megatron indexed dataset (<prefix>.bin and <prefix>.idx)")
    return ["--data-path", data["prefix"], "--split", ",".join(f"{w:g}" for w in data["data_split"]),
            "--tokenizer-type", "NullTokenizer"]


def training_args(inputs: dict[str, Any]) -> list[str]:
    """The workload (global batch, steps, the optimizer, its schedule, the seed, the precision) and the stack's
    parallelism (its params). Megatron takes the global batch and the micro batch and accumulates the rest."""
    stack, opt, schedule = inputs["stack_params"], inputs["optimizer"], inputs["schedule"]
    tp, pp = int(stack["tensor_parallel"]), int(stack["pipeline_parallel"])
    world, micro, global_batch = int(inputs["world_size"]), int(stack["micro_batch"]), int(inputs["global_batch"])
    if world % (tp * pp):
        raise InputsError(f"{world} ranks are not a multiple of tensor_parallel {tp} x pipeline_parallel {pp}")
    if global_batch % (micro * (world // (tp * pp))):
        raise InputsError(f"the global batch {global_batch} is not a multiple of micro_batch {micro} x "
                          f"{world // (tp * pp)} data-parallel ranks")
    steps = int(inputs["max_steps"])
    args = ["--micro-batch-size", str(micro), "--global-batch-size", str(global_batch), "--train-iters", str(steps),
            "--lr", f"{schedule['lr']:g}", "--min-lr", f"{schedule['min_lr']:g}", "--lr-decay-style", "cosine",
            "--lr-decay-iters", str(schedule["decay_steps"]), "--lr-warmup-iters", str(schedule["warmup_steps"]),
            "--weight-decay", f"{opt['weight_decay']:g}", "--adam-beta1", f"{opt['betas'][0]:g}",
            "--adam-beta2", f"{opt['betas'][1]:g}", "--adam-eps", f"{opt['eps']:g}",
            "--clip-grad", f"{opt['max_grad_norm']:g}", "--seed", str(inputs["seed"]),
            "--tensor-model-parallel-size", str(tp), "--pipeline-model-parallel-size", str(pp),
            "--use-distributed-optimizer", "--transformer-impl", str(stack["transformer_impl"]),
            *PRECISION_FLAGS[inputs["precision"]], "--log-interval", "1",
            # one evaluation, at the end, of the held-out samples the contract names
            "--eval-interval", str(steps), "--eval-iters", str(max(1, math.ceil(inputs["eval"]["samples"] /
                                                                             global_batch)))]
    if tp > 1 and stack["sequence_parallel"]:
        args += ["--sequence-parallel"]
    if stack["recompute"]:
        args += ["--recompute-activations"]
    if inputs["model"]["experts"]:
        args += moe_parallel_args(stack)
    return args


def moe_parallel_args(stack: dict[str, Any]) -> list[str]:
    """A mixture of experts' parallelism: the experts over expert_parallel ranks, each over expert_tensor_parallel
    (0: Megatron's default, tensor_parallel's), grouped GEMMs, the token dispatcher. The plan has checked that they
    split the experts and the ranks (perfplay's plan/global_batch.py and the llama case's shapes.py)."""
    args = ["--expert-model-parallel-size", str(int(stack["expert_parallel"])),
            "--moe-token-dispatcher-type", str(stack["moe_token_dispatcher"])]
    if int(stack["expert_tensor_parallel"]):
        args += ["--expert-tensor-parallel-size", str(int(stack["expert_tensor_parallel"]))]
    if stack["moe_grouped_gemm"]:
        args += ["--moe-grouped-gemm"]
    return args


def megatron_argv(inputs: dict[str, Any], megatron_path: str) -> list[str]:
    """pretrain_gpt.py's command line for the inputs."""
    return [sys.executable, str(Path(megatron_path) / "pretrain_gpt.py"),
            *model_args(inputs["model"], int(inputs["seq_len"])), *data_args(inputs["data"]),
            *training_args(inputs)]


def main() -> None:
    inputs = json.loads(Path(os.environ[INPUTS_ENV]).read_text(encoding="utf-8"))
    path = os.environ.get(MEGATRON_PATH_ENV) or MEGATRON_PATH
    if not (Path(path) / "pretrain_gpt.py").is_file():
        sys.exit(f"launch_megatron.py: no pretrain_gpt.py in {path} (${MEGATRON_PATH_ENV}: Megatron-LM's checkout "
                 f"in the image)")
    try:
        argv = megatron_argv(inputs, path)
    except InputsError as exc:
        sys.exit(f"launch_megatron.py: {exc}")
    print(" ".join(argv[1:]), flush=True)  # the command, in the rank's log
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"  # sequence parallelism's overlap, as FlagPerf's script sets it
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [path, os.environ.get("PYTHONPATH")]))
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
