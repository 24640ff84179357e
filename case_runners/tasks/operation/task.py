"""An operation rank's task (the rank runtime runs it: case_runners/rank/worker.py): every operator of the config's
suite, in each of its dtypes, on this rank's device, first natively, then with the library the vendor's runtime
hook turns on (a library stays on for the rest of the process). Every rank measures its own device; no process
group."""

from __future__ import annotations

import os
import sys
from typing import Any

from case_runners.rank import stop_request
from case_runners.rank.driver import events as ev
from case_runners.rank.driver.events import EventLogger
from case_runners.rank.env import DistEnv
from case_runners.records import names
from case_runners.records.operation import NATIVE, with_speedups
from case_runners.records.resolved import ResolvedConfig
from case_runners.tasks.operation import operator_dtypes


def run(config: ResolvedConfig, config_path: str, log: EventLogger, env: DistEnv) -> dict[str, Any]:
    """Measure the suite on this rank; the fields of its result (records/rank.py OperationRankResult) but rank,
    world_size and e2e_time."""
    import torch

    from case_runners.rank.start import start_rank
    from case_runners.tasks.operation.measure import measure

    stop_request.check("init")
    params = config.params
    runtime, device = start_rank(config, env)
    versions = runtime.versions()
    log.event(ev.SUBMIT_INFO, {"vendor": config.vendor, "case": config.case, "task": names.OPERATION,
                               "case_id": config.case_id, "config_path": config_path,
                               "run_id": os.environ.get("PERFPLAY_RUN_ID"), "device": str(device),
                               "world_size": env.world_size, "params": params, "python": sys.executable,
                               "torch": torch.__version__, "versions": versions})
    say = print if env.rank == 0 else (lambda *_a, **_k: None)
    runtime.allow_tf32(False)  # an FP32 operator is fp32, against the fp32 peak
    library_on_cpu = device.type == "cpu" and len(params["oplibs"]) > 1  # it computes the reference too: measure.py
    kept: dict[Any, Any] | None = {} if library_on_cpu else None
    rows = []
    with torch.no_grad():
        for oplib in params["oplibs"]:
            if oplib != NATIVE:
                runtime.enable_oplib(oplib)
            for op in params["suite"]:
                for dtype in operator_dtypes(op, params["dtypes"]):
                    stop_request.check(f"operation {op} {dtype} {oplib}")
                    row = measure(op, dtype, params["shapes"][op], oplib, runtime=runtime, device=device,
                                  hardware=config.vendor_info.hardware, warmup=params["warmup"],
                                  iterations=params["iterations"], kept=kept)
                    log.event(ev.OPERATION_MEASUREMENT, row.to_json())
                    say(f"  {op} {dtype} {oplib}: {'correct' if row.correct else 'NOT CORRECT'} (max error "
                        f"{row.max_error}), median {row.latency_median_s * 1e6:.1f} us", flush=True)
                    rows.append(row)
    rows = with_speedups(rows)
    incorrect = [f"{r.op} {r.dtype} {r.oplib}" for r in rows if not r.correct]
    return {"status": names.NOT_CONVERGED if incorrect else names.SUCCESS, "task": names.OPERATION,
            "device": str(device), "oplibs": list(params["oplibs"]), "operation": [r.to_json() for r in rows],
            "incorrect": incorrect, "versions": versions}
