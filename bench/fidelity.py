"""Fidelity: p_core reported by the harness against a bare timing loop over the same model, batch and steps.

Alternates a harness run (`python -m case_runners run`, no monitors) and a bare loop — the case's model,
optimizer, loss and train loader, N optimizer steps, each step's compute timed with perf_counter — in
fresh processes, and compares the medians. Target: within 2 %.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from case_runners.records.round import RECORD_NAME, RoundRecord
from case_runners.run_options import ArgumentParser

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.02
# resnet50 at 64 px: a step of a few hundred ms on a CPU, long enough to time, short enough to repeat.
OVERRIDES = {"synthetic": True, "image_size": 64, "batch_size": 16, "num_workers": 0, "log_freq": 1000,
             "eval_every_epochs": 0, "synthetic_samples": 512, "warmup_steps": 0}


def harness(steps: int, results: Path) -> float:
    sets = [f"--set={k}={json.dumps(v)}" for k, v in {**OVERRIDES, "max_steps": steps}.items()]
    proc = subprocess.run([sys.executable, "-m", "case_runners", "run", "resnet50", "--no-monitors",
                           "--results-dir", str(results), *sets], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    if proc.returncode not in (0, 1):  # 1: not converged, expected for a short synthetic run
        sys.exit(f"harness run failed:\n{proc.stdout}\n{proc.stderr}")
    (record,) = sorted(results.glob(f"run*/resnet50_*/round1/{RECORD_NAME}"), key=os.path.getmtime)[-1:]
    return RoundRecord.load(record).metrics["p_core"]


def bare(steps: int) -> float:
    """The bare loop, in a fresh process with the same thread count as the harness's single rank."""
    code = f"""
import json, time, torch
from case_runners.cases.resnet50.case import build_case
from case_runners.driver.events import EventLogger
from case_runners.plan.run_plan import make_plan
from case_runners.training.case_api import RunContext
import tempfile, pathlib
torch.set_num_threads(os.cpu_count() or 1)
config = make_plan({{"vendor": "cpu", "cases": [{{"case": "resnet50", "overrides": {OVERRIDES!r}}}]}},
                   check=True)["cases"][0]
params = config["params"]
torch.manual_seed(params["seed"])
log = EventLogger(pathlib.Path(tempfile.mkdtemp()), 0, 10**9)
case = build_case(params, RunContext(0, 0, 1, torch.device("cpu"), None, log))
model = case.build_model()
train_loader, _ = case.build_data()
opt, sched = case.build_optimizer(model)
model.train()
bs, compute, batches = params["batch_size"], 0.0, iter(train_loader)
for step in range({steps}):
    batch = case.to_device(next(batches), torch.device("cpu"))  # the same data path, untimed
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss, n = case.train_step(model, batch)
    loss.backward()
    opt.step()
    if sched is not None:
        sched.step()
    compute += time.perf_counter() - t0
print(json.dumps({{"p": {steps} * bs / compute}}))
"""
    proc = subprocess.run([sys.executable, "-c", "import os\n" + code], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])["p"]


def main() -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    harness_p: list[float] = []
    bare_p: list[float] = []
    with tempfile.TemporaryDirectory(prefix="perfplay-fidelity-") as tmp:
        for pair in range(args.pairs):
            for kind in (("harness", "bare") if pair % 2 == 0 else ("bare", "harness")):
                t0 = time.perf_counter()
                value = harness(args.steps, Path(tmp)) if kind == "harness" else bare(args.steps)
                (harness_p if kind == "harness" else bare_p).append(value)
                print(f"pair {pair + 1} {kind:7s}: {value:8.2f} samples/s ({time.perf_counter() - t0:.1f} s)",
                      flush=True)
    h, b = statistics.median(harness_p), statistics.median(bare_p)
    gap = h / b - 1
    verdict = "PASS" if abs(gap) <= TARGET else "FAIL"
    print(f"\nresnet50 (64 px, batch 16, {args.steps} steps, CPU): harness p_core {h:.2f}, bare loop {b:.2f} "
          f"samples/s, ratio {h / b:.4f} ({gap:+.2%}; target within ±{TARGET:.0%}) {verdict}")
    return 0 if verdict == "PASS" else 1  # a missed target fails `make bench`


if __name__ == "__main__":
    raise SystemExit(main())
