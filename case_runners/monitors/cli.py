"""`monitor` command: -o start|stop|restart|status (the FlagPerf vendor-monitor contract) and run.

`run` is the monitor in the foreground (what the daemon execs; also handy inside a container).
Exit codes: 0 ok, 1 failed, 2 bad arguments, 3 status: not running.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from case_runners.monitors import daemon
from case_runners.monitors.base import MonitorError
from case_runners.monitors.runner import run_monitor
from case_runners.monitors.spec import MonitorSpec

OPERATIONS: dict[str, Callable[[MonitorSpec], int]] = {
    "start": daemon.start, "stop": daemon.stop, "restart": daemon.restart, "status": daemon.status,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--operation", required=True, choices=[*OPERATIONS, "run"])
    parser.add_argument("-l", "--log-dir", "--log", dest="log_dir", default="./logs",
                        help="directory for samples, pid file and sys_info (default: ./logs)")
    parser.add_argument("--name", required=True, help='"host" or a vendor name (vendor/<name>/monitor.py)')
    parser.add_argument("--run-id", default="manual", help="keeps concurrent runs apart (default: manual)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples (default: 1.0)")
    parser.add_argument("--vendor", default=None, help="plugin vendor when it differs from --name")
    parser.add_argument("--ready-fd", type=int, default=None, help=argparse.SUPPRESS)


def run_args(args: argparse.Namespace) -> int:
    try:
        spec = MonitorSpec(log_dir=args.log_dir, name=args.name, run_id=args.run_id,
                           interval=args.interval, vendor=args.vendor)
    except MonitorError as exc:
        print(f"monitor: {exc}", file=sys.stderr)
        return 2
    if args.operation == "run":
        return run_monitor(spec, ready_fd=args.ready_fd)
    try:
        return OPERATIONS[args.operation](spec)
    except OSError as exc:  # e.g. a log dir that cannot be created or written
        print(f"{spec.label}: {args.operation} failed: {exc}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m case_runners monitor", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run_args(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
