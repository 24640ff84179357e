"""What the monitors cost: CPU time of the host and cpu-vendor monitor daemons at 1 sample/s.

    python -m bench.monitor_cost [--seconds 20] [--interval 1.0] [--target-pct 1.0] [--monitors host,cpu] [--quick]

The daemons run for --seconds; their CPU time (utime + stime from /proc/<pid>/stat) is read once
they are up and again at the end, so interpreter start-up is reported apart from the steady cost.
Also times record() in-process for a finer per-sample figure. Each monitor's figure, % of one core, is known to
one clock tick of CPU time either side; bench/verdict.py judges that interval against the target (PASS, MISSED or
CANNOT JUDGE). Exits 1 unless every monitor started, sampled and passed: a monitor that did not start is a failure,
never a pass by omission. --quick: 3 seconds, the smallest real measurement.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from bench.verdict import LoadWatch, Target, judge_interval
from case_runners.core.cli_io import ArgumentParser
from case_runners.core.defaults import MONITOR_INTERVAL_S
from case_runners.monitors import daemon
from case_runners.monitors.loader import load_monitor
from case_runners.monitors.spec import MonitorSpec

MONITORS = ("host", "cpu")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    fields = stat[stat.rfind(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def in_process_cost(name: str, samples: int = 200) -> float:
    """CPU seconds per record() call, measured in this process."""
    monitor = load_monitor(name)
    monitor.open()
    try:
        began = time.process_time()
        for _ in range(samples):
            monitor.record()
        return (time.process_time() - began) / samples
    finally:
        monitor.close()


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, help="default 20, quick 3")
    parser.add_argument("--interval", type=float, default=MONITOR_INTERVAL_S)
    parser.add_argument("--target-pct", type=float, default=1.0, help="budget, percent of one core")
    parser.add_argument("--monitors", default=",".join(MONITORS), help="comma-separated monitor names")
    parser.add_argument("--quick", action="store_true", help="the smallest real measurement: 3 seconds")
    args = parser.parse_args(argv)
    seconds = args.seconds or (3.0 if args.quick else 20.0)
    names = [name for name in args.monitors.split(",") if name]
    load = LoadWatch()
    with tempfile.TemporaryDirectory(prefix="perfplay_monitor_cost_") as tmp:
        specs = [MonitorSpec(Path(tmp), name, run_id="bench-monitor-cost", interval=args.interval) for name in names]
        started = {}
        try:
            for spec in specs:
                if daemon.start(spec) != 0:
                    print(f"{spec.label}: could not start, see above")
                    continue
                ident = daemon.running(spec)
                if ident is None:
                    print(f"{spec.label}: started, but its pid file names no live process of the run")
                    continue
                started[spec.name] = (spec, ident.pid, cpu_seconds(ident.pid), count_lines(spec.samples_path))
            time.sleep(seconds)
            results = {name: (cpu_seconds(pid) - cpu0, count_lines(spec.samples_path) - lines0, cpu0)
                       for name, (spec, pid, cpu0, lines0) in started.items()}
        finally:
            for spec in specs:
                daemon.stop(spec)
    load.sample()
    missing = [name for name in names if name not in results]
    if missing:
        print(f"\nFAIL: {', '.join(missing)} monitor{'s' if len(missing) > 1 else ''} did not start (see above); "
              f"{'nothing' if not results else ', '.join(results)} measured")
    tick = 1 / os.sysconf("SC_CLK_TCK")
    print(f"\n{seconds:g} s at one sample every {args.interval:g} s; target < {args.target_pct:g} % of one core; "
          f"% core known to one clock tick ({tick:g} CPU s) either side")
    print(load.line())
    print(f"{'monitor':8} {'samples':>7} {'cpu_s':>7} {'ms/sample':>9} {'% core':>15} {'startup_s':>9} "
          f"{'in-proc ms/sample':>17}  verdict")
    failed = len(missing)
    for name, (cpu, samples, startup) in results.items():
        per_sample = cpu / samples if samples else float("nan")
        percent = 100.0 * cpu / seconds
        ticks = round(cpu / tick)  # the CPU time is counted in whole ticks
        low, high = 100.0 * max(ticks - 1, 0) * tick / seconds, 100.0 * (ticks + 1) * tick / seconds
        result = judge_interval(percent, low, high, "±1 tick", 1, Target(high=args.target_pct), min_n=1)
        verdict = result.verdict + (f" ({result.reason})" if result.exit_code else "")
        if not samples:
            verdict = "FAIL (no samples written)"
        print(f"{name:8} {samples:7d} {cpu:7.3f} {1000 * per_sample:9.3f} {percent:6.3f} ({low:.2f}..{high:.2f}) "
              f"{startup:9.3f} {1000 * in_process_cost(name):17.3f}  {verdict}")
        failed += bool(result.exit_code or not samples)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
