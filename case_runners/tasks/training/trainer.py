"""The training loop: precision, data parallelism (DDP or FSDP), stop conditions and honest timing.

Times (seconds) and throughputs (global samples/s), as in FlagPerf's FINISHED event:
- train_time: TRAIN_START..TRAIN_END, evaluation included  -> p_whole
- train_no_eval_time: train_time minus evaluation          -> p_train
- core_time: sum over steps of (batch on device .. optimizer step done), synchronized on
  accelerators; data loading and host-to-device copies excluded -> p_core

A vendor's extern/ adapter (tasks/training/adapter.py) replaces the steps it defines, the trainer's code runs the
others; timing and stop conditions stay the trainer's.

Each rank also reports its own share: rank_samples (the samples this rank trained on; where a stack's tensor
parallelism spreads a model replica over several ranks, which train the same samples, its share of them) and
rank_p_whole / rank_p_train / rank_p_core = rank_samples over this rank's own train_time /
train_no_eval_time / rank_core_time. Summed over a node's ranks they give the node's throughput.

With more than one rank, data_parallel ddp wraps the model in DistributedDataParallel after the optimizer is made;
fsdp shards it with FSDP2's fully_shard (each of case.shard_units, then the root) before, so that the optimizer holds
the sharded parameters. grad_accumulation splits each step's batch into micro batches
(tasks/training/accumulation.py): one optimizer step, the loss the micro batches' mean, every sample counted once.
save_checkpoint writes the full model after TRAIN_END: it is not in any timed figure.
"""

from __future__ import annotations

import contextlib
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from case_runners.core.errors import PerfplayError
from case_runners.core.paths import CHECKPOINT_DIR
from case_runners.plan.config.shared_params import FSDP, TrainerParams, micro_batch_size, precision_name
from case_runners.rank import stop_request
from case_runners.rank.driver import events as ev
from case_runners.records import names
from case_runners.records.rank import TrainerResult
from case_runners.records.resolved import Target
from case_runners.tasks.training.accumulation import gradient_sync, micro_batches
from case_runners.tasks.training.adapter import STANDARD, AdapterContext, AdapterError, TrainerAdapter
from case_runners.tasks.training.case_api import RunContext, TrainingCase
from case_runners.tasks.training.dist import all_reduce_sum, any_rank
from case_runners.tasks.training.flops import meta_like
from case_runners.vendors.runtime import VendorRuntime


def seed_everything(seed: int) -> None:
    import numpy as np

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


@dataclass(frozen=True)
class Precision:
    """What a round computes in: fp32 (tf32 where the config allows it), or with amp, autocast to the config's
    amp_dtype or else the vendor's (vendor.yaml amp_dtype); fp16 adds a GradScaler (torch.amp's: it also takes FSDP's
    sharded gradients, agreeing over the ranks on a step to skip). The name is the peak MFU is measured against."""
    amp: bool
    device_type: str
    amp_dtype: str = "fp16"
    tf32: bool = False

    @property
    def name(self) -> str:
        return precision_name(self.amp, self.amp_dtype, self.tf32)

    @property
    def dtype(self) -> torch.dtype | None:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.name)

    def autocast(self) -> contextlib.AbstractContextManager:
        if not self.amp:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device_type, dtype=self.dtype)

    def grad_scaler(self) -> torch.amp.GradScaler | None:
        return torch.amp.GradScaler(self.device_type) if self.name == "fp16" else None


class Trainer:
    def __init__(self, case: TrainingCase, params: dict[str, Any], ctx: RunContext, target: Target,
                 amp_dtype: str = "fp16", adapter: TrainerAdapter = STANDARD) -> None:
        """params: the case's; the trainer's among them (plan/config/shared_params.py TrainerParams) are self.params,
        and the vendor's adapter gets a copy of them all (AdapterContext.params)."""
        if case.target_metric != target.metric:
            raise ValueError(f"config target metric '{target.metric}' is not the metric the case "
                             f"reports ('{case.target_metric}')")
        self.case, self.ctx, self.target = case, ctx, target
        self.params = p = TrainerParams.from_params(params)
        self.log = ctx.log
        self.device = ctx.device
        self.precision = Precision(p.amp, ctx.device.type, p.amp_dtype or amp_dtype, p.tf32)
        self.fsdp = p.data_parallel == FSDP and ctx.world_size > 1  # one rank: nothing to shard
        self.micro_batch = micro_batch_size(p.batch_size, p.grad_accumulation)
        self.save_to = None
        if p.save_checkpoint:
            if ctx.work_dir is None:
                raise PerfplayError("save_checkpoint is true but the rank has no work directory to save into")
            self.save_to = Path(ctx.work_dir) / CHECKPOINT_DIR
        for param, method in (("activation_checkpointing", "enable_activation_checkpointing"),
                              ("save_checkpoint", "save_checkpoint")):
            if getattr(p, param) and getattr(type(case), method) is getattr(TrainingCase, method):
                raise PerfplayError(f"{param} is true but case {type(case).__module__}.{type(case).__name__} has no "
                                    f"{method}(): set {param} false")
        self.runtime = ctx.runtime or VendorRuntime(None, ctx.device.type, "gloo")  # torch's defaults
        self.sync = self.runtime.synchronizer(ctx.device)
        self.history: list[dict[str, float]] = []
        self.first_batch: Any = None  # the first batch trained on, on the meta device (flops.meta_like)
        self.adapter = adapter
        self.adapter_ctx = AdapterContext(
            device=ctx.device, rank=ctx.rank, local_rank=ctx.local_rank, world_size=ctx.world_size, params=params,
            precision=self.precision.name, amp=self.precision.amp,
            amp_dtype=self.precision.dtype if self.precision.amp else None, max_grad_norm=float(case.max_grad_norm),
            case=case, log=ctx.log)

    # -- setup ---------------------------------------------------------------------------------

    def _adapted(self, name: str, *args: Any, check: type | None = None) -> Any:
        """The vendor's point `name`; with check, its result must be an instance of it."""
        out = self.adapter.call(name, *args)
        if check is not None and not isinstance(out, check):
            raise AdapterError(f"{self.adapter.shown}: {name}() returned {type(out).__name__}, not a "
                               f"{check.__module__}.{check.__qualname__}")
        return out

    def _create_optimizer(self, model: torch.nn.Module) -> None:
        """The case's optimizer and scheduler, or the vendor's; both optimizer class names are kept."""
        standard_types: list[str] = []

        def standard() -> tuple[Any, Any]:
            pair = self.case.build_optimizer(model)
            standard_types.append(type(pair[0]).__name__)
            return pair

        if "create_optimizer" not in self.adapter:
            self.optimizer, self.scheduler = standard()
        else:
            pair = self._adapted("create_optimizer", model, self.adapter_ctx, standard)
            if not (isinstance(pair, tuple) and len(pair) == 2
                    and all(hasattr(pair[0], a) for a in ("param_groups", "zero_grad", "step"))):
                raise AdapterError(f"{self.adapter.shown}: create_optimizer() returned {type(pair).__name__}, not "
                                   f"(optimizer, scheduler or None)")
            self.optimizer, self.scheduler = pair
            if not standard_types:
                standard()  # built only for its type: the vendor's optimizer is the one used
        self.optimizer_type, self.standard_optimizer_type = type(self.optimizer).__name__, standard_types[0]

    def _setup(self) -> None:
        log, device, adapter, actx = self.log, self.device, self.adapter, self.adapter_ctx
        log.event(ev.INIT_START)
        t0 = time.perf_counter()
        if adapter.shown:
            log.event(ev.VENDOR_ADAPTER, {"file": adapter.shown, "points": adapter.defined})
            print(f"vendor adapter {adapter.shown} replaces: {', '.join(adapter.defined) or 'nothing'}", flush=True)
        stop_request.check("init (model)")
        model = self.case.build_model()
        standard_parameters = sum(p.numel() for p in model.parameters())
        if "convert_model" in adapter:
            model = self._adapted("convert_model", model, actx, check=torch.nn.Module)
        model = model.to(device)
        log.event(ev.CONVERT_MODEL, {"device": str(device), "parameters": sum(p.numel() for p in model.parameters()),
                                     "standard_parameters": standard_parameters})
        if self.precision.amp and "model_to_fp16" in adapter:
            model = self._adapted("model_to_fp16", model, actx, check=torch.nn.Module)
        if self.params.activation_checkpointing:
            self.case.enable_activation_checkpointing(model)
        self.module = model
        if self.fsdp:  # before the optimizer: it must hold the sharded parameters
            stop_request.check("init (FSDP)")
            self._shard(model)
        stop_request.check("init (data)")
        self.train_loader, self.eval_loader = self.case.build_data()
        stop_request.check("init (optimizer)")
        self._create_optimizer(model)
        log.event(ev.CREATE_OPTIMIZER, {"optimizer": self.optimizer_type,
                                        "standard_optimizer": self.standard_optimizer_type,
                                        "scheduler": type(self.scheduler).__name__ if self.scheduler else None})
        self.scaler = None
        if self.precision.amp:
            self.scaler = self._adapted("create_grad_scaler", actx) if "create_grad_scaler" in adapter \
                else self.precision.grad_scaler()
            log.event(ev.MODEL_TO_FP16, {"autocast_dtype": self.precision.name, "grad_scaler": self.scaler is not None})
        self.model = model
        # A stack's model_to_ddp wraps at one rank too (deepspeed's engine trains).
        stack_wraps = adapter.stack is not None and "model_to_ddp" in adapter.stack_points
        if (self.ctx.world_size > 1 or stack_wraps) and not self.fsdp:
            stop_request.check("init (DDP)")
            if "model_to_ddp" in adapter:
                self.model = self._adapted("model_to_ddp", model, actx, check=torch.nn.Module)
            else:
                from torch.nn.parallel import DistributedDataParallel as DDP

                ids = [device.index] if device.type != "cpu" and device.index is not None else None
                self.model = DDP(model, device_ids=ids)
            log.event(ev.MODEL_TO_DDP, {"world_size": self.ctx.world_size, "wrapper": adapter.stack or "ddp",
                                        "units": 1})
        self.sync()
        self.init_time = time.perf_counter() - t0
        log.event(ev.INIT_END, {"init_time": self.init_time})

    def _shard(self, model: torch.nn.Module) -> None:
        """FSDP2: fully_shard each of the case's units, then the root (in place: the module keeps its identity)."""
        from torch.distributed.fsdp import fully_shard

        units = list(self.case.shard_units(model))
        for unit in units:
            fully_shard(unit)
        fully_shard(model)
        self.log.event(ev.MODEL_TO_DDP, {"world_size": self.ctx.world_size, "wrapper": "fsdp",
                                         "units": len(units) + 1})

    def _save_checkpoint(self) -> None:
        """The full state dict of the trained model, on the CPU (under FSDP gathered by every rank, held by rank 0),
        saved by rank 0 into work_dir/checkpoint; the ranks then agree on whether it was, so none waits for a rank 0
        that failed."""
        directory = self.save_to
        assert directory is not None
        t0 = time.perf_counter()
        state: dict[str, Any] = {}
        if self.fsdp:
            from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

            state = get_model_state_dict(self.module, options=StateDictOptions(full_state_dict=True,
                                                                               cpu_offload=True))
        elif self.ctx.rank == 0:
            state = {k: v.detach().cpu() for k, v in self.module.state_dict().items()}
        error: BaseException | None = None
        if self.ctx.rank == 0:
            try:
                self.case.save_checkpoint(state, directory)
            except Exception as exc:  # noqa: BLE001 - raised below, once every rank knows
                error = exc
        del state
        if any_rank(error is not None, self.device):
            if error is not None:
                raise error
            raise PerfplayError(f"rank 0 failed to save the checkpoint into {directory}")
        if self.ctx.rank == 0:
            size = sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())
            seconds = time.perf_counter() - t0
            self.log.event(ev.SAVE_CHECKPOINT, {"directory": str(directory), "bytes": size, "seconds": seconds})
            print(f"checkpoint saved to {directory} ({size / 1e6:.1f} MB, {seconds:.1f} s)", flush=True)

    # -- one step and one evaluation -----------------------------------------------------------

    def _backward(self, loss: torch.Tensor) -> None:
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()

    def _update_model_params(self) -> None:
        """Clip (case.max_grad_norm > 0), step the optimizer (through the scaler), update the scaler, step the
        scheduler."""
        clip = self.case.max_grad_norm
        if self.scaler is not None:
            if clip > 0:
                self.scaler.unscale_(self.optimizer)
                torch.nn.utils.clip_grad_norm_(self.module.parameters(), clip)
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            if clip > 0:
                torch.nn.utils.clip_grad_norm_(self.module.parameters(), clip)
            self.optimizer.step()
        if self.scheduler is not None:
            self.scheduler.step()

    def _autocast(self) -> contextlib.AbstractContextManager:
        """The mixed-precision context of a forward pass: the adapter's autocast point where it has one and amp is
        on, else the trainer's (Precision.autocast)."""
        if not (self.precision.amp and "autocast" in self.adapter):
            return self.precision.autocast()
        context = self.adapter.call("autocast", self.precision.dtype, self.adapter_ctx)
        if not (hasattr(context, "__enter__") and hasattr(context, "__exit__")):
            raise AdapterError(f"{self.adapter.shown}: autocast() returned {type(context).__name__}, not a context "
                               f"manager")
        return context

    def _forward(self, batch: Any) -> tuple[torch.Tensor, int]:
        """The forward pass on a (micro) batch, in the autocast context: the adapter's train_step or the case's."""
        adapter = self.adapter
        with self._autocast():
            if "train_step" not in adapter:
                return self.case.train_step(self.model, batch)
            out = adapter.call("train_step", self.model, batch, self.adapter_ctx)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise AdapterError(f"{adapter.shown}: train_step() returned {type(out).__name__}, not (loss, samples)")
        return out

    def _step(self, batch: Any, step: int) -> tuple[torch.Tensor, int, float]:
        """One optimizer step on a batch already on the device: (loss, samples, seconds). With grad_accumulation,
        its micro batches' forward and backward in turn (tasks/training/accumulation.py), each loss weighted by its
        share of the batch, so that the gradients sum to the whole batch's and the loss is their mean."""
        adapter, actx = self.adapter, self.adapter_ctx
        self.sync()
        t0 = time.perf_counter()
        self.optimizer.zero_grad(set_to_none=True)
        parts = micro_batches(batch, self.micro_batch) if self.params.grad_accumulation > 1 else [(batch, 1.0)]
        losses: list[torch.Tensor] = []
        samples = 0
        for index, (micro, share) in enumerate(parts):
            with gradient_sync(self.model, last=index == len(parts) - 1):
                loss, count = self._forward(micro)
                if share != 1.0:
                    loss = loss * share
                if "backward" in adapter:
                    adapter.call("backward", step, loss, self.optimizer, self.scaler, actx)
                else:
                    self._backward(loss)
            losses.append(loss.detach())
            samples += count
        if "update_model_params" in adapter:
            adapter.call("update_model_params", step, self.optimizer, self.scheduler, self.scaler, actx)
        else:
            self._update_model_params()
        self.case.after_step(self.module)
        self.sync()
        return losses[0] if len(losses) == 1 else torch.stack(losses).sum(), samples, time.perf_counter() - t0

    def _evaluate(self, epoch: int, step: int) -> tuple[float, float]:
        """Evaluate, log EVALUATE_BEGIN and EVALUATE, record history: (target metric value, seconds).
        The case iterates a loader that checks for a stop request before each batch."""
        phase = f"evaluation after step {step}"
        stop_request.check(phase)
        self.log.event(ev.EVALUATE_BEGIN, {"epoch": epoch, "step": step})
        t0 = time.perf_counter()
        self.module.eval()
        with torch.no_grad(), self._autocast():
            limit = self.params.eval_max_batches or None  # a bounded run (check-vendor --functional)
            metrics = self.case.evaluate(self.module, stop_request.Checked(self.eval_loader, phase, limit))
        self.module.train()
        self.sync()
        seconds = time.perf_counter() - t0
        if self.target.metric not in metrics:
            raise ValueError(f"evaluate() returned {sorted(metrics)}, not the target metric '{self.target.metric}'")
        entry = {"epoch": epoch, "step": step, **{k: float(v) for k, v in metrics.items()}}
        self.history.append(entry)
        self.log.event(ev.EVALUATE, {**entry, "eval_time": seconds})
        return float(metrics[self.target.metric]), seconds

    # -- the loop --------------------------------------------------------------------------------

    def _logged_step(self, batch: Any, epoch: int, step: int, samples: int, core_time: float) -> tuple[int, float]:
        """One training step, its begin and end logged at a log step; the rank's samples and core time after it."""
        log = self.log
        batch = self.case.to_device(batch, self.device)
        if self.first_batch is None:  # its shapes, for the FLOPs count after training (tasks/training/flops.py)
            self.first_batch = meta_like(batch)
        log_this = log.should_log_step(step)
        if log_this:
            lr = self.optimizer.param_groups[0]["lr"]  # the rate this step uses
            log.event(ev.STEP_BEGIN, {"epoch": epoch}, step=step)
        loss, n, seconds = self._step(batch, step)
        samples += n
        core_time += seconds
        if log_this:
            log.event(ev.STEP_END, {"epoch": epoch, "loss": float(loss.item()),
                                    "lr": lr,
                                    "rank_samples": samples, "rank_core_time": core_time,
                                    "rank_core_samples_per_s": samples / core_time if core_time else None},
                      step=step)
        return samples, core_time

    def run(self) -> TrainerResult:
        self._setup()
        log, p = self.log, self.params
        step = epoch = samples = 0
        core_time = eval_time = 0.0
        metric: float | None = None
        evaluated_at = -1
        stop: str | None = None

        def evaluate() -> bool:
            nonlocal metric, eval_time, evaluated_at
            metric, seconds = self._evaluate(epoch, step)
            eval_time += seconds
            evaluated_at = step
            return self.target.reached(metric)

        self.model.train()
        stop_request.check("training")
        log.event(ev.TRAIN_START, {"amp": self.precision.amp, "precision": self.precision.name})
        train_start = time.perf_counter()
        over_budget = (lambda: time.perf_counter() - train_start >= p.time_budget_s) \
            if p.time_budget_s > 0 else (lambda: False)
        while stop is None:
            if p.max_epochs and epoch >= p.max_epochs:
                stop = names.MAX_EPOCHS
                break
            epoch += 1
            self.case.set_epoch(epoch)
            log.event(ev.EPOCH_BEGIN, {"epoch": epoch})
            steps_before_epoch = step
            for batch in self.train_loader:
                step += 1
                stop_request.check(f"training at step {step}")
                samples, core_time = self._logged_step(batch, epoch, step, samples, core_time)
                if p.max_steps and step >= p.max_steps:
                    stop = names.MAX_STEPS
                # Ranks agree on the budget at log steps (one tiny collective), every step on one rank.
                elif (self.ctx.world_size == 1 or step % p.log_freq == 0) and any_rank(over_budget(), self.device):
                    stop = names.TIME_BUDGET
                if p.eval_every_steps and step % p.eval_every_steps == 0 and evaluate():
                    stop = names.TARGET_REACHED
                if stop:
                    break
            if step == steps_before_epoch:
                raise ValueError("the training data loader yielded no batch in an epoch")
            log.event(ev.EPOCH_END, {"epoch": epoch, "step": step})
            if stop is None and p.eval_every_epochs and epoch % p.eval_every_epochs == 0 \
                    and evaluated_at != step and evaluate():
                stop = names.TARGET_REACHED
            if stop is None and any_rank(over_budget(), self.device):
                stop = names.TIME_BUDGET
        if evaluated_at != step:
            evaluate()
        self.sync()
        train_time = time.perf_counter() - train_start
        log.event(ev.TRAIN_END, {"train_time": train_time, "epoch": epoch, "step": step})

        global_samples, global_core = all_reduce_sum([samples, core_time], self.device)
        # The ranks of a model replica (tensor parallelism) train the same samples: counted once, each rank its share.
        replica = self.ctx.model_parallel
        global_samples, samples = global_samples / replica, samples // replica
        if self.save_to is not None:  # after TRAIN_END and the timings: a failure raised before this point
            self._save_checkpoint()
        rank_core_time = core_time
        # p_core from the mean per-rank compute time: ranks step in lockstep under DDP.
        core_time = global_core / self.ctx.world_size
        train_no_eval = train_time - eval_time
        converged = metric is not None and self.target.reached(metric)

        def rate(seconds: float, count: float = global_samples) -> float:
            return count / seconds if seconds > 0 else 0.0

        assert stop is not None  # the loop ends only with a reason
        return TrainerResult(
            status=names.SUCCESS if converged else names.NOT_CONVERGED, stop_reason=stop,
            converged=converged, metric=self.target.metric, final_metric=metric,
            target=self.target.value, samples=int(global_samples), steps=step, epochs=epoch,
            init_time=self.init_time, train_time=train_time, train_no_eval_time=train_no_eval,
            core_time=core_time, eval_time=eval_time,
            p_whole=rate(train_time), p_train=rate(train_no_eval), p_core=rate(core_time),
            rank_samples=samples, rank_core_time=rank_core_time,
            rank_p_whole=rate(train_time, samples), rank_p_train=rate(train_no_eval, samples),
            rank_p_core=rate(rank_core_time, samples),
            device=self.device.type, amp=self.precision.amp, precision=self.precision.name,
            peak_memory_bytes=self.runtime.peak_memory_bytes(self.device), metrics_history=self.history,
            adapted=self.adapter.adapted, adapter=self.adapter.shown,
            optimizer=self.optimizer_type, standard_optimizer=self.standard_optimizer_type)
