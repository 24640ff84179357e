"""What the HTML report costs as a run's rounds grow: one real round of a case, copied into N rounds whose records
the real builder writes again (records/round_build.py write_round_record, then the run's summary), then the report of
that run timed in this process (CPU and wall) at each round count.

    python -m bench.report_rounds [--rounds 1 10 50 100] [--case digits_cnn] [--steps 20] [--target-s 5]

The target: the report of 100 rounds in under --target-s seconds of CPU. Exits 1 when the largest count misses it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from case_runners.core.cli_io import ArgumentParser
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round_build import write_round_record
from case_runners.views.report.cli import write_report
from case_runners.views.summary.files import write_run_summary


def real_round(case: str, steps: int, results: Path) -> Path:
    """The run directory of one real round of `case` (monitors on), run by the single-host runner."""
    subprocess.run([sys.executable, "-m", "case_runners", "run", case, "--repeat", "1", "--set", f"max_steps={steps}",
                    "--results-dir", str(results)], check=True, stdout=subprocess.DEVNULL, timeout=1800)
    return next(results.glob("run*"))


def grow(run_dir: Path, rounds: int) -> None:
    """Copies of round 1 as rounds 2..`rounds` (those missing), each with its record built again, then the summary."""
    case_dir = next(p.parent for p in run_dir.glob("*/resolved_config.json"))
    config = ResolvedConfig.load(case_dir / "resolved_config.json")
    for number in range(2, rounds + 1):
        target = case_dir / f"round{number}"
        if not target.exists():
            shutil.copytree(case_dir / "round1", target)
            write_round_record(target, config, number, run_dir.name)
    write_run_summary(run_dir)


def timed_report(run_dir: Path) -> tuple[float, float]:
    """(CPU s, wall s) of writing the run's report in this process (matplotlib imported beforehand)."""
    (run_dir / "report.html").unlink(missing_ok=True)
    cpu, wall = time.process_time(), time.perf_counter()
    written = write_report([run_dir])
    if written.write_error:
        raise SystemExit(f"report not written: {written.write_error}")
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, nargs="+", default=[1, 10, 50, 100])
    parser.add_argument("--case", default="digits_cnn")
    parser.add_argument("--steps", type=int, default=20, help="training steps of the real round")
    parser.add_argument("--target-s", type=float, default=5.0, help="CPU seconds the largest count may take")
    args = parser.parse_args()
    import matplotlib.figure  # noqa: F401 - its import is a fixed cost, not the rounds'

    with tempfile.TemporaryDirectory(prefix="perfplay-bench-") as tmp:
        run_dir = real_round(args.case, args.steps, Path(tmp))
        print(f"load {os.getloadavg()[0]:.2f}; one real round of {args.case} copied into each count")
        cpu = 0.0
        for rounds in sorted(args.rounds):
            grow(run_dir, rounds)
            cpu, wall = timed_report(run_dir)
            size = (run_dir / "report.html").stat().st_size
            print(f"{rounds:4d} rounds: report {cpu:6.2f} CPU-s, {wall:6.2f} s wall, {size / 1e6:.2f} MB")
    verdict = "PASS" if cpu < args.target_s else "FAIL"
    print(f"{max(args.rounds)} rounds: {cpu:.2f} CPU-s (target < {args.target_s:g} s) {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
