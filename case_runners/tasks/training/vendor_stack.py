"""A training rank on a vendor's own stack (vendors/vendor_stacks.py): the vendor's program trains, perfplay measures.

The rank writes the inputs (INPUTS_ENV: a JSON file per rank, rank<R>.stack_inputs.json in its log dir), runs the
stack's command as its child (cwd the stack's folder; the rank's environment, with RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT as the launcher set them, plus INPUTS_ENV), forwards SIGTERM and SIGINT to it and keeps
the round's deadline (rank/stop_request.py), then reads the stream the program wrote and re-emits it as the
trainer's events: its own dllogger stream, result (records/rank.py) and record are those of any training round.
The rank joins no process group and does not touch the device: the program does both.

The inputs (the case's stack_inputs hook gives the workload's part: model shape, seq_len, data, optimizer, schedule,
eval, init: how the pytorch stack draws its initial weights from the seed; and where the case has a stack_order
hook, data.order: the path of a JSON file, ORDER_SCHEMA, whose `steps` list each of the rank's max_steps steps'
training sequences in the pytorch stack's order, so that a stack that follows init and order trains on the same
weights and batches and `compare` aligns it with the pytorch stack step by step): schema, case, stack, rank,
world_size, local_rank, global_batch (sequences per optimizer step over all ranks: the trainer param global_batch,
or batch_size x data_parallel), data_parallel (the ranks / the stack's tensor_parallel x pipeline_parallel, where it
declares them), batch_per_rank (a data-parallel rank's sequences of a step), grad_accumulation and
micro_batch_per_rank (batch_per_rank in grad_accumulation micro batches of micro_batch_per_rank, one optimizer
step; a stack's own micro_batch param where it has one: Megatron's micro-batch-size, DeepSpeed's
train_micro_batch_size_per_gpu), max_steps, seed, log_freq, precision (fp32, tf32, bf16 or fp16), stack_params (its
stack.yaml params as resolved), params (all of the round's, for reference), stream and log_file (where a log-parser
stack declares one: the file the program writes its log to; else null).

The stream (`stream` in the inputs; not rank<R>.dllogger.json, which is perfplay's) is perfplay's dllogger format
(rank/driver/dllogger.py), `DLLL {json}` lines:
- one LOG line per training step, 1..max_steps in order, `"step": [epoch, step]`, with the data
  STEP_FIELDS: `train.loss` (the step's training loss, nats per token for llama), `step_time` (seconds of the
  step's compute, the batch on the device .. the optimizer step done: what p_core counts) and `samples` (the step's
  GLOBAL samples: the global batch's, in the case's unit: tokens for llama); `train.lr` optional;
- at the end, a LOG line with the case's eval metric (`eval.held_out_loss` for llama: EVAL_PREFIX + the target
  metric), `"step": [epoch, last step]`; `eval_time` (seconds) optional.
Other lines (METADATA, other fields) are allowed and ignored. A stream without a required field, or a command
that exits non-zero, fails the rank naming what was missing and the program's last lines of output.

From it: samples (global) = the sum of the steps'; rank_samples = samples / world_size (the rank's share, so that a
node's ranks sum to its throughput); core_time = the sum of step_time; train_time from the first step's start
(its line's timestamp less its step_time) to the last line's timestamp; init_time from the launch to that start.

A stack whose `log_rank` is one rank (`0`, or `last`: Megatron prints on its last rank only) is measured on that
rank alone: every other rank runs the program as well, and only has to see it end well; its result is silent
(records/rank.py SilentRankResult, `logged_by` the logging rank), and the round's record takes its figures from
the rank that logs.

A stack with a `log_parser` (a program that prints its own log, as Megatron does) does not write the stream: the
rank parses each line of the program's output (or of its `log_file`, `log_file` in the inputs, followed as it is
written) as it arrives (tasks/training/log_parsers.py) and writes the stream itself, at the same path, timestamped
by the rank's clock (the program runs with PYTHONUNBUFFERED=1 so that its lines arrive when printed), keeps the raw
log as rank<R>.stack.log, and reports what the parser matched and skipped on the rank's stderr. A parser that
matches no line fails the rank naming the stack and the parser.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any, cast

from case_runners.core import files
from case_runners.core.errors import PerfplayError
from case_runners.core.paths import project_root
from case_runners.plan.config.shared_params import batch_split, precision_name
from case_runners.rank import stop_request
from case_runners.rank.child import run_child as _run_command
from case_runners.rank.driver import events as ev
from case_runners.rank.driver.dllogger import (
    EVAL_PREFIX,
    TRAIN_LOSS,
    TRAIN_LR,
    DlloggerError,
    LogEntry,
    TrainingStream,
    read_dllogger,
)
from case_runners.rank.driver.events import EventLogger
from case_runners.rank.env import THREADS_ENV, DistEnv, omp_num_threads
from case_runners.records import names
from case_runners.records.rank import LOGGED_BY, TrainerResult
from case_runners.records.resolved import ResolvedConfig
from case_runners.tasks.training.log_parsers import Follower, LogReader, load_parser
from case_runners.vendors.vendor_stacks import VendorStack, load_stack

INPUTS_ENV = "PERFPLAY_STACK_INPUTS"
SCHEMA = "perfplay.stack_inputs/1"
ORDER_SCHEMA = "perfplay.stack_order/1"
STEP_TIME, SAMPLES, EVAL_TIME = "step_time", "samples", "eval_time"
STEP_FIELDS = (TRAIN_LOSS, STEP_TIME, SAMPLES)  # every step line's


def inputs_path(log_dir: Path, rank: int) -> Path:
    return log_dir / f"rank{rank}.stack_inputs.json"


def stream_path(log_dir: Path, rank: int) -> Path:
    return log_dir / f"rank{rank}.stack.dllogger.json"


def order_path(log_dir: Path, rank: int) -> Path:
    """The rank's data order: ORDER_SCHEMA, `steps`, each step's training sequences."""
    return log_dir / f"rank{rank}.stack_order.json"


def raw_log_path(log_dir: Path, rank: int) -> Path:
    """A log-parser stack's output as it printed it."""
    return log_dir / f"rank{rank}.stack.log"


def precision(params: dict[str, Any], vendor_amp_dtype: str) -> str:
    """What the round computes in, as the trainer's Precision.name: the amp dtype (the vendor's where the params
    leave it "") with amp, else tf32 or fp32."""
    return precision_name(bool(params.get("amp")), str(params.get("amp_dtype") or vendor_amp_dtype),
                          bool(params.get("tf32")))


def stack_inputs(config: ResolvedConfig, stack: VendorStack, env: DistEnv, log_dir: Path) -> dict[str, Any]:
    """The rank's inputs (the module docstring); the case's part from its stack_inputs hook."""
    hooks = _case_hooks(config.case_package)
    if not hasattr(hooks, "stack_inputs"):
        raise PerfplayError(f"case '{config.case}' gives a vendor stack no inputs (its package has no stack_inputs "
                            f"hook): it cannot run on the {stack.name} stack")
    p = config.params
    split = batch_split(p, env.world_size)
    case_part = hooks.stack_inputs(p, config.data_dir)
    if hasattr(hooks, "stack_order"):  # run() writes it
        case_part["data"] = {**case_part["data"], "order": str(order_path(log_dir, env.rank))}
    return {"schema": SCHEMA, "case": config.case, "stack": stack.name, "rank": env.rank,
            "local_rank": env.local_rank, "world_size": env.world_size, **case_part,
            "global_batch": split.global_batch, "data_parallel": split.data_parallel,
            "batch_per_rank": split.per_rank, "grad_accumulation": split.accumulation,
            "micro_batch_per_rank": split.micro, "max_steps": int(p["max_steps"]),
            "seed": int(p["seed"]), "log_freq": int(p["log_freq"]),
            "precision": precision(p, config.vendor_info.amp_dtype),
            "stack_params": {name: p[name] for name in stack.params}, "params": p,
            "stream": str(stream_path(log_dir, env.rank)),
            "log_file": str(stack.log_path(log_dir, env.rank)) if stack.log_file else None}


def _case_hooks(package: str) -> Any:
    """The case package (cases.case_package: llama for a model case): its stack_inputs and stack_order hooks."""
    import importlib

    return importlib.import_module(f"case_runners.cases.{package}")


def run(config: ResolvedConfig, config_path: str, log: EventLogger, env: DistEnv) -> dict[str, Any]:
    """Train one rank on the config's vendor stack; the fields of its result but rank, world_size and e2e_time."""
    stop_request.check("init")
    stack = load_stack(project_root(), config.vendor, config.framework)
    log_dir = Path(log.log_dir)
    threads = omp_num_threads(os.environ, env.local_world_size, config.vendor_info.device)
    if threads is not None:
        os.environ[THREADS_ENV] = threads  # the program's share of the cores, as a rank's own
    inputs = stack_inputs(config, stack, env, log_dir)
    if inputs["data"].get("order"):
        order = _case_hooks(config.case_package).stack_order(config.params, config.data_dir, env.rank, env.world_size)
        files.atomic_write_json(Path(inputs["data"]["order"]), {"schema": ORDER_SCHEMA, "steps": order})
    files.atomic_write_json(inputs_path(log_dir, env.rank), inputs)
    stream = Path(inputs["stream"])
    stream.unlink(missing_ok=True)
    argv = stack.argv(sys.executable)
    log.event(ev.SUBMIT_INFO, {"vendor": config.vendor, "case": config.case, "case_id": config.case_id,
                               "config_path": config_path, "run_id": os.environ.get("PERFPLAY_RUN_ID"),
                               "stack": stack.name, "command": argv, "world_size": env.world_size,
                               "params": config.params, "python": sys.executable})
    if config.target is None:
        raise PerfplayError(f"{config_path}: a training case needs a target (key 'target' is null)")
    silent = not stack.logs_on(env.rank, env.world_size)  # its log_rank is another rank
    if not silent:
        log.add_sink(TrainingStream(log.log_dir, env.rank, config.target, config.params))  # rank<R>.dllogger.json
    log.event(ev.LAUNCH_TRAINING, {"case": config.case, "stack": stack.name})
    launched = time.time()
    child_env = {**os.environ, INPUTS_ENV: str(inputs_path(log_dir, env.rank))}
    if silent:
        return _run_silent(argv, stack, child_env, env.world_size)
    reader = follower = None
    log_file = stack.log_path(log_dir, env.rank)
    if stack.log_parser is not None:
        reader = LogReader(stack, load_parser(stack), inputs, raw_log_path(log_dir, env.rank), log_file)
        child_env["PYTHONUNBUFFERED"] = "1"
        if log_file is not None:
            log_file.unlink(missing_ok=True)  # an earlier round's
            follower = Follower(log_file, reader.line)
            follower.start()
    try:
        code, tail = _run_command(argv, stack.dir, child_env, reader.line if reader and not follower else None)
    finally:
        if follower:
            follower.stop()
        if reader:
            reader.close()
    said = "\n".join(tail)
    parsed = ""
    if reader:
        parsed = f" ({reader.report()})"
        with contextlib.suppress(OSError):
            sys.stderr.write(f"perfplay: {reader.report()}\n")
    if code != 0:
        raise PerfplayError(f"the {stack.name} stack's command exited with {code}: {' '.join(argv)}{parsed}; its "
                            f"last output:\n{said}")
    try:
        if reader:
            reader.check()  # its message says what the parser made of the output
    except PerfplayError as exc:
        raise PerfplayError(f"{exc}; the {stack.name} stack's last output:\n{said}") from None
    try:
        steps, evals = read_stream(stream, config.target.metric, int(config.params["max_steps"]))
    except PerfplayError as exc:
        raise PerfplayError(f"{exc}{parsed}; the {stack.name} stack's last output:\n{said}") from None
    case_optimizer = (inputs.get("optimizer") or {}).get("name")
    return _reemit(steps, evals, config, env, log, launched, stack, case_optimizer).to_json() | {"versions": {}}


def _run_silent(argv: list[str], stack: VendorStack, env: dict[str, str], world_size: int) -> dict[str, Any]:
    """A rank whose program does not log the steps: it only has to end well; its result names the rank that logs."""
    code, tail = _run_command(argv, stack.dir, env)
    if code != 0:
        said = "\n".join(tail)
        raise PerfplayError(f"the {stack.name} stack's command exited with {code}: {' '.join(argv)}; its last "
                            f"output:\n{said}")
    return {"status": names.SUCCESS, LOGGED_BY: stack.logging_rank(world_size), "versions": {}}


def read_stream(path: Path, metric: str, max_steps: int) -> tuple[list[LogEntry], list[LogEntry]]:
    """(the step lines, the eval lines) of a stack's stream, checked against the contract (the module docstring);
    PerfplayError naming the file, the line's step and what it lacks."""
    if not path.is_file():
        raise PerfplayError(f"the stack wrote no stream at {path} (the inputs' 'stream')")
    try:
        entries = [e for e in read_dllogger(path) if isinstance(e, LogEntry) and isinstance(e.step, tuple)
                   and len(e.step) == 2]
    except (DlloggerError, OSError, UnicodeDecodeError) as exc:
        raise PerfplayError(f"the stack's stream cannot be read: {exc}") from None
    eval_name = EVAL_PREFIX + metric
    steps = [e for e in entries if TRAIN_LOSS in e.data or eval_name not in e.data]
    evals = [e for e in entries if eval_name in e.data]
    for entry in steps:
        missing = [f for f in STEP_FIELDS if not _number(entry.data.get(f))]
        if missing:
            raise PerfplayError(f"{path}: the line of step {list(entry.step)} lacks {', '.join(missing)} (a step "
                                f"line needs numbers {', '.join(STEP_FIELDS)}: tasks/training/vendor_stack.py)")
    numbers = [_at(e)[1] for e in steps]
    if numbers != list(range(1, max_steps + 1)):
        raise PerfplayError(f"{path}: logs steps {_ranges(numbers)}, not one line per step 1..{max_steps} "
                            f"(max_steps)")
    if not evals or not _number(evals[-1].data[eval_name]):
        raise PerfplayError(f"{path}: lacks {eval_name} (the held-out evaluation at the end, a number)")
    return steps, evals


def _at(entry: LogEntry) -> tuple[int, int]:
    """(epoch, step) of a line read_stream kept (its step is [epoch, step])."""
    epoch, step = cast("tuple[int, int]", entry.step)
    return epoch, step


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value  # not NaN


def _ranges(numbers: list[int]) -> str:
    return f"{numbers[0]}..{numbers[-1]} ({len(numbers)} lines)" if numbers else "none"


def _reemit(steps: list[LogEntry], evals: list[LogEntry], config: ResolvedConfig, env: DistEnv, log: EventLogger,
            launched: float, stack: VendorStack, optimizer: str | None) -> TrainerResult:
    """The trainer's events from the stream (STEP_END at the log steps, EVALUATE, TRAIN_END), and its result."""
    target = config.target
    assert target is not None  # run() refused a config without one
    metric = target.metric
    eval_name = EVAL_PREFIX + metric
    first = steps[0]
    train_start = first.timestamp - float(first.data[STEP_TIME])
    train_end = max(e.timestamp for e in [*steps, *evals])
    amp = bool(config.params.get("amp"))
    log.event(ev.TRAIN_START, {"amp": amp, "precision": precision(config.params, config.vendor_info.amp_dtype)})
    samples = core_time = 0.0
    for entry in steps:
        epoch, step = _at(entry)
        samples += float(entry.data[SAMPLES])
        core_time += float(entry.data[STEP_TIME])
        rank_samples = samples / env.world_size
        log.event(ev.STEP_BEGIN, {"epoch": epoch}, step=step)
        log.event(ev.STEP_END, {"epoch": epoch, "loss": float(entry.data[TRAIN_LOSS]),
                                "lr": entry.data.get(TRAIN_LR), "rank_samples": rank_samples,
                                "rank_core_time": core_time,
                                "rank_core_samples_per_s": rank_samples / core_time if core_time else None},
                  step=step)
    history: list[dict[str, Any]] = []
    eval_time = final = 0.0
    for entry in evals:
        epoch, step = _at(entry)
        value = float(entry.data[eval_name])
        seconds = float(entry.data.get(EVAL_TIME) or 0.0)
        eval_time += seconds
        history.append({"epoch": epoch, "step": step, metric: value})
        final = value
        log.event(ev.EVALUATE, {"epoch": epoch, "step": step, metric: value, "eval_time": seconds})
    train_time = max(train_end - train_start, core_time)
    last_epoch, last_step = _at(steps[-1])
    log.event(ev.TRAIN_END, {"train_time": train_time, "epoch": last_epoch, "step": last_step})
    converged = target.reached(final)
    no_eval = max(train_time - eval_time, 0.0)
    rank_samples = samples / env.world_size

    def rate(count: float, seconds: float) -> float:
        return count / seconds if seconds > 0 else 0.0

    return TrainerResult(
        status=names.SUCCESS if converged else names.NOT_CONVERGED, stop_reason=names.MAX_STEPS,
        converged=converged, metric=metric, final_metric=final, target=target.value, samples=int(samples),
        steps=len(steps), epochs=last_epoch, init_time=max(train_start - launched, 0.0),
        train_time=train_time, train_no_eval_time=no_eval, core_time=core_time, eval_time=eval_time,
        p_whole=rate(samples, train_time), p_train=rate(samples, no_eval), p_core=rate(samples, core_time),
        rank_samples=int(rank_samples), rank_core_time=core_time, rank_p_whole=rate(rank_samples, train_time),
        rank_p_train=rate(rank_samples, no_eval), rank_p_core=rate(rank_samples, core_time),
        device=config.vendor_info.device, amp=amp, precision=precision(config.params, config.vendor_info.amp_dtype),
        peak_memory_bytes=None, metrics_history=history, adapted=[], adapter=None,
        optimizer=f"{stack.name} (the stack's own)", standard_optimizer=str(optimizer or ""))
