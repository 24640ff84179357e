"""The global batch the contract owns (the trainer param global_batch, plan/global_batch.py): the model cases set
FlagPerf's, the data-parallel ranks (ranks / the stack's tensor x pipeline parallel) split it, and micro batch x
grad_accumulation x data-parallel ranks == global_batch is checked at plan time, each error naming the key, the file
and the values that would fit; a functional round runs the vendor's parallelism at one micro batch. The real runs:
test_stacks.py (global 6 on 2 CPU ranks on each built-in stack), test_megatron_stack.py (44 on 32 GPUs at TP 8 x
PP 4: the inputs and Megatron's arguments)."""

from __future__ import annotations

from pathlib import Path

import pytest

from case_runners.core.paths import project_root
from case_runners.plan.config.selection import parse_selections
from case_runners.plan.config.shared_params import batch_split
from case_runners.plan.layering import resolve
from case_runners.plan.run_plan import make_plan
from case_runners.rank.env import DistEnv
from case_runners.tasks.training.vendor_stack import stack_inputs
from case_runners.vendors.description import load_vendor
from case_runners.vendors.vendor_stacks import load_stack

ROOT = project_root()
LLAMA3_8B = "case_runners/cases/llama/models/llama3_8b.yaml"
OVERRIDES = "run overrides (perfplay_cases[0].overrides)"


def plan(item: dict) -> dict:
    result = make_plan({"vendor": "nvidia", "cases": [item]}, check=True, root=ROOT)
    assert result["ok"], result["errors"]
    return result["cases"][0]


def plan_error(item: dict) -> str:
    result = make_plan({"vendor": "nvidia", "cases": [item]}, check=True, root=ROOT)
    assert not result["ok"]
    (error,) = result["errors"]
    return str(error)


def key(name: str, **extra: object) -> dict:
    """A selection of a case key (case:framework:hardware:nnodes:nproc:1) with extra fields (overrides, functional)."""
    case, framework, hardware, nnodes, nproc, _ = name.split(":")
    return {"case": case, "framework": framework, "hardware": hardware, "nnodes": int(nnodes), "nproc": int(nproc),
            **extra}


def test_the_model_case_sets_flagperfs_global_batch_and_the_plan_gives_each_rank_its_share():
    params = plan(key("llama3_8b:pytorch:H100:2:8:1"))["params"]
    assert (params["global_batch"], params["batch_size"], params["grad_accumulation"]) == (512, 32, 16)
    config = plan(key("llama3_8b:megatron:H100:1:8:1"))  # TP 2: 4 data-parallel ranks of 128
    assert (config["params"]["batch_size"], config["params"]["micro_batch"], config["params"]["grad_accumulation"]) \
        == (128, 1, 128)
    assert config["provenance"]["batch_size"] == LLAMA3_8B and config["standard"] is True


def test_a_global_batch_the_data_parallel_ranks_do_not_divide_names_the_key_the_file_and_what_fits():
    error = plan_error(key("llama3_8b:pytorch:H100:1:8:1", overrides={"global_batch": 44}))
    assert error == (f"{OVERRIDES}: key 'global_batch': 44 sequences a step is not a multiple of the 8 data-parallel "
                     f"ranks (8 ranks): each data-parallel rank trains whole sequences. Values that fit: global_batch "
                     f"40 or 48 (a multiple of 8), or data-parallel ranks dividing 44 (1, 2, 4: fewer ranks, or "
                     f"tensor x pipeline parallelism on a stack that has it)")
    # the megatron stack's TP 2 leaves 4 data-parallel ranks, which do divide it
    params = plan(key("llama3_8b:megatron:H100:1:8:1", overrides={"global_batch": 44, "grad_accumulation": 11}))
    assert (params["params"]["batch_size"], params["non_standard"]) == (11, ["global_batch"])


def test_a_model_parallelism_the_ranks_do_not_divide_is_refused():
    error = plan_error(key("llama3_8b:megatron:H100:1:8:1", overrides={"tensor_parallel": 3}))
    assert error == (f"{OVERRIDES}: key 'tensor_parallel': tensor_parallel 3 x pipeline_parallel 1 = 3 ranks a model "
                     f"replica spans do not divide the 8 ranks of the selection (model-parallel sizes that divide "
                     f"them: 1, 2, 4, 8)")


def test_expert_parallelism_must_split_the_experts_and_its_grid_the_ranks():
    """The megatron stack's experts lay their own grid over the ranks (expert tensor x expert x pipeline): where it
    does not divide them, or expert_parallel does not divide the model's experts, the plan says which values fit."""
    mixtral = "mixtral_8x7b:megatron:H100:4:8:1"  # nvidia's: TP 8, PP 2, EP 8 with expert_tensor_parallel 1
    assert plan(key(mixtral))["params"]["expert_parallel"] == 8
    error = plan_error(key(mixtral, overrides={"expert_tensor_parallel": 0}))
    assert error == (f"{OVERRIDES}: key 'expert_tensor_parallel': expert_tensor_parallel 8 x expert_parallel 8 x "
                     f"pipeline_parallel 2 (expert_tensor_parallel 0: tensor_parallel's) = 128 ranks the experts' grid "
                     f"spans do not divide the 32 ranks of the selection: give expert_parallel one of 1, 2, or a "
                     f"smaller expert_tensor_parallel (1: each expert whole on its rank)")
    assert plan(key(mixtral, overrides={"expert_parallel": 4}))["params"]["expert_parallel"] == 4  # 1 x 4 x 2 | 32
    error = plan_error(key(mixtral, overrides={"expert_parallel": 16}))
    assert error == (f"{OVERRIDES}: key 'expert_parallel' is 16, but model 'mixtral_8x7b' cannot be split so (its 8 "
                     f"experts a layer); allowed: 1, 2, 4, 8")
    error = plan_error(key("llama3_8b:megatron:H100:1:8:1", overrides={"expert_parallel": 2}))
    assert error == (f"{OVERRIDES}: key 'expert_parallel' is 2, but model 'llama3_8b' cannot be split so (it is "
                     f"dense: no experts to split); allowed: 1")


def test_a_batch_size_that_is_not_the_ranks_share_is_refused():
    error = plan_error(key("llama3_8b:pytorch:H100:1:8:1", overrides={"batch_size": 32}))
    assert error == (f"{OVERRIDES}: key 'batch_size': 32 is not the data-parallel rank's share of global_batch 512 "
                     f"({LLAMA3_8B}) over 8 data-parallel ranks (8 ranks): 64; leave batch_size out (the plan sets "
                     f"it) and split it with grad_accumulation (allowed: 64)")


def test_a_stacks_micro_batch_times_the_accumulation_must_make_the_global_batch():
    error = plan_error(key("llama3_8b:megatron:H100:1:8:1", overrides={"micro_batch": 5}))
    file = "vendor/nvidia/cases/llama3_8b/megatron/config_H100x1x8.yaml"
    assert error == (f"{file}: key 'grad_accumulation': micro_batch 5 ({OVERRIDES}) x grad_accumulation 128 x 4 "
                     f"data-parallel ranks (8 ranks / (tensor_parallel 2 x pipeline_parallel 1)) is 2560 sequences a "
                     f"step, not the global batch 512 ({LLAMA3_8B}). Values that fit (micro_batch x "
                     f"grad_accumulation): 1 x 128, 2 x 64, 4 x 32, 8 x 16, 16 x 8, 32 x 4, 64 x 2, 128 x 1")
    # on a built-in stack the micro batch is batch_size / grad_accumulation, which must divide the rank's share
    error = plan_error(key("llama3_8b:pytorch:H100:1:8:1", overrides={"grad_accumulation": 5}))
    assert error.startswith(f"{OVERRIDES}: key 'grad_accumulation': 5 does not divide batch_size 64 (set in "
                            f"{LLAMA3_8B})")


def test_without_a_global_batch_it_is_batch_size_times_the_data_parallel_ranks():
    """llama2_7b's (and chatglm3_6b's) is FlagPerf's micro 1 x ranks at every scale: global_batch 0."""
    params = plan(key("llama2_7b:pytorch:H100:2:8:1"))["params"]
    assert params["global_batch"] == 0
    split = batch_split(params, 16)
    assert (split.global_batch, split.data_parallel, split.per_rank, split.micro) == (16, 16, 1, 1)
    assert batch_split({"batch_size": 6, "grad_accumulation": 2, "tensor_parallel": 2, "global_batch": 0}, 8) \
        .global_batch == 24  # 4 data-parallel ranks of 6


def inputs(name: str, tmp_path: Path, **selection: object) -> dict:
    """Rank 0's inputs on the megatron stack for a selection of the key (synthetic data)."""
    (sel,), errors = parse_selections([key(name, overrides={"synthetic": True}, **selection)])
    assert not errors
    config, problems = resolve(sel, load_vendor("nvidia", ROOT), ROOT)
    assert config is not None, problems
    return stack_inputs(config, load_stack(ROOT, "nvidia", "megatron"),
                        DistEnv(rank=0, local_rank=0, world_size=config.nnodes * config.nproc,
                                local_world_size=config.nproc), tmp_path)


@pytest.mark.parametrize("name, functional, expected", [
    ("mixtral_8x7b:megatron:H100:4:8:1", False, (1200, 2, 600, 3, 200)),
    ("mixtral_8x7b:megatron:H100:4:8:1", True, (6, 2, 3, 3, 1)),  # TP 8 x PP 2 kept, one micro batch of 3
    ("llama3_8b:megatron:H100:1:8:1", True, (4, 4, 1, 1, 1)),
])
def test_a_vendor_stack_is_given_the_real_global_batch_and_its_split(tmp_path: Path, name, functional, expected):
    got = inputs(name, tmp_path, functional=functional)
    assert (got["global_batch"], got["data_parallel"], got["batch_per_rank"], got["micro_batch_per_rank"],
            got["grad_accumulation"]) == expected
    assert (got["stack_params"]["tensor_parallel"], got["stack_params"]["pipeline_parallel"]) == \
        ((8, 2) if name.startswith("mixtral") else (2, 1))


def test_a_functional_round_runs_the_vendors_parallelism_at_one_micro_batch():
    """check-vendor --functional (a selection's functional: true) on nvidia's llama3_8b: the vendor's FSDP2 and
    activation checkpointing on 8 ranks, one micro batch of 2 a rank, no accumulation, 5 steps; not standard."""
    standard = plan(key("llama3_8b:pytorch:H100:1:8:1"))
    config = plan(key("llama3_8b:pytorch:H100:1:8:1", functional=True))
    params = config["params"]
    assert (params["batch_size"], params["grad_accumulation"], params["global_batch"], params["max_steps"]) == \
        (2, 1, 0, 5)
    assert (params["data_parallel"], params["activation_checkpointing"], params["amp"]) == \
        (standard["params"]["data_parallel"], True, True)
    assert config["standard"] is False and {"batch_size", "global_batch"} <= set(config["non_standard"])
    assert config["provenance"]["batch_size"] == "case_runners/cases/llama/config.yaml (functional)"


def test_a_later_layers_global_batch_wins_over_an_earlier_layers_batch_size():
    """The cpu vendor's llama 1x2 config sets batch_size 8; a run override's global_batch 6 gives each rank 3, and a
    batch_size of the same layer that is not the share is refused."""
    result = make_plan({"vendor": "cpu", "cases": [{"case": "llama", "nproc": 2, "overrides": {"global_batch": 6}}]},
                       check=True, root=ROOT)
    assert result["ok"], result["errors"]
    assert result["cases"][0]["params"]["batch_size"] == 3
    result = make_plan({"vendor": "cpu", "cases": [{"case": "llama", "nproc": 2, "overrides": {
        "global_batch": 6, "batch_size": 4}}]}, check=True, root=ROOT)
    assert [str(e) for e in result["errors"]] == [
        f"{OVERRIDES}: key 'batch_size': 4 is not the data-parallel rank's share of global_batch 6 ({OVERRIDES}) over "
        f"2 data-parallel ranks (2 ranks): 3; leave batch_size out (the plan sets it) and split it with "
        f"grad_accumulation (allowed: 3)"]
