"""An inference rank's task: the launcher starts it as it starts a training rank (`case_runners worker`), the rank
runtime sees task: inference in the resolved config and runs steps a-g here instead of training.

The ONNX file and the compiled engine go to <case dir>/inference_work/ beside resolved_config.json, not into the
node directory (which is collected to the controller): they can be large, and exist_onnx_path can name them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from case_runners.core.errors import PerfplayError
from case_runners.core.paths import project_root
from case_runners.rank import stop_request
from case_runners.rank.driver import events as ev
from case_runners.rank.driver.events import EventLogger
from case_runners.rank.env import DistEnv
from case_runners.records import names
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.schema import ABSENT

WORK_DIR = "inference_work"


def run(config: ResolvedConfig, config_path: str, log: EventLogger, env: DistEnv) -> dict[str, Any]:
    """Steps a-g on this rank's device; the fields of its result (records/rank.py InferenceRankResult) but rank,
    world_size and e2e_time."""
    import torch

    from case_runners.rank.start import start_rank
    from case_runners.tasks.inference.pipeline import run_pipeline

    stop_request.check("init")
    runtime, device = start_rank(config, env)
    versions = runtime.versions()
    resolved = config.inference
    if resolved is ABSENT:
        raise PerfplayError(f"{config_path}: an inference config needs its resolved files (key 'inference')")
    notes = [] if config.notes is ABSENT else config.notes  # ABSENT is truthy: `or []` would keep it
    log.event(ev.SUBMIT_INFO, {"vendor": config.vendor, "case": config.case, "task": names.INFERENCE,
                               "case_id": config.case_id, "config_path": config_path,
                               "run_id": os.environ.get("PERFPLAY_RUN_ID"), "device": str(device),
                               "configurations": resolved.configurations, "parameters": resolved.parameters,
                               "python": sys.executable, "torch": torch.__version__, "versions": versions})
    for note in notes:
        print(note, flush=True)
    log.event(ev.LAUNCH_INFERENCE, {"case": config.case, "compiler": resolved.compiler,
                                    "notes": notes})
    runtime.reset_peak_memory(device)
    summary = run_pipeline(resolved, project_root(), Path(config_path).parent / WORK_DIR, config.data_dir,
                           log=lambda line: print(line, flush=True), device=str(device),
                           on_step=lambda step, info: log.event(ev.INFERENCE_STEP, {"step": step, **info}),
                           synchronize=runtime.synchronizer(device),
                           on_begin=lambda step, name: log.event(ev.INFERENCE_STEP_BEGIN, {"step": step, "name": name}))
    return {"status": names.SUCCESS, "task": names.INFERENCE, "device": str(device), **summary,
            "monitor_devices": monitor_devices(config.vendor_info.visible_devices_env, os.environ),
            "torch_peak_memory_bytes": runtime.peak_memory_bytes(device), "versions": versions}


def monitor_devices(variable: str | None, environ: Any) -> list[int] | None:
    """The device indices this rank was given (in `variable`, the launcher's visible-devices variable), as the
    vendor monitor numbers devices; None when the vendor has no such variable or it names devices by UUID."""
    values = [v.strip() for v in str(environ.get(variable, "") if variable else "").split(",") if v.strip()]
    return [int(v) for v in values] if values and all(v.isdigit() for v in values) else None
