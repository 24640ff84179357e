"""One training rank: `python -m case_runners worker --config RESOLVED.json --log-dir DIR`
(an inference case's rank too: task: inference in the config runs case_runners.inference.worker instead).

Reads the resolved config, loads the vendor's extern/ adapter (training/adapter.py) where the vendor case has one,
joins the process group, builds the case, trains, and writes
`rank<R>.events.jsonl` and `rank<R>.result.json` in DIR. Returns 0 for success and
not_converged (both are results), 1 when the run crashed (the traceback is in the result),
128 + the signal when SIGTERM or SIGINT stopped it (stop_request.py; the phase is in the result).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from case_runners import files
from case_runners.driver import events as ev
from case_runners.driver.events import EventLogger
from case_runners.errors import PerfplayError
from case_runners.training import stop_request
from case_runners.training.dist_env import DistEnv


def _say(text: str) -> None:
    """To the rank's log (stderr), unless there is no room left to say it."""
    with contextlib.suppress(OSError):
        print(text, file=sys.stderr, flush=True)


DEVICE_INDEX_ENV = "PERFPLAY_DEVICE_INDEX"  # the rank's device among those it sees, set by the launcher


def result_path(log_dir: Path, rank: int) -> Path:
    return Path(log_dir) / f"rank{rank}.result.json"


def start_rank(config: dict[str, Any], env):
    """The vendor's runtime prepared (environment, imports, setup(), before torch touches its device) and this rank's
    device: the launcher's choice (DEVICE_INDEX_ENV) or else the local rank; a CPU's cores shared among the node's
    ranks. (runtime, device)"""
    from case_runners.vendor_runtime import VendorRuntime

    runtime = VendorRuntime.for_config(config)
    runtime.prepare()
    device = runtime.pick_device(int(os.environ.get(DEVICE_INDEX_ENV) or env.local_rank))
    if device.type == "cpu":
        limit_cpu_threads(env.local_world_size)
    return runtime, device


def load_case_builder(case: str):
    """`build_case` from `case_runners.cases.<case>.case`."""
    module = importlib.import_module(f"case_runners.cases.{case}.case")
    return module.build_case


def limit_cpu_threads(local_world_size: int) -> None:
    """Share the host's cores among the ranks on it, unless OMP_NUM_THREADS says otherwise."""
    import torch

    if not os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, local_world_size)))


def write_json(path: Path, data: dict[str, Any]) -> None:
    """The rank's result, atomically (whole or absent); files.WriteError names the cause and the path."""
    files.atomic_write_json(path, data, default=str)


def run(config: dict[str, Any], config_path: str, log: EventLogger, env) -> dict[str, Any]:
    """Train one rank and return its result record (everything but e2e_time)."""
    import torch

    from case_runners.training.adapter import load_adapter
    from case_runners.training.case_api import RunContext
    from case_runners.training.dist import init_distributed
    from case_runners.training.trainer import Target, Trainer, seed_everything
    from case_runners.vendors import DEFAULT_AMP_DTYPE

    stop_request.check("init")
    params = config["params"]
    runtime, device = start_rank(config, env)
    adapter = load_adapter(config["vendor"], config["case"])  # after the vendor's imports, before the case
    runtime.allow_tf32(bool(params.get("tf32", False)))
    backend = runtime.dist_backend
    versions = runtime.versions()
    log.event(ev.SUBMIT_INFO, {"vendor": config.get("vendor"), "case": config["case"],
                               "case_id": config.get("case_id"), "config_path": config_path,
                               "run_id": os.environ.get("PERFPLAY_RUN_ID"), "device": str(device),
                               "dist_backend": backend, "world_size": env.world_size, "params": params,
                               "python": sys.executable, "torch": torch.__version__, "versions": versions,
                               "adapter": adapter.shown})
    init_distributed(env, backend, device)
    stop_request.check("init (case)")
    seed_everything(int(params.get("seed", 0)))
    ctx = RunContext(rank=env.rank, local_rank=env.local_rank, world_size=env.world_size,
                     device=device, data_dir=config.get("data_dir"), log=log, runtime=runtime,
                     pin_memory=device.type != "cpu")
    case = load_case_builder(config["case"])(params, ctx)
    stop_request.check("init (trainer)")
    log.event(ev.LAUNCH_TRAINING, {"case": config["case"]})
    trainer = Trainer(case, params, ctx, Target.from_config(config["target"]),
                      amp_dtype=str(config.get("vendor_info", {}).get("amp_dtype") or DEFAULT_AMP_DTYPE),
                      adapter=adapter)
    return {**trainer.run(), "versions": versions}


def main(config_path: str, log_dir: str, launcher_grace_s: float | None = None) -> int:
    """launcher_grace_s: the launcher's time between SIGTERM and SIGKILL (the `worker` command passes it). Given,
    SIGTERM and SIGINT stop the rank within part of it (stop_request), for the rest of the process; None, for
    in-process callers, leaves signal handling alone."""
    started = time.perf_counter()
    try:
        out = files.secure_dir(log_dir)
    except PerfplayError as e:  # not a directory this user may safely write in: nowhere to leave a result
        _say(f"error: {e}")
        return 2
    env, log, code = DistEnv(), None, 0

    def record(result: dict[str, Any]) -> dict[str, Any]:
        return {"schema": "perfplay.rank_result/1", "rank": env.rank, "world_size": env.world_size,
                **result, "e2e_time": time.perf_counter() - started}

    if launcher_grace_s is not None:  # the watchdog's result; it writes no event (the main thread may be writing one)
        stop_request.install(launcher_grace_s, lambda reason: write_json(
            result_path(out, env.rank), record({"status": "failed", "reason": reason})))
    try:
        env = DistEnv.from_environ()
        config = json.loads(Path(config_path).read_text(encoding="utf-8"))
        log = EventLogger(out, env.rank, int(config.get("params", {}).get("log_freq", 10)))
        if config.get("task") == "inference":
            from case_runners.inference.worker import run as run_inference
            result = run_inference(config, config_path, log, env)
        else:
            result = run(config, config_path, log, env)
    except stop_request.Stopped as e:
        result, code = {"status": "failed", "reason": str(e)}, e.request.exit_code
    except PerfplayError as e:  # a bad input found only on the host (a corrupt ONNX file): its message, no traceback
        _say(f"error: {e}")
        result, code = {"status": "failed", "reason": str(e)}, 1
    except Exception:  # noqa: BLE001 - any crash becomes a "failed" result with its traceback
        reason = traceback.format_exc()
        _say(reason)
        result, code = {"status": "failed", "reason": reason}, 1
    finally:
        from case_runners.training.dist import shutdown_distributed
        shutdown_distributed()
    result = record(result)
    try:
        log = log or EventLogger(out, env.rank, 10)
        log.event(ev.FINISHED, {k: v for k, v in result.items() if k not in ("metrics_history", "reason")})
        stop_request.write_result(lambda: write_json(result_path(out, env.rank), result), code)
        log.close()
    except (OSError, PerfplayError) as e:  # a full disk: the launcher names it from the free space it sees
        _say(f"error: the rank's result could not be written: {e}")
        code = code or 1
    stop_request.end_if_requested(code)
    return code
