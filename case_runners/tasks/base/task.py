"""A base rank's task (the rank runtime runs it: case_runners/rank/worker.py): the benchmark the config names
(case_runners/plan/config/benchmarks.py), measured on this rank's device through the vendor's runtime. A collective
joins the process group first; every other benchmark measures its own device. Its `mode` param runs perfplay's
torch benchmark, the vendor's toolkit (tasks/base/toolkit.py), or both, the toolkit's figures after the torch
ones."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from case_runners.core.paths import project_root
from case_runners.plan.config.benchmarks import BENCHMARKS, ONE, runs_toolkit, runs_torch
from case_runners.rank import stop_request
from case_runners.rank.driver import events as ev
from case_runners.rank.driver.events import EventLogger
from case_runners.rank.env import DistEnv
from case_runners.records import names
from case_runners.records.base import headlines
from case_runners.records.resolved import ResolvedConfig
from case_runners.tasks.base.toolkit import measure as toolkit_measure
from case_runners.vendors.toolkits import load_toolkit

MEASURE_MODULE = "case_runners.tasks.base.benchmarks.{name}.measure"  # its measure(params, ctx) -> [Measurement]


def run(config: ResolvedConfig, config_path: str, log: EventLogger, env: DistEnv) -> dict[str, Any]:
    """Measure one benchmark on this rank; the fields of its result (records/rank.py BaseRankResult) but rank,
    world_size and e2e_time."""
    import torch

    from case_runners.rank.dist import init_distributed
    from case_runners.rank.start import start_rank
    from case_runners.tasks.base.context import BaseContext

    stop_request.check("init")
    benchmark = BENCHMARKS[config.case]
    runtime, device = start_rank(config, env)
    versions = runtime.versions()
    log.event(ev.SUBMIT_INFO, {"vendor": config.vendor, "case": config.case, "task": names.BASE,
                               "case_id": config.case_id, "config_path": config_path,
                               "run_id": os.environ.get("PERFPLAY_RUN_ID"), "device": str(device),
                               "dist_backend": runtime.dist_backend, "world_size": env.world_size,
                               "params": config.params, "python": sys.executable, "torch": torch.__version__,
                               "versions": versions})
    if benchmark.ranks != ONE and runs_torch(config.params):
        init_distributed(env, runtime.dist_backend, device)
    stop_request.check("init (benchmark)")
    ctx = BaseContext(benchmark=benchmark.name, runtime=runtime, device=device, hardware_name=config.hardware,
                      hardware=config.vendor_info.hardware, nnodes=config.nnodes, rank=env.rank,
                      world_size=env.world_size, say=lambda line: print(line, flush=True))
    measurements = []
    if runs_torch(config.params):
        measure = importlib.import_module(MEASURE_MODULE.format(name=benchmark.name)).measure
        measurements += measure(config.params, ctx)
    if runs_toolkit(config.params):
        stop_request.check("base (the toolkit)")
        toolkit = load_toolkit(project_root(), config.vendor, benchmark.name)
        measurements += toolkit_measure(toolkit, ctx, env, Path(log.log_dir))
    for m in measurements:
        log.event(ev.BASE_MEASUREMENT, m.to_json())
    return {"status": names.SUCCESS, "task": names.BASE, "benchmark": benchmark.name, "device": str(device),
            "measurements": [m.to_json() for m in measurements],
            "headlines": [h.to_json() for h in headlines(measurements)],
            "convention": benchmark.convention, "versions": versions}
