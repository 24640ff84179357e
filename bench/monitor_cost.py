"""What the monitors cost: CPU time of the host and cpu-vendor monitor daemons at 1 sample/s.

    python -m bench.monitor_cost [--seconds 20] [--interval 1.0] [--target-pct 1.0]

Both daemons run for --seconds; their CPU time (utime + stime from /proc/<pid>/stat) is read once
they are up and again at the end, so interpreter start-up is reported apart from the steady cost.
Also times record() in-process for a finer per-sample figure. Prints PASS/FAIL per monitor; exits 1 when any fails.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from case_runners.defaults import MONITOR_INTERVAL_S
from case_runners.monitors import daemon
from case_runners.monitors.loader import load_monitor
from case_runners.monitors.spec import MonitorSpec
from case_runners.run_options import ArgumentParser

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
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval", type=float, default=MONITOR_INTERVAL_S)
    parser.add_argument("--target-pct", type=float, default=1.0, help="budget, percent of one core")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="perfplay_monitor_cost_") as tmp:
        specs = [MonitorSpec(Path(tmp), name, run_id="bench-monitor-cost", interval=args.interval) for name in MONITORS]
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
            time.sleep(args.seconds)
            results = {name: (cpu_seconds(pid) - cpu0, count_lines(spec.samples_path) - lines0, cpu0)
                       for name, (spec, pid, cpu0, lines0) in started.items()}
        finally:
            for spec in specs:
                daemon.stop(spec)
    print(f"\n{args.seconds:g} s at one sample every {args.interval:g} s; target < {args.target_pct:g} % of one core")
    print(f"{'monitor':8} {'samples':>7} {'cpu_s':>7} {'ms/sample':>9} {'% core':>7} {'startup_s':>9} "
          f"{'in-proc ms/sample':>17}  verdict")
    failed = 0
    for name, (cpu, samples, startup) in results.items():
        per_sample = cpu / samples if samples else float("nan")
        percent = 100.0 * cpu / args.seconds
        verdict = "PASS" if samples and percent < args.target_pct else "FAIL"
        print(f"{name:8} {samples:7d} {cpu:7.3f} {1000 * per_sample:9.3f} {percent:7.3f} {startup:9.3f} "
              f"{1000 * in_process_cost(name):17.3f}  {verdict}")
        failed += verdict == "FAIL"
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
