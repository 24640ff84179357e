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

from case_runners.driver import events as ev
from case_runners.driver.events import EventLogger
from case_runners.paths import project_root
from case_runners.rank import stop_request
from case_runners.rank.env import DistEnv
from case_runners.records import names

WORK_DIR = "inference_work"


def run(config: dict[str, Any], config_path: str, log: EventLogger, env: DistEnv) -> dict[str, Any]:
    """Steps a-g on this rank's device; the rank result (status success, the summary's figures)."""
    import torch

    from case_runners.inference.pipeline import run_pipeline
    from case_runners.rank.start import start_rank

    stop_request.check("init")
    runtime, device = start_rank(config, env)
    versions = runtime.versions()
    resolved = config["inference"]
    log.event(ev.SUBMIT_INFO, {"vendor": config["vendor"], "case": config["case"], "task": names.INFERENCE,
                               "case_id": config["case_id"], "config_path": config_path,
                               "run_id": os.environ.get("PERFPLAY_RUN_ID"), "device": str(device),
                               "configurations": resolved["configurations"], "parameters": resolved["parameters"],
                               "python": sys.executable, "torch": torch.__version__, "versions": versions})
    for note in config.get("notes") or []:
        print(note, flush=True)
    log.event(ev.LAUNCH_INFERENCE, {"case": config["case"], "compiler": resolved["configurations"]["compiler"],
                                    "notes": config.get("notes") or []})
    runtime.reset_peak_memory(device)
    summary = run_pipeline(resolved, project_root(), Path(config_path).parent / WORK_DIR, config.get("data_dir"),
                           log=lambda line: print(line, flush=True), device=str(device),
                           on_step=lambda step, info: log.event(ev.INFERENCE_STEP, {"step": step, **info}),
                           synchronize=runtime.synchronizer(device))
    return {"status": names.SUCCESS, "task": names.INFERENCE, "device": str(device), **summary,
            "monitor_devices": monitor_devices(config.get("vendor_info", {}), os.environ),
            "torch_peak_memory_bytes": runtime.peak_memory_bytes(device), "versions": versions}


def monitor_devices(vendor_info: dict[str, Any], environ: Any) -> list[int] | None:
    """The device indices this rank was given (the launcher's visible-devices variable), as the vendor monitor
    numbers devices; None when the vendor has no such variable or it names devices by UUID."""
    variable = vendor_info.get("visible_devices_env")
    values = [v.strip() for v in str(environ.get(variable, "") if variable else "").split(",") if v.strip()]
    return [int(v) for v in values] if values and all(v.isdigit() for v in values) else None
