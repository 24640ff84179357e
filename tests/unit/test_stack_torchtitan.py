"""The torchtitan stack (tasks/training/stacks/torchtitan.py) on the llama case's tiny shape: torchtitan's llama3 model
built from the case's model computes the case model's logits (its q/k RoPE permutation and every weight mapped);
three steps of the real trainer through the stack's points give the losses of the pytorch stack (the trainer's own
code) from the same seed; on two gloo ranks, torchtitan's FSDP2 (create_optimizer, model_to_ddp, backward) gives
the loss and gradient of one rank on both ranks' batches, and the trainer on it the pytorch stack's DDP losses; on
four, tensor_parallel 2 (torchtitan's tensor and sequence parallelism within each pair, FSDP2 over the pairs) the
same; what the stack cannot run is refused by name. The ranks are forked from the test process: a fresh process would
spend most of its time importing torch, transformers and torchtitan again."""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from case_runners.cases.llama import shapes
from case_runners.cases.llama.case import TARGET_METRIC, build_case
from case_runners.cases.llama.model import build_model, model_config
from case_runners.core.paths import project_root
from case_runners.plan.config.selection import parse_selections
from case_runners.plan.config.shared_params import TRAINER_PARAMS, model_parallel
from case_runners.plan.layering import resolve
from case_runners.rank.driver.events import EventLogger, read_events
from case_runners.records.resolved import Target
from case_runners.tasks.training.adapter import POINTS, AdapterContext, TrainerAdapter
from case_runners.tasks.training.case_api import RunContext
from case_runners.tasks.training.trainer import Trainer, seed_everything
from case_runners.vendors.description import load_vendor
from process_helpers import REAPED_S, RUN_S

pytest.importorskip("torchtitan")  # in CI (CI=true) a skip fails the suite: CI installs torchtitan

from case_runners.tasks.training.stacks import torchtitan as stack  # noqa: E402 - needs torchtitan

REPO = project_root()
STACK_FILE = "case_runners/tasks/training/stacks/torchtitan.py"
SEQ, BATCH, STEPS, SEED = 32, 4, 3, 1234
# The tiny shape (8 heads over 4 KV heads, tied embedding) with a small vocab; one synthetic batch, trained on again
# every step so that the loss falls.
PARAMS = {"model": "tiny", "vocab_size": 512, "seq_len": SEQ, "batch_size": BATCH, "eval_batch_size": BATCH,
          "eval_samples": BATCH, "synthetic_samples": BATCH, "seed": SEED, "synthetic": True, "num_workers": 0,
          "lr": 3e-3, "lr_min": 0.0, "weight_decay": 0.1, "adam_beta1": 0.9, "adam_beta2": 0.95, "adam_eps": 1e-8,
          "max_grad_norm": 1.0, "warmup_steps": 1, "max_steps": STEPS, "log_freq": 1, "eval_every_steps": 0,
          "eval_every_epochs": 0}
# fp32 on the CPU, measured (torch 2.13, torchtitan 0.3.0): torchtitan's logits differ from transformers' by at most
# 6e-7 (a model without the q/k permutation by 6e-2); the losses of the two stacks and of 1 and 2 ranks agree to
# float rounding. 1e-4 is far above rounding and far below a step's change of the loss (> 0.01 at lr 3e-3).
LOGITS_TOL = 1e-5
LOSS_TOL = 1e-4


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """One torch thread, as OMP_NUM_THREADS=1 gives a rank: at this size more threads only wait on each other."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def params(**overrides: Any) -> dict[str, Any]:
    defaults = {name: spec["default"] for name, spec in TRAINER_PARAMS.items() if "default" in spec}
    return {**defaults, **PARAMS, **overrides}


def stack_adapter() -> TrainerAdapter:
    """The stack's points as the trainer calls them (what a stack's loader gives)."""
    return TrainerAdapter(STACK_FILE, {name: getattr(stack, name) for name in POINTS if hasattr(stack, name)})


def context(work_dir: Path, rank: int = 0, world_size: int = 1, **overrides: Any) -> tuple[Any, AdapterContext]:
    """(the llama case, an adapter context) of one rank of a run with the overrides."""
    (work_dir / "logs").mkdir(parents=True, exist_ok=True)
    p = params(**overrides)
    log = EventLogger(work_dir / "logs", rank, 1, stream=None)
    run = RunContext(rank=rank, local_rank=rank, world_size=world_size, device=torch.device("cpu"), data_dir=None,
                     log=log, work_dir=work_dir, model_parallel=model_parallel(p))
    case = build_case(p, run)
    actx = AdapterContext(device=run.device, rank=rank, local_rank=rank, world_size=world_size, params=p,
                          precision="fp32", amp=False, amp_dtype=None, max_grad_norm=1.0, case=case, log=log)
    return case, actx


def fixed_batches(ranks: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One (input_ids, labels) batch of BATCH sequences per rank, shifted labels (the case's data)."""
    g = torch.Generator().manual_seed(SEED)
    tokens = torch.randint(0, PARAMS["vocab_size"], (ranks * BATCH, SEQ + 1), generator=g)
    return [(part[:, :-1], part[:, 1:]) for part in tokens.split(BATCH)]


# The tiny shape as it is, and untied with 2 KV heads, 1b's RoPE theta and another norm eps (the other branches of
# the mapping: its own head, k's permutation over fewer heads).
VARIANTS = {"tiny": {}, "untied": {"tie_word_embeddings": False, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
                                   "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0}}}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_converted_model_computes_the_case_models_logits(tmp_path, variant):
    import transformers

    torch.manual_seed(SEED)
    _, actx = context(tmp_path)
    config = model_config(PARAMS)
    for key, value in VARIANTS[variant].items():
        setattr(config, key, value)
    model = transformers.LlamaForCausalLM(config)
    converted = stack.convert_model(model, actx)
    assert type(converted.decoder).__module__.startswith("torchtitan.models.llama3")
    assert sum(p.numel() for p in converted.parameters()) == sum(p.numel() for p in model.parameters())
    tied = converted.decoder.lm_head.weight is converted.decoder.tok_embeddings.weight
    assert tied == config.tie_word_embeddings == (variant == "tiny")
    input_ids, _ = fixed_batches(1)[0]
    with torch.no_grad():
        expected, got = model(input_ids=input_ids).logits, converted(input_ids=input_ids).logits
    assert got.shape == expected.shape == (BATCH, SEQ, PARAMS["vocab_size"])
    assert (got - expected).abs().max().item() <= LOGITS_TOL


def run_trainer(work_dir: Path, adapter: TrainerAdapter | None, rank: int = 0, world_size: int = 1,
                **overrides: Any) -> dict[str, Any]:
    """A real trainer run of the llama case on one rank of world_size, with the stack's points or the trainer's
    own code: its step losses and result. The data is one batch per data-parallel rank."""
    seed_everything(SEED)
    data_ranks = world_size // model_parallel(overrides)
    data = {"synthetic_samples": data_ranks * BATCH, "eval_samples": data_ranks * BATCH, **overrides}
    case, _ = context(work_dir, rank, world_size, **data)
    trainer = Trainer(case, params(**data), case.ctx, Target(metric=TARGET_METRIC, value=0.0, higher_is_better=False),
                      **({"adapter": adapter} if adapter else {}))
    result = trainer.run().to_json()
    events = read_events(work_dir / "logs" / f"rank{rank}.events.jsonl")
    return {"losses": [e["value"]["loss"] for e in events if e["event"] == "STEP_END"], "result": result}


def test_three_trainer_steps_through_the_points_give_the_pytorch_stacks_losses(tmp_path):
    pytorch_run, titan_run = run_trainer(tmp_path / "pytorch", None), run_trainer(tmp_path / "titan", stack_adapter())
    (pytorch, standard), (titan, result) = [(run["losses"], run["result"]) for run in (pytorch_run, titan_run)]
    assert len(pytorch) == len(titan) == STEPS
    assert pytorch[0] - pytorch[-1] > 100 * LOSS_TOL  # it learns, far beyond the tolerance
    assert max(abs(a - b) for a, b in zip(pytorch, titan)) <= LOSS_TOL, (pytorch, titan)
    assert abs(result["final_metric"] - standard["final_metric"]) <= LOSS_TOL  # the case's evaluate ran on it
    assert result["samples"] == standard["samples"] == STEPS * BATCH * SEQ  # the case's samples: tokens
    assert result["adapted"] == ["backward", "convert_model", "create_optimizer"]  # no model_to_ddp at 1 rank
    assert result["optimizer"] == result["standard_optimizer"] == "AdamW"  # the case's own optimizer


def test_compile_compiles_each_block_as_torchtitan_does_and_trains_the_eager_losses(tmp_path):
    """The stack's param compile: each of torchtitan's transformer blocks compiled (its apply_compile: inductor,
    fullgraph; about 20 s on one CPU thread), the same losses and gradient norms step by step as eager."""
    runs = {}
    for compiled in (False, True):
        seed_everything(SEED)
        case, actx = context(tmp_path / str(compiled), compile=compiled)
        runs[compiled] = point_steps(case, actx, fixed_batches(1))
        model = stack.convert_model(case.build_model(), actx)
        stack.create_optimizer(model, actx, functools.partial(case.build_optimizer, model))  # compiles it
        blocks = list(model.decoder.layers.values())
        assert [block._compiled_call_impl is not None for block in blocks] == [compiled] * len(blocks)
    eager, compiled_run = runs[False], runs[True]
    assert eager["losses"][0] - eager["losses"][-1] > 100 * LOSS_TOL
    assert max(abs(a - b) for a, b in zip(eager["losses"], compiled_run["losses"])) <= LOSS_TOL, runs
    assert max(abs(a - b) / b for a, b in zip(eager["norms"], compiled_run["norms"])) <= LOSS_TOL, runs


def point_steps(case: Any, actx: AdapterContext, batches: list[tuple[torch.Tensor, torch.Tensor]]
                ) -> dict[str, list[float]]:
    """STEPS steps through the stack's points, the trainer's order, each step on this rank's batch (its data-parallel
    rank's): the mean loss over the ranks and the gradient's norm over the whole model, per step."""
    import torch.distributed as dist

    model = stack.convert_model(case.build_model(), actx)
    optimizer, scheduler = stack.create_optimizer(model, actx, lambda: case.build_optimizer(model))
    if actx.world_size > 1:
        model = stack.model_to_ddp(model, actx)
    batch = batches[case.ctx.data_rank]
    losses, norms = [], []
    for step in range(1, STEPS + 1):
        optimizer.zero_grad(set_to_none=True)
        loss, _ = case.train_step(model, batch)
        stack.backward(step, loss, optimizer, None, actx)
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), actx.max_grad_norm)
        norms.append(float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm))
        optimizer.step()
        scheduler.step()
        mean = loss.detach().clone()
        if actx.world_size > 1:
            dist.all_reduce(mean)
            mean /= actx.world_size
        losses.append(float(mean))
    return {"losses": losses, "norms": norms}


def rank_main(out: str, rank: int, world_size: int, tp: int) -> None:
    """One of the ranks: point_steps on its data-parallel rank's batch, then the trainer on the torchtitan stack (and
    with tensor_parallel 1 on the pytorch stack), into out/rank<R>.json."""
    import torch.distributed as dist

    from case_runners.rank.dist import shutdown_distributed

    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    try:
        seed_everything(SEED)
        case, actx = context(Path(out) / "points", rank, world_size, tensor_parallel=tp)
        result: dict[str, Any] = {"points": point_steps(case, actx, fixed_batches(world_size // tp))}
        for name, adapter in (("pytorch", None), ("torchtitan", stack_adapter()))[tp > 1:]:
            result[name] = run_trainer(Path(out) / name, adapter, rank, world_size,
                                       **({"tensor_parallel": tp} if adapter else {}))
        (Path(out) / f"rank{rank}.json").write_text(json.dumps(result))
    finally:
        shutdown_distributed()


def fork_rank(out: str, rank: int, port: int, world_size: int, tp: int) -> None:
    """A rank forked from the test process: torch, transformers and torchtitan are imported already (importing
    them again in a fresh process takes most of a run's time)."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)  # as DataLoader's forked workers: the parent's thread pool is not the child's
    rank_main(out, rank, world_size, tp)


def forked_ranks(out: Path, world_size: int, tp: int) -> list[dict[str, Any]]:
    """rank_main on world_size gloo ranks, each a process forked from this one (killed if it does not end)."""
    import torchtitan.models.llama3  # noqa: F401 - before the fork, so that the ranks inherit it
    from transformers import LlamaForCausalLM  # noqa: F401 - as torchtitan

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [multiprocessing.get_context("fork").Process(target=fork_rank, args=(str(out), rank, port, world_size,
                                                                                  tp))
             for rank in range(world_size)]
    try:
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(timeout=RUN_S)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=REAPED_S)
    assert [p.exitcode for p in procs] == [0] * world_size  # a rank's traceback is in the test's captured output
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(world_size)]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Two ranks of FSDP2 (tensor_parallel 1)."""
    return forked_ranks(tmp_path_factory.mktemp("two_ranks"), 2, 1)


@pytest.fixture(scope="module")
def four_ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Four ranks: tensor_parallel 2 x FSDP2 over 2 data-parallel ranks."""
    return forked_ranks(tmp_path_factory.mktemp("four_ranks"), 4, 2)


def one_rank_on_both_batches(work_dir: Path) -> dict[str, list[float]]:
    seed_everything(SEED)  # one rank, the same model, on the two data-parallel ranks' batches as one
    case, actx = context(work_dir)
    both = fixed_batches(2)
    one = point_steps(case, actx, [(torch.cat([b[0] for b in both]), torch.cat([b[1] for b in both]))])
    assert one["losses"][0] - one["losses"][-1] > 100 * LOSS_TOL
    return one


def test_two_gloo_ranks_through_torchtitans_fsdp_train_as_one_rank_on_both_batches(two_ranks, tmp_path):
    one = one_rank_on_both_batches(tmp_path)
    for got in (rank["points"] for rank in two_ranks):
        assert max(abs(a - b) for a, b in zip(got["losses"], one["losses"])) <= LOSS_TOL, (got, one)
        # the gradients summed over the ranks of the loss over the ranks: Adam's update would hide a factor 2
        assert max(abs(a - b) / b for a, b in zip(got["norms"], one["norms"])) <= LOSS_TOL, (got, one)


def test_two_ranks_of_the_trainer_on_torchtitans_fsdp_give_the_pytorch_stacks_ddp_losses(two_ranks):
    for rank in two_ranks:
        pytorch, titan = rank["pytorch"], rank["torchtitan"]
        assert len(titan["losses"]) == STEPS and pytorch["losses"][0] - pytorch["losses"][-1] > 100 * LOSS_TOL
        assert max(abs(a - b) for a, b in zip(pytorch["losses"], titan["losses"])) <= LOSS_TOL, (pytorch, titan)
        assert abs(pytorch["result"]["final_metric"] - titan["result"]["final_metric"]) <= LOSS_TOL
        assert titan["result"]["adapted"] == ["backward", "convert_model", "create_optimizer", "model_to_ddp"]
        assert titan["result"]["samples"] == pytorch["result"]["samples"] == 2 * STEPS * BATCH * SEQ


def test_tensor_parallel_2_by_fsdp_2_trains_as_one_rank_on_both_data_parallel_batches(four_ranks, tmp_path):
    """tensor_parallel 2 on 4 ranks: torchtitan's tensor and sequence parallelism within each pair of ranks, which
    train the same batch, FSDP2 over the pairs; the loss and the gradient's norm of one rank on both pairs'
    batches, every step."""
    one = one_rank_on_both_batches(tmp_path)
    for got in (rank["points"] for rank in four_ranks):
        assert max(abs(a - b) for a, b in zip(got["losses"], one["losses"])) <= LOSS_TOL, (got, one)
        assert max(abs(a - b) / b for a, b in zip(got["norms"], one["norms"])) <= LOSS_TOL, (got, one)


def test_the_trainer_at_tensor_parallel_2_gives_the_ddp_losses_and_counts_each_sample_once(two_ranks, four_ranks):
    """The trainer on 4 ranks at tensor_parallel 2: the data split over the 2 data-parallel ranks, the pytorch
    stack's 2-rank DDP losses and held-out loss; the samples of a tensor-parallel pair counted once (the global
    figure that of 2 ranks), each rank reporting its half, so that the ranks sum to the round's."""
    for rank, got in enumerate(four_ranks):
        pytorch, titan = two_ranks[rank // 2]["pytorch"], got["torchtitan"]  # its data-parallel rank's
        assert len(titan["losses"]) == STEPS
        assert max(abs(a - b) for a, b in zip(pytorch["losses"], titan["losses"])) <= LOSS_TOL, (pytorch, titan)
        assert abs(pytorch["result"]["final_metric"] - titan["result"]["final_metric"]) <= LOSS_TOL
        assert titan["result"]["samples"] == pytorch["result"]["samples"] == 2 * STEPS * BATCH * SEQ
        assert titan["result"]["rank_samples"] == STEPS * BATCH * SEQ // 2


@pytest.mark.parametrize(("overrides", "key"), [({"data_parallel": "fsdp"}, "data_parallel"),
                                                 ({"activation_checkpointing": True}, "activation_checkpointing"),
                                                 ({"save_checkpoint": True}, "save_checkpoint"),
                                                 ({"float8": True}, "float8")])
def test_what_the_stack_cannot_run_is_refused_by_name_before_any_host(overrides, key):
    """At plan time (plan/config/stacks.py STACK_FIXED, data_parallel, and float8 on a chip without an fp8 peak),
    naming the key, the file and the value allowed."""
    selections, errors = parse_selections([{"case": "llama", "framework": "torchtitan", "nproc": 2,
                                            "overrides": overrides}])
    assert not errors
    config, problems = resolve(selections[0], load_vendor("cpu", REPO), REPO)
    assert config is None and len(problems) == 1, problems
    assert problems[0].key == key and problems[0].file == "run overrides (perfplay_cases[0].overrides)"
    assert problems[0].allowed == ["ddp" if key == "data_parallel" else "False"]


def test_float8_is_refused_on_a_chip_without_an_fp8_peak_and_planned_on_the_h100():
    selections, _ = parse_selections([{"case": "llama", "framework": "torchtitan", "nproc": 2,
                                       "overrides": {"float8": True}}])
    _, (problem,) = resolve(selections[0], load_vendor("cpu", REPO), REPO)
    assert str(problem) == ("run overrides (perfplay_cases[0].overrides): key 'float8': needs a chip that computes in "
                            "fp8: hardware CPU has no fp8 peak (vendor/cpu/vendor.yaml hardware.CPU.peak_flops.fp8) "
                            "(allowed: False)")
    selections, _ = parse_selections(["llama:torchtitan:H100:1:1:1"])
    selections[0].overrides = {"float8": True}
    config, problems = resolve(selections[0], load_vendor("nvidia", REPO), REPO)
    assert not problems and config is not None and config.params["float8"] is True


def test_tensor_parallel_is_checked_against_the_ranks_the_heads_and_float8_before_any_host():
    """A tensor_parallel the ranks cannot hold, one that splits an attention head, and float8 beside it are plan
    errors naming the key, the file and what would fit."""
    selections, _ = parse_selections([{"case": "llama", "framework": "torchtitan", "nproc": 2,
                                       "overrides": {"tensor_parallel": 4}}])
    _, (problem,) = resolve(selections[0], load_vendor("cpu", REPO), REPO)
    assert problem.key == "tensor_parallel" and problem.file == "run overrides (perfplay_cases[0].overrides)"
    assert "do not divide the 2 ranks of the selection (model-parallel sizes that divide them: 1, 2)" in str(problem)
    selections, _ = parse_selections(["llama:torchtitan:H100:1:1:1"])
    selections[0].overrides = {"float8": True, "tensor_parallel": 2}
    _, problems = resolve(selections[0], load_vendor("nvidia", REPO), REPO)
    (float8,) = [p for p in problems if p.key == "float8"]
    assert float8.allowed == ["False"] and "cannot run it with tensor_parallel 2" in str(float8)
    assert shapes.plan_problems({"model": "chatglm3_6b", "seq_len": 128, "tensor_parallel": 4}) == [(
        "tensor_parallel", "key 'tensor_parallel' is 4, but model 'chatglm3_6b' cannot be split so (its 32 attention "
                           "heads over 2 KV heads: each rank computes whole heads); allowed: 1, 2")]
    assert shapes.plan_problems({"model": "llama2_70b", "seq_len": 4096, "tensor_parallel": 8}) == []


def test_tensor_parallel_is_torchtitans_and_the_megatron_vendor_stacks_each_on_its_own_selections():
    """One name for tensor parallelism: torchtitan's param, and the one nvidia's Megatron stack declares in its
    stack.yaml; each selection reads its own stack's, from its own config."""
    found = {}
    for key in ("llama3_8b:torchtitan:H100:1:8:1", "llama3_8b:megatron:H100:1:8:1"):
        selections, _ = parse_selections([key])
        config, problems = resolve(selections[0], load_vendor("nvidia", REPO), REPO)
        assert not problems and config is not None, problems
        found[key.split(":")[1]] = (config.params["tensor_parallel"], config.stack_params)
    assert found["torchtitan"] == (2, ["compile", "float8", "tensor_parallel"])
    assert found["megatron"][0] == 2 and "tensor_parallel" in found["megatron"][1]  # FlagPerf's TP 2


def test_float8_trains_the_blocks_linear_layers_as_torchaos_float8linear_near_the_eager_losses(tmp_path):
    """The stack's param float8: torchtitan's Float8LinearConverter makes each block's linear layers torchao's
    Float8Linear (the output head not: torchtitan's recipe keeps it); on this CPU torchao's emulation trains them,
    its losses within float8's rounding of the full-precision run (measured 0.016 at most; 0.05 here) while they
    fall by over 1."""
    from torchao.float8.float8_linear import Float8Linear

    runs = {}
    for float8 in (False, True):
        seed_everything(SEED)
        case, actx = context(tmp_path / str(float8), float8=float8)
        runs[float8] = point_steps(case, actx, fixed_batches(1))
        decoder = stack.convert_model(case.build_model(), actx).decoder
        converted = {name for name, module in decoder.named_modules() if isinstance(module, Float8Linear)}
        # a block's fused QKV, wo, w1, w2 and w3
        assert converted == ({f"layers.{i}.{name}" for i in range(len(decoder.layers)) for name in (
            "attention.qkv_linear.wqkv", "attention.wo", "feed_forward.w1", "feed_forward.w2", "feed_forward.w3")}
            if float8 else set())
    full, eight = runs[False]["losses"], runs[True]["losses"]
    assert full[0] - full[-1] > 1.0 and eight[0] - eight[-1] > 1.0
    assert max(abs(a - b) for a, b in zip(full, eight)) <= 0.05, runs


def test_a_model_torchtitans_llama3_cannot_reproduce_is_refused(tmp_path):
    _, actx = context(tmp_path)
    with torch.device("meta"):
        moe = build_model({**PARAMS, "model": "tiny_moe"})
    with pytest.raises(Exception, match="model type 'mixtral' \\(allowed: llama"):
        stack.convert_model(moe, actx)
