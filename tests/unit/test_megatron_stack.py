"""nvidia's megatron stack (vendor/nvidia/stacks/megatron): perfplay's inputs for a planned model case as Megatron-LM's
pretrain_gpt.py arguments, FlagPerf's llama3_8B script's flags among them, and the program exec'ed in the rank's
process. Megatron itself needs CUDA: a stand-in pretrain_gpt.py records what it was given (no GPU here)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from case_runners.core.paths import project_root
from case_runners.plan.config.selection import parse_selections
from case_runners.plan.layering import resolve
from case_runners.rank.env import DistEnv
from case_runners.tasks.training.vendor_stack import INPUTS_ENV, stack_inputs
from case_runners.vendors.description import load_vendor
from case_runners.vendors.vendor_stacks import load_stack
from flagperf_tree import checkout
from process_helpers import SHORT_S

REPO = project_root()
FOLDER = REPO / "vendor/nvidia/stacks/megatron"


def launcher():
    spec = importlib.util.spec_from_file_location("launch_megatron", FOLDER / "launch_megatron.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def inputs_of(key: str, tmp_path: Path, rank: int = 0, root: Path = REPO, **overrides: object) -> dict:
    """The inputs rank `rank` of the key's round hands the stack (the plan's resolved config of the checkout at
    `root`, synthetic data)."""
    case, framework, hardware, nnodes, nproc, _ = key.split(":")
    selections, errors = parse_selections([{"case": case, "framework": framework, "hardware": hardware,
                                            "nnodes": int(nnodes), "nproc": int(nproc),
                                            "overrides": {"synthetic": True, **overrides}}])
    assert not errors, errors
    (selection,) = selections
    config, problems = resolve(selection, load_vendor("nvidia", root), root)
    assert config is not None, problems
    stack = load_stack(root, "nvidia", "megatron")
    world = config.nnodes * config.nproc
    return stack_inputs(config, stack, DistEnv(rank=rank, local_rank=rank % config.nproc, world_size=world,
                                               local_world_size=config.nproc), tmp_path)


def with_config(tmp_path: Path, model: str, name: str, text: str) -> Path:
    """A checkout's copy (its cases, nvidia's folder) with one more megatron config of the model case."""
    root = checkout(tmp_path / "checkout")
    folder = root / "vendor/nvidia/cases" / model / "megatron"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return root


def flags(argv: list[str]) -> dict[str, str | None]:
    """--name value pairs (a flag without a value: None)."""
    out: dict[str, str | None] = {}
    for i, arg in enumerate(argv):
        if arg.startswith("--"):
            following = argv[i + 1] if i + 1 < len(argv) else "--"
            out[arg] = None if following.startswith("--") else following
    return out


def test_llama3_8b_on_8_h100s_gets_flagperfs_megatron_arguments(tmp_path):
    """nvidia's llama3_8b megatron config (TP 2, its global batch 512): the model, the workload and the parallelism
    of FlagPerf's training/benchmarks/llama3_8B/megatron/pretrain_llama3.sh."""
    argv = launcher().megatron_argv(inputs_of("llama3_8b:megatron:H100:1:8:1", tmp_path, rank=7), "/opt/Megatron-LM")
    assert argv[:2] == [sys.executable, "/opt/Megatron-LM/pretrain_gpt.py"]
    got = flags(argv)
    expected = {"--num-layers": "32", "--hidden-size": "4096", "--ffn-hidden-size": "14336",
                "--num-attention-heads": "32", "--group-query-attention": None, "--num-query-groups": "8",
                "--seq-length": "8192", "--max-position-embeddings": "8192", "--swiglu": None,
                "--normalization": "RMSNorm", "--norm-epsilon": "1e-05", "--global-batch-size": "512",
                "--attention-softmax-in-fp32": None, "--lr": "1e-05", "--train-iters": "300",
                "--lr-decay-iters": "300", "--lr-decay-style": "cosine", "--min-lr": "1e-06", "--weight-decay": "0.1",
                "--clip-grad": "1", "--adam-beta1": "0.9", "--adam-beta2": "0.95", "--micro-batch-size": "1",
                "--tensor-model-parallel-size": "2", "--pipeline-model-parallel-size": "1", "--sequence-parallel": None,
                "--bf16": None, "--transformer-impl": "transformer_engine", "--use-distributed-optimizer": None,
                "--use-mcore-models": None, "--log-interval": "1", "--rotary-base": "500000",
                "--untie-embeddings-and-output-weights": None, "--vocab-size": "128256", "--mock-data": None}
    assert {name: got.get(name, "absent") for name in expected} == expected
    assert "--recompute-activations" not in got and "--num-experts" not in got


def test_a_mixture_of_experts_and_the_stacks_params(tmp_path):
    """nvidia's mixtral_8x7b megatron config (FlagPerf's TP 8, PP 2, localbs 3): its routed experts, FlagPerf's
    global batch 1200 over 2 data-parallel ranks in micro batches of 3, recompute; no sequence parallelism where a
    run override turns it off."""
    inputs = inputs_of("mixtral_8x7b:megatron:H100:4:8:1", tmp_path, sequence_parallel=False)
    assert {k: inputs[k] for k in ("global_batch", "data_parallel", "batch_per_rank", "grad_accumulation",
                                   "micro_batch_per_rank")} == {
        "global_batch": 1200, "data_parallel": 2, "batch_per_rank": 600, "grad_accumulation": 200,
        "micro_batch_per_rank": 3}
    got = flags(launcher().megatron_argv(inputs, "/m"))
    assert {k: got.get(k) for k in ("--num-experts", "--moe-router-topk", "--moe-ffn-hidden-size",
                                    "--global-batch-size", "--micro-batch-size", "--tensor-model-parallel-size",
                                    "--pipeline-model-parallel-size")} == {
        "--num-experts": "8", "--moe-router-topk": "2", "--moe-ffn-hidden-size": "14336",
        "--global-batch-size": "1200", "--micro-batch-size": "3", "--tensor-model-parallel-size": "8",
        "--pipeline-model-parallel-size": "2"}
    assert "--recompute-activations" in got and "--sequence-parallel" not in got and "--ffn-hidden-size" not in got
    assert got["--transformer-impl"] == "transformer_engine"  # FlagPerf's scripts', the default
    local = flags(launcher().megatron_argv(inputs_of("mixtral_8x7b:megatron:H100:4:8:1", tmp_path,
                                                     transformer_impl="local"), "/m"))
    assert local["--transformer-impl"] == "local"  # megatron-core's own layers: no Transformer Engine
    # FlagPerf's expert parallelism, each expert whole on its rank (megatron-core's expert grid: 1 x 8 x PP 2 | 32)
    assert {k: got.get(k, "absent") for k in ("--expert-model-parallel-size", "--expert-tensor-parallel-size",
                                              "--moe-grouped-gemm", "--moe-token-dispatcher-type")} == {
        "--expert-model-parallel-size": "8", "--expert-tensor-parallel-size": "1", "--moe-grouped-gemm": None,
        "--moe-token-dispatcher-type": "allgather"}


def test_a_dense_model_gets_no_expert_flags_and_expert_tensor_parallel_0_is_megatrons_default(tmp_path):
    """The MoE flags only for a model with experts; expert_tensor_parallel 0 leaves Megatron's default (TP's)."""
    dense = flags(launcher().megatron_argv(inputs_of("llama3_8b:megatron:H100:1:8:1", tmp_path), "/m"))
    assert not [flag for flag in dense if "expert" in flag or flag.startswith("--moe")]
    moe = flags(launcher().megatron_argv(inputs_of("mixtral_8x7b:megatron:H100:4:8:1", tmp_path,
                                                   expert_tensor_parallel=0, expert_parallel=2,
                                                   moe_token_dispatcher="alltoall", moe_grouped_gemm=False), "/m"))
    assert {k: moe.get(k, "absent") for k in ("--expert-model-parallel-size", "--expert-tensor-parallel-size",
                                              "--moe-grouped-gemm", "--moe-token-dispatcher-type")} == {
        "--expert-model-parallel-size": "2", "--expert-tensor-parallel-size": "absent",
        "--moe-grouped-gemm": "absent", "--moe-token-dispatcher-type": "alltoall"}


def test_llama2_70b_trains_flagperfs_global_batch_of_44_on_32_gpus(tmp_path):
    """FlagPerf's llama2_70B (global batch 44 on 32 GPUs, TP 8 x PP 4): one data-parallel rank accumulating 44
    micro batches, which 32 data-parallel ranks could not split; Megatron is given 44."""
    inputs = inputs_of("llama2_70b:megatron:H100:4:8:1", tmp_path, rank=31)
    assert (inputs["global_batch"], inputs["data_parallel"], inputs["micro_batch_per_rank"],
            inputs["grad_accumulation"]) == (44, 1, 1, 44)
    got = flags(launcher().megatron_argv(inputs, "/m"))
    assert (got["--global-batch-size"], got["--micro-batch-size"], got["--tensor-model-parallel-size"],
            got["--pipeline-model-parallel-size"], got["--train-iters"]) == ("44", "1", "8", "4", "554")


def test_what_megatron_cannot_run_is_said_before_it_starts(tmp_path):
    """A family megatron-core does not build as perfplay does; the parallelism the ranks or the global batch do not
    split is the plan's error (tests/unit/test_global_batch.py)."""
    root = with_config(tmp_path, "baichuan2_13b", "config_H100x1x8.yaml", "micro_batch: 1\ngrad_accumulation: 128\n")
    module = launcher()
    with pytest.raises(module.InputsError) as raised:
        module.megatron_argv(inputs_of("baichuan2_13b:megatron:H100:1:8:1", tmp_path, root=root), "/m")
    assert str(raised.value) == ("model baichuan2_13b: the baichuan family is not one megatron-core's GPT model builds "
                                 "as perfplay does (this stack runs llama, mixtral)")


def test_the_launcher_execs_pretrain_gpt_in_its_own_process(tmp_path):
    """With $MEGATRON_PATH a stand-in checkout: pretrain_gpt.py runs in the launcher's process (the pid perfplay
    watches) with the arguments, Megatron-LM on the Python path and CUDA_DEVICE_MAX_CONNECTIONS=1; without one, the
    launcher says where it looked."""
    megatron = tmp_path / "Megatron-LM"
    megatron.mkdir()
    (megatron / "pretrain_gpt.py").write_text(
        "import json, os, sys\njson.dump({'pid': os.getpid(), 'argv': sys.argv[1:], 'path': os.environ['PYTHONPATH'],"
        " 'cuda': os.environ['CUDA_DEVICE_MAX_CONNECTIONS']}, open(sys.argv[0] + '.json', 'w'))\n")
    inputs = inputs_of("llama3_8b:megatron:H100:1:8:1", tmp_path)
    (tmp_path / "inputs.json").write_text(json.dumps(inputs))
    env = {**os.environ, INPUTS_ENV: str(tmp_path / "inputs.json"), "MEGATRON_PATH": str(megatron)}
    process = subprocess.Popen([sys.executable, str(FOLDER / "launch_megatron.py")], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = process.communicate(timeout=SHORT_S)
    finally:
        process.kill()
    assert process.returncode == 0, err
    seen = json.loads((megatron / "pretrain_gpt.py.json").read_text())
    assert seen["pid"] == process.pid
    assert seen["argv"] == launcher().megatron_argv(inputs, str(megatron))[2:]
    assert seen["path"].split(os.pathsep)[0] == str(megatron) and seen["cuda"] == "1"
    assert out.startswith(f"{megatron / 'pretrain_gpt.py'} --use-mcore-models ")  # the command, in the rank's log
    done = subprocess.run([sys.executable, str(FOLDER / "launch_megatron.py")], capture_output=True, text=True,
                          env={**env, "MEGATRON_PATH": str(tmp_path / "none")}, timeout=SHORT_S, check=False)
    assert done.returncode == 1
    assert done.stderr.strip() == f"launch_megatron.py: no pretrain_gpt.py in {tmp_path / 'none'} ($MEGATRON_PATH: " \
                                  "Megatron-LM's checkout in the image)"
