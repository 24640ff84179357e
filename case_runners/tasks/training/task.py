"""A training rank's task (the rank runtime runs it: case_runners/rank/worker.py).

A vendor's own stack runs its program (tasks/training/vendor_stack.py). Else: loads the vendor's extern/ adapter
(tasks/training/adapter.py) where the vendor case has one, over the points of the built-in stack the config names
(tasks/training/stacks/; none for pytorch), joins the process group,
builds the case and trains; the trainer writes the events (and through them the rank's dllogger stream,
rank/driver/dllogger.py), the rank runtime the result.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from case_runners.core.errors import PerfplayError
from case_runners.plan.config.shared_params import model_parallel
from case_runners.plan.config.stacks import PYTORCH, STACKS
from case_runners.rank import stop_request
from case_runners.rank.driver import events as ev
from case_runners.rank.driver.dllogger import TrainingStream
from case_runners.rank.driver.events import EventLogger
from case_runners.rank.env import DistEnv
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.schema import ABSENT

if TYPE_CHECKING:  # imported once the rank's runtime is prepared
    from case_runners.tasks.training.case_api import RunContext, TrainingCase


def load_case_builder(case: str) -> Callable[[dict[str, Any], RunContext], TrainingCase]:
    """`build_case` from `case_runners.cases.<case>.case`."""
    module = importlib.import_module(f"case_runners.cases.{case}.case")
    return module.build_case


def run(config: ResolvedConfig, config_path: str, log: EventLogger, env: DistEnv) -> dict[str, Any]:
    """Train one rank; the fields of its result (records/rank.py TrainingRankResult) but rank, world_size and
    e2e_time."""
    if config.framework not in (PYTORCH, *STACKS):  # a vendor's own stack: its program trains
        from case_runners.tasks.training import vendor_stack

        return vendor_stack.run(config, config_path, log, env)
    import torch

    from case_runners.plan.config.shared_params import TrainerParams
    from case_runners.rank.dist import init_distributed
    from case_runners.rank.start import start_rank
    from case_runners.tasks.training.adapter import load_adapter
    from case_runners.tasks.training.case_api import RunContext
    from case_runners.tasks.training.stacks import load_stack
    from case_runners.tasks.training.trainer import Trainer, seed_everything
    from case_runners.vendors.description import DEFAULT_AMP_DTYPE

    stop_request.check("init")
    params = config.params
    trainer_params = TrainerParams.from_params(params, f"{config_path}: params")
    runtime, device = start_rank(config, env)
    # after the vendor's imports, before the case; the vendor's points over its stack's (tasks/training/stacks/)
    adapter = load_adapter(config.vendor, config.case).under(load_stack(config.framework))
    runtime.allow_tf32(trainer_params.tf32)
    backend = runtime.dist_backend
    versions = runtime.versions()
    if adapter.stack is not None:  # the stack's package, at the version it runs
        versions[adapter.stack] = importlib.metadata.version(adapter.stack)
    log.event(ev.SUBMIT_INFO, {"vendor": config.vendor, "case": config.case,
                               "case_id": config.case_id, "config_path": config_path,
                               "run_id": os.environ.get("PERFPLAY_RUN_ID"), "device": str(device),
                               "dist_backend": backend, "world_size": env.world_size, "params": params,
                               "python": sys.executable, "torch": torch.__version__, "versions": versions,
                               "adapter": adapter.shown})
    init_distributed(env, backend, device)
    stop_request.check("init (case)")
    seed_everything(trainer_params.seed)
    ctx = RunContext(rank=env.rank, local_rank=env.local_rank, world_size=env.world_size,
                     device=device, data_dir=config.data_dir, log=log, runtime=runtime,
                     pin_memory=device.type != "cpu", work_dir=Path(config_path).parent,
                     model_parallel=model_parallel(params))
    case = load_case_builder(config.case_package)(params, ctx)
    stop_request.check("init (trainer)")
    if config.target is None:
        raise PerfplayError(f"{config_path}: a training case needs a target (key 'target' is null)")
    log.add_sink(TrainingStream(log.log_dir, env.rank, config.target, params))  # rank<R>.dllogger.json
    log.event(ev.LAUNCH_TRAINING, {"case": config.case})
    trainer = Trainer(case, params, ctx, config.target,
                      amp_dtype=config.vendor_info.amp_dtype or DEFAULT_AMP_DTYPE, adapter=adapter)
    result = {**trainer.run().to_json(), "versions": versions}
    if config.flops_counted is not ABSENT and env.rank == 0:  # after training: no timed step is touched
        from case_runners.tasks.training.flops import flops_count

        result["flops"] = flops_count(config.case, case, params, list(config.flops_counted),
                                      trainer.first_batch).to_json()
    return result
