"""The trainer's data parallelism, precision, activation checkpointing and checkpoint saving, on a tiny llama (the
case is defined here: the trainer's side of the contract, not the llama case's). DDP and FSDP2 on two gloo ranks
compute the same losses and save the same full checkpoint; fp16 under FSDP uses torch.amp's GradScaler, which
agrees over the ranks on a step to skip; bf16 runs without a scaler; activation checkpointing computes the same
losses; the plan refuses FSDP on a backend that cannot run it. Gradient accumulation (grad_accumulation) trains the
same steps, losses and weights as the whole batch, in micro batches, under DDP, FSDP and on one rank."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from case_runners.cases.llama.model import build_model, decoder_layers, load_checkpoint, save_checkpoint
from case_runners.core.errors import PerfplayError
from case_runners.core.paths import CHECKPOINT_DIR, project_root
from case_runners.plan.config.shared_params import TRAINER_PARAMS
from case_runners.plan.run_plan import make_plan
from case_runners.rank.driver.events import EventLogger, read_events
from case_runners.records.rank import TrainerResult
from case_runners.records.resolved import Target
from case_runners.tasks.training.accumulation import gradient_sync, micro_batches
from case_runners.tasks.training.case_api import RunContext, TrainingCase
from case_runners.tasks.training.dist import all_reduce_sum
from case_runners.tasks.training.trainer import Trainer, seed_everything
from process_helpers import communicate_or_kill

REPO = Path(__file__).resolve().parents[2]
SHAPE = {"model": "tiny", "vocab_size": 512}
SEQ, BATCH, STEPS, SEED = 32, 4, 5, 1234
# DDP against FSDP, fp32, per rank and step: the losses agree to float rounding. FSDP reduce-scatters the gradients
# where DDP all-reduces them (another summation order), so the weights after a step differ by rounding and the later
# losses by as much (measured, torch 2.13 on x86: at most 4.8e-7 in a loss over the 5 steps, 1.7e-6 in a weight of
# the saved checkpoints; the first loss is equal). 1e-4 is 200 times the loss difference and 60 times the weight
# difference, and 1000 times smaller than the losses' change over the 5 steps (0.2 to 0.4): a wrong shard, a missing
# reduction or an optimizer holding unsharded copies would be far outside it.
LOSS_TOL = 1e-4
WEIGHT_TOL = 1e-4


class TinyLlama(TrainingCase):
    """The tiny llama on a learnable synthetic sequence (each token the previous one plus a stride), labels shifted;
    rank r trains on batches r, r + world_size, ...; FSDP shards each decoder layer."""

    target_metric = "loss"
    max_grad_norm = 1.0

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        self.params, self.ctx = params, ctx
        self.trained_on: list[int] = []  # the sequences of each (micro) batch train_step saw

    def build_model(self) -> torch.nn.Module:
        return build_model(SHAPE)

    def _batches(self, count: int, seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        g = torch.Generator().manual_seed(seed)
        vocab = SHAPE["vocab_size"]
        out = []
        for _ in range(count):
            start = torch.randint(0, vocab, (BATCH, 1), generator=g)
            stride = 1
            tokens = (start + stride * torch.arange(SEQ + 1)) % vocab
            out.append((tokens[:, :-1], tokens[:, 1:]))
        return out

    def build_data(self) -> tuple[list, list]:
        rank, world = self.ctx.rank, self.ctx.world_size
        train = self._batches(STEPS * world, SEED)[rank::world]
        held_out = self._batches(2 * world, SEED + 1)[rank::world]  # equal shares: FSDP forwards are collectives
        return train, held_out

    def build_optimizer(self, model: torch.nn.Module) -> tuple[torch.optim.Optimizer, None]:
        return torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01), None

    def _loss(self, model: torch.nn.Module, batch: Any) -> torch.Tensor:
        tokens, labels = batch
        logits = model(input_ids=tokens).logits.float()
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))

    def train_step(self, model: torch.nn.Module, batch: Any) -> tuple[torch.Tensor, int]:
        self.trained_on.append(batch[0].shape[0])
        return self._loss(model, batch), batch[0].shape[0]

    def evaluate(self, model: torch.nn.Module, eval_loader: Any) -> dict[str, float]:
        total = count = 0.0
        for batch in eval_loader:
            total += float(self._loss(model, self.to_device(batch, self.ctx.device)))
            count += 1
        total, count = all_reduce_sum([total, count], self.ctx.device)
        return {"loss": total / count}

    def shard_units(self, model: torch.nn.Module) -> list[torch.nn.Module]:
        return decoder_layers(model)

    def enable_activation_checkpointing(self, model: torch.nn.Module) -> None:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})

    def save_checkpoint(self, state_dict: dict[str, Any], directory: Path) -> None:
        model = build_model(SHAPE)
        model.load_state_dict(state_dict)
        save_checkpoint(model, directory, SHAPE)


class NoExtras(TinyLlama):
    """A case with the required methods only: no activation checkpointing, no checkpoint saving."""

    enable_activation_checkpointing = TrainingCase.enable_activation_checkpointing  # type: ignore[assignment]
    save_checkpoint = TrainingCase.save_checkpoint  # type: ignore[assignment]


class ShortLast(TinyLlama):
    """Two training batches, the second (the epoch's last) of one sequence less."""

    def build_data(self) -> tuple[list, list]:
        train, held_out = super().build_data()
        tokens, labels = train[1]
        return [train[0], (tokens[:-1], labels[:-1])], held_out


class SaveFails(TinyLlama):
    def save_checkpoint(self, state_dict: dict[str, Any], directory: Path) -> None:
        raise OSError(f"{directory}: no space left on device")


def trainer_params(**overrides: Any) -> dict[str, Any]:
    defaults = {name: spec["default"] for name, spec in TRAINER_PARAMS.items() if "default" in spec}
    return {**defaults, "batch_size": BATCH, "eval_batch_size": BATCH, "max_steps": STEPS, "log_freq": 1,
            "eval_every_epochs": 0, **overrides}


def train(work_dir: Path, rank: int = 0, world_size: int = 1, case_type: type = TinyLlama,
          vendor_amp_dtype: str = "fp16", **overrides: Any) -> tuple[Trainer, TrainerResult, list[dict]]:
    """(trainer, result, events) of one rank's run, its events and checkpoint in work_dir."""
    seed_everything(SEED)
    params = trainer_params(**overrides)
    (work_dir / "logs").mkdir(parents=True, exist_ok=True)
    log = EventLogger(work_dir / "logs", rank, params["log_freq"], stream=None)
    ctx = RunContext(rank=rank, local_rank=rank, world_size=world_size, device=torch.device("cpu"), data_dir=None,
                     log=log, work_dir=work_dir)
    trainer = Trainer(case_type(params, ctx), params, ctx, Target(metric="loss", value=0.0, higher_is_better=False),
                      amp_dtype=vendor_amp_dtype)
    result = trainer.run()
    return trainer, result, read_events(work_dir / "logs" / f"rank{rank}.events.jsonl")


def step_losses(events: list[dict]) -> list[float]:
    return [e["value"]["loss"] for e in events if e["event"] == "STEP_END"]


def event(events: list[dict], name: str) -> dict[str, Any]:
    (found,) = [e["value"] for e in events if e["event"] == name]
    return found


# -- two gloo ranks: each rank process runs the scenarios below in one process group -------------------------------

SCENARIOS = {
    "ddp": {"data_parallel": "ddp", "save_checkpoint": True},
    "fsdp": {"data_parallel": "fsdp", "save_checkpoint": True},
    "fsdp_fp16": {"data_parallel": "fsdp", "amp": True, "amp_dtype": "fp16", "activation_checkpointing": True,
                  "max_steps": 2},
    # the ddp and fsdp runs' batches, each in two micro batches
    "ddp_accumulated": {"data_parallel": "ddp", "save_checkpoint": True, "grad_accumulation": 2},
    "fsdp_accumulated": {"data_parallel": "fsdp", "save_checkpoint": True, "grad_accumulation": 2},
}


def scaler_skips_together(rank: int) -> dict[str, Any]:
    """torch.amp's GradScaler (the trainer's, Precision.grad_scaler) on FSDP's sharded gradients, an inf in rank
    0's shard only: both ranks skip the step and halve the scale."""
    from torch.distributed.fsdp import fully_shard

    from case_runners.tasks.training.trainer import Precision

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 8))
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    precision = Precision(True, "cpu", "fp16")
    scaler = precision.grad_scaler()
    assert isinstance(scaler, torch.amp.GradScaler)
    scale = scaler.get_scale()
    with precision.autocast():
        loss = model(torch.randn(4, 8)).float().sum()
    scaler.scale(loss).backward()
    if rank == 0:
        next(model.parameters()).grad.to_local().view(-1)[0] = math.inf
    before = [p.full_tensor().clone() for p in model.parameters()]
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    changed = any(not torch.equal(b, p.full_tensor()) for b, p in zip(before, model.parameters()))
    return {"stepped": changed, "scale_ratio": scaler.get_scale() / scale, "norm_type": type(norm).__name__}


def rank_main(out: str, rank: int) -> None:
    """One of the two ranks: the scenarios, then the scaler check; out/<scenario>/rank<R>.json each."""
    import torch.distributed as dist

    from case_runners.rank.dist import shutdown_distributed

    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        for name, overrides in SCENARIOS.items():
            trainer, result, events = train(Path(out) / name, rank, 2, **overrides)
            summary = {"losses": step_losses(events), "result": result.to_json(), "wrap": event(events, "MODEL_TO_DDP"),
                       "trained_on": trainer.case.trained_on,
                       "scaler": type(trainer.scaler).__name__ if trainer.scaler else None,
                       "saved": [e["value"] for e in events if e["event"] == "SAVE_CHECKPOINT"]}
            (Path(out) / name / f"rank{rank}.json").write_text(json.dumps(summary))
        (Path(out) / f"scaler.rank{rank}.json").write_text(json.dumps(scaler_skips_together(rank)))
        try:
            train(Path(out) / "save_fails", rank, 2, case_type=SaveFails, data_parallel="fsdp", save_checkpoint=True,
                  max_steps=1)
            failure = None
        except Exception as exc:  # noqa: BLE001 - what each rank raised is the test's result
            failure = f"{type(exc).__name__}: {exc}"
        (Path(out) / f"save_fails.rank{rank}.json").write_text(json.dumps(failure))
    finally:
        shutdown_distributed()  # the rank runtime's: collects the models' reference cycles first, or exit aborts


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> Path:
    """The scenarios on two gloo ranks, each rank a process of its own (killed if the test fails)."""
    import socket

    out = tmp_path_factory.mktemp("two_ranks")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = (f"import sys; sys.path[:0] = [{str(REPO / 'tests')!r}, {str(REPO / 'tests' / 'unit')!r}]\n"
            f"from test_trainer_fsdp import rank_main; rank_main({str(out)!r}, int(sys.argv[1]))")
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1",
           "PYTHONFAULTHANDLER": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(rank)], env=env, cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for rank in range(2)]
    outputs = communicate_or_kill(procs)
    assert [p.returncode for p in procs] == [0, 0], "\n".join(o[-4000:] for o in outputs)
    return out


def scenario(out: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads((out / name / f"rank{r}.json").read_text()) for r in range(2)]


def test_fsdp_matches_ddp_on_the_first_steps(two_ranks):
    ddp, fsdp = scenario(two_ranks, "ddp"), scenario(two_ranks, "fsdp")
    assert [r["wrap"] for r in ddp] == [{"world_size": 2, "wrapper": "ddp", "units": 1}] * 2
    assert [r["wrap"] for r in fsdp] == [{"world_size": 2, "wrapper": "fsdp", "units": 5}] * 2  # 4 layers + root
    for rank in range(2):
        a, b = ddp[rank]["losses"], fsdp[rank]["losses"]
        assert len(a) == len(b) == STEPS and all(math.isfinite(x) for x in a)
        assert a[0] - ddp[rank]["result"]["final_metric"] > 1000 * LOSS_TOL  # it learns, far beyond the tolerance
        assert max(abs(x - y) for x, y in zip(a, b)) <= LOSS_TOL, (a, b)
        assert abs(ddp[rank]["result"]["final_metric"] - fsdp[rank]["result"]["final_metric"]) <= LOSS_TOL
        assert fsdp[rank]["result"]["samples"] == ddp[rank]["result"]["samples"] == 2 * STEPS * BATCH


def test_fsdp_saves_the_full_model_that_ddp_trains(two_ranks):
    ddp, fsdp = scenario(two_ranks, "ddp"), scenario(two_ranks, "fsdp")
    for runs, name in ((ddp, "ddp"), (fsdp, "fsdp")):
        (saved,) = runs[0]["saved"]  # rank 0 saves and says so; rank 1 waits for it
        assert saved["directory"] == str(two_ranks / name / CHECKPOINT_DIR) and saved["bytes"] > 0
        assert runs[1]["saved"] == []
    ddp_model = load_checkpoint(two_ranks / "ddp" / CHECKPOINT_DIR, SHAPE).state_dict()
    fsdp_model = load_checkpoint(two_ranks / "fsdp" / CHECKPOINT_DIR, SHAPE).state_dict()
    seed_everything(SEED)
    untrained = build_model(SHAPE).state_dict()
    assert ddp_model.keys() == fsdp_model.keys()
    for key, weight in ddp_model.items():
        assert weight.shape == fsdp_model[key].shape
        assert torch.allclose(weight, fsdp_model[key], rtol=0, atol=WEIGHT_TOL), key
    assert any(not torch.equal(ddp_model[k], untrained[k]) for k in untrained)  # trained weights, not the initial


@pytest.mark.parametrize("parallel", ["ddp", "fsdp"])
def test_accumulated_micro_batches_train_the_whole_batchs_steps_losses_and_weights(two_ranks, parallel: str):
    """Batch 4 per rank as 2 x 2 micro batches (DDP exchanging the gradients after the second only, FSDP after each):
    per rank, the same steps and samples, each step's loss the same to the tolerance of summation order, the same
    trained weights. Measured (x86, torch 2.13): at most 9.5e-7 in a loss; in a weight 4e-5, in the embedding rows
    AdamW moves by the sign of a near-zero gradient, which is 1.7e-5 of the weights' change over the run: the bound
    is 1e-3 of each tensor's change (a batch trained twice or a micro batch lost moves the weights by their whole
    change)."""
    whole, accumulated = scenario(two_ranks, parallel), scenario(two_ranks, f"{parallel}_accumulated")
    for rank in range(2):
        a, b = whole[rank], accumulated[rank]
        assert a["trained_on"] == [BATCH] * STEPS and b["trained_on"] == [BATCH // 2] * (2 * STEPS)
        assert b["result"]["steps"] == a["result"]["steps"] == STEPS
        assert b["result"]["samples"] == a["result"]["samples"] == 2 * STEPS * BATCH  # every sample counted once
        assert a["losses"][0] - a["losses"][-1] > 1000 * LOSS_TOL  # it learns, far beyond the tolerance
        assert max(abs(x - y) for x, y in zip(a["losses"], b["losses"], strict=True)) <= LOSS_TOL
    whole_model = load_checkpoint(two_ranks / parallel / CHECKPOINT_DIR, SHAPE).state_dict()
    accumulated_model = load_checkpoint(two_ranks / f"{parallel}_accumulated" / CHECKPOINT_DIR, SHAPE).state_dict()
    seed_everything(SEED)
    untrained = build_model(SHAPE).state_dict()
    for key, weight in whole_model.items():
        change = (weight - untrained[key]).norm()
        assert (weight - accumulated_model[key]).norm() <= 1e-3 * change, key


def test_fp16_under_fsdp_trains_with_a_scaler_the_ranks_agree_on(two_ranks):
    for run in scenario(two_ranks, "fsdp_fp16"):  # with activation checkpointing: it composes with the sharding
        assert run["scaler"] == "GradScaler" and run["result"]["precision"] == "fp16"
        assert run["result"]["steps"] == 2 and all(math.isfinite(x) for x in run["losses"])
    checks = [json.loads((two_ranks / f"scaler.rank{r}.json").read_text()) for r in range(2)]
    assert checks == [{"stepped": False, "scale_ratio": 0.5, "norm_type": "DTensor"}] * 2


def test_a_failed_save_on_rank_0_fails_every_rank_without_a_hang(two_ranks):
    failures = [json.loads((two_ranks / f"save_fails.rank{r}.json").read_text()) for r in range(2)]
    directory = two_ranks / "save_fails" / CHECKPOINT_DIR
    assert failures == [f"OSError: {directory}: no space left on device",
                        f"PerfplayError: rank 0 failed to save the checkpoint into {directory}"]


# -- one rank, in this process ---------------------------------------------------------------------------------

def test_bf16_config_dtype_runs_without_a_scaler(tmp_path):
    trainer, result, events = train(tmp_path, vendor_amp_dtype="fp16", amp=True, amp_dtype="bf16", max_steps=2)
    assert trainer.scaler is None and result.precision == "bf16"
    assert event(events, "MODEL_TO_FP16") == {"autocast_dtype": "bf16", "grad_scaler": False}
    assert all(math.isfinite(x) for x in step_losses(events))
    assert not any(e["event"] in ("MODEL_TO_DDP", "SAVE_CHECKPOINT") for e in events)  # one rank: nothing wrapped


def test_fsdp_on_one_rank_wraps_nothing(tmp_path):
    trainer, result, events = train(tmp_path, data_parallel="fsdp", max_steps=1)
    assert result.steps == 1 and trainer.model is trainer.module
    assert not any(e["event"] == "MODEL_TO_DDP" for e in events)


def test_activation_checkpointing_computes_the_same_losses(tmp_path):
    # One rank, fp32: recomputing the forward in the backward pass gives the same gradients up to rounding, so the
    # loss after the first update agrees to float precision (measured: equal; LOSS_TOL is the margin for other CPUs).
    steps = 2
    _, _, plain = train(tmp_path / "plain", max_steps=steps)
    trainer, _, checkpointed = train(tmp_path / "checkpointed", max_steps=steps, activation_checkpointing=True)
    assert trainer.module.is_activation_checkpointing
    a, b = step_losses(plain), step_losses(checkpointed)
    assert len(a) == len(b) == steps and a[0] == b[0]  # the first loss comes before any gradient
    assert max(abs(x - y) for x, y in zip(a, b)) <= LOSS_TOL, (a, b)


def test_save_checkpoint_on_one_rank_writes_the_trained_model(tmp_path, capsys):
    trainer, result, events = train(tmp_path, save_checkpoint=True, max_steps=1)
    saved = event(events, "SAVE_CHECKPOINT")
    assert saved["directory"] == str(tmp_path / CHECKPOINT_DIR) and saved["bytes"] > 0
    assert f"checkpoint saved to {tmp_path / CHECKPOINT_DIR}" in capsys.readouterr().out
    names = [e["event"] for e in events]
    assert names.index("TRAIN_END") < names.index("SAVE_CHECKPOINT")  # outside the timed training
    loaded = load_checkpoint(tmp_path / CHECKPOINT_DIR, SHAPE).state_dict()
    for key, weight in trainer.module.state_dict().items():
        assert torch.equal(loaded[key], weight), key


@pytest.mark.parametrize("param", ["save_checkpoint", "activation_checkpointing"])
def test_a_case_without_the_method_is_refused_before_training(tmp_path, param):
    with pytest.raises(PerfplayError, match=f"{param} is true but case .*NoExtras has no .*: set {param} false"):
        train(tmp_path, case_type=NoExtras, **{param: True})
    assert read_events(tmp_path / "logs" / "rank0.events.jsonl") == []  # refused before INIT_START


def test_one_rank_accumulates_an_epochs_short_last_batch_in_the_micro_batches_it_has(tmp_path):
    """Batches of 4 in micro batches of 2, the epoch's last batch of 3 in a micro batch of 2 and one of 1: a step per
    batch, every sample once, each step's loss the whole batch's to summation order."""
    _, whole, plain = train(tmp_path / "whole", case_type=ShortLast, max_steps=2)
    trainer, accumulated, split = train(tmp_path / "split", case_type=ShortLast, max_steps=2, grad_accumulation=2)
    assert trainer.case.trained_on == [2, 2, 2, 1]
    assert accumulated.steps == whole.steps == 2 and accumulated.samples == whole.samples == 2 * BATCH - 1
    assert max(abs(x - y) for x, y in zip(step_losses(plain), step_losses(split), strict=True)) <= LOSS_TOL


def test_micro_batches_split_every_tensor_of_a_batch_and_refuse_what_they_cannot():
    batch = {"ids": torch.arange(10).reshape(5, 2), "pair": (torch.arange(5), [torch.zeros(5, 3)])}
    parts = micro_batches(batch, 2)
    assert [share for _, share in parts] == [0.4, 0.4, 0.2]
    assert [part["ids"].tolist() for part, _ in parts] == [[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9]]]
    assert [part["pair"][1][0].shape for part, _ in parts] == [(2, 3), (2, 3), (1, 3)]
    assert micro_batches(batch, 5) == [(batch, 1.0)]
    with pytest.raises(PerfplayError, match=r"first dimensions \[3, 5\] and 0 scalars: run it with "
                                            r"grad_accumulation 1"):
        micro_batches((torch.zeros(5), torch.zeros(3)), 2)
    with pytest.raises(PerfplayError, match=r"this case's batch holds a str; run it with grad_accumulation 1"):
        micro_batches((torch.zeros(5), "captions"), 2)


def test_ddp_exchanges_the_gradients_once_per_accumulated_step(tmp_path):
    """One gloo rank of its own: DDP's communication hook runs on the last micro batch only (no_sync before)."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        model = DistributedDataParallel(torch.nn.Linear(4, 2))
        exchanged = []

        def hook(state, bucket):  # type: ignore[no-untyped-def] # DDP refuses a string (postponed) annotation
            exchanged.append(bucket.index())
            future: torch.futures.Future[torch.Tensor] = torch.futures.Future()
            future.set_result(bucket.buffer())
            return future

        model.register_comm_hook(None, hook)
        for index in range(3):
            with gradient_sync(model, last=index == 2):
                model(torch.ones(2, 4)).sum().backward()
                assert len(exchanged) == (index == 2)
    finally:
        dist.destroy_process_group()


# -- the plan ----------------------------------------------------------------------------------------------------

@pytest.fixture
def mccl_vendor(tmp_path) -> Path:
    """A copy of vendor/ whose cpu vendor's backend is one FSDP is not known to run on."""
    root = tmp_path / "project"
    shutil.copytree(project_root() / "vendor", root / "vendor", ignore=shutil.ignore_patterns("__pycache__"))
    path = root / "vendor/cpu/vendor.yaml"
    path.write_text(path.read_text().replace("dist_backend: gloo", "dist_backend: mccl"))
    return root


def plan_errors(root: Path, nproc: int, overrides: dict | None = None) -> list[str]:
    selection = {"case": "digits_cnn", "nproc": nproc, "overrides": overrides or {}}
    return make_plan({"vendor": "cpu", "cases": [selection]}, check=True, root=root)["errors"]


def test_plan_refuses_fsdp_on_a_backend_that_cannot_run_it(mccl_vendor):
    config = mccl_vendor / "vendor/cpu/cases/digits_cnn/config_CPUx1x2.yaml"
    config.write_text(config.read_text() + "data_parallel: fsdp\n")
    (error,) = plan_errors(mccl_vendor, 2)
    assert error.startswith("vendor/cpu/cases/digits_cnn/config_CPUx1x2.yaml: key 'data_parallel': fsdp needs")
    assert "vendor 'cpu' uses 'mccl' (vendor/cpu/vendor.yaml)" in error and "(allowed: gloo, nccl)" in error
    assert "`fsdp: true`" in error
    assert plan_errors(mccl_vendor, 1) == []  # one rank: nothing is sharded
    assert plan_errors(mccl_vendor, 2, {"data_parallel": "ddp"}) == []


def test_vendor_fsdp_key_declares_its_backend_runs_fsdp(mccl_vendor):
    vendor = mccl_vendor / "vendor/cpu/vendor.yaml"
    vendor.write_text(vendor.read_text() + "fsdp: true\n")
    assert plan_errors(mccl_vendor, 2, {"data_parallel": "fsdp"}) == []
    vendor.write_text(vendor.read_text().replace("fsdp: true", "fsdp: sometimes"))
    (error,) = plan_errors(mccl_vendor, 2)
    assert "vendor/cpu/vendor.yaml: key 'fsdp': must be true or false" in error


def test_fsdp_on_gloo_and_bad_values_are_checked_by_the_plan():
    root = project_root()
    assert plan_errors(root, 2, {"data_parallel": "fsdp", "amp_dtype": "bf16", "activation_checkpointing": True,
                                 "save_checkpoint": True}) == []
    (error,) = plan_errors(root, 2, {"data_parallel": "zero3"})
    assert "key 'data_parallel': 'zero3' is not one of the allowed values (allowed: ddp, fsdp)" in error
    (error,) = plan_errors(root, 1, {"amp_dtype": "fp8"})
    assert "key 'amp_dtype'" in error and "(allowed: , bf16, fp16)" in error
    (error,) = plan_errors(root, 1, {"grad_accumulation": 3})
    assert error == ("run overrides (perfplay_cases[0].overrides): key 'grad_accumulation': 3 does not divide "
                     "batch_size 32 (set in vendor/cpu/cases/digits_cnn/config_CPUx1x1.yaml): the rank's batch is "
                     "split into equal micro batches (allowed: 1, 2, 4, 8, 16, 32)")
    assert plan_errors(root, 1, {"grad_accumulation": 4}) == []
