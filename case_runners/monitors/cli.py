"""`monitor` command: -o start|stop|restart|status (the FlagPerf vendor-monitor contract) and run.

`run` is the monitor in the foreground (what the daemon execs; also handy inside a container). A round's
monitors are started and stopped by its launcher (case_runners.launch.guard), not through this command.
Exit codes: 0 ok, 1 failed, 2 bad arguments, 3 status: not running.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from case_runners.core.cli_io import ArgumentParser
from case_runners.core.defaults import MONITOR_INTERVAL_S
from case_runners.core.errors import PerfplayError
from case_runners.core.processes import ProcessId, pid_namespace
from case_runners.core.run_ids import MANUAL_RUN_ID, RUN_ID_RULE
from case_runners.monitors import daemon
from case_runners.monitors.runner import run_monitor
from case_runners.monitors.spec import MonitorSpec

OPERATIONS: dict[str, Callable[[MonitorSpec], int]] = {
    "start": daemon.start, "stop": daemon.stop, "restart": daemon.restart, "status": daemon.status,
}


def owner_arg(text: str) -> ProcessId:
    pid, sep, start = text.partition(":")
    if not (sep and pid.isdigit() and start.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not PID:START")
    return ProcessId(int(pid), int(start), pid_namespace())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--operation", required=True, choices=[*OPERATIONS, "run"])
    parser.add_argument("-l", "--log-dir", "--log", dest="log_dir", default="./logs",
                        help="directory for samples, pid file and sys_info (default: ./logs)")
    parser.add_argument("--name", required=True, help='"host" or a vendor name (vendor/<name>/monitor.py)')
    parser.add_argument("--run-id", default=MANUAL_RUN_ID,
                        help=f"keeps concurrent runs apart: {RUN_ID_RULE} (default: {MANUAL_RUN_ID})")
    parser.add_argument("--interval", type=float, default=MONITOR_INTERVAL_S,
                        help=f"seconds between samples (default: {MONITOR_INTERVAL_S:g})")
    parser.add_argument("--vendor", default=None, help="plugin vendor when it differs from --name")
    parser.add_argument("--owner", type=owner_arg, default=None, metavar="PID:START",
                        help="stop once this process (pid and /proc start time) has ended")
    parser.add_argument("--deadline", type=float, default=None, metavar="EPOCH_S",
                        help="stop at this time (seconds since the epoch) whatever happens")
    parser.add_argument("--ready-fd", type=int, default=None, help=argparse.SUPPRESS)


def run_args(args: argparse.Namespace) -> int:
    try:
        spec = MonitorSpec(log_dir=args.log_dir, name=args.name, run_id=args.run_id, interval=args.interval,
                           vendor=args.vendor, owner=args.owner, deadline=args.deadline)
    except PerfplayError as exc:
        print(f"monitor: {exc}", file=sys.stderr)
        return 2
    if args.operation == "run":
        return run_monitor(spec, ready_fd=args.ready_fd)
    try:
        return OPERATIONS[args.operation](spec)
    except (OSError, PerfplayError) as exc:  # a log dir that cannot be created, written, or is not ours
        print(f"{spec.label}: {args.operation} failed: {exc}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m case_runners monitor", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run_args(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())


def add_command(sub: argparse._SubParsersAction) -> None:
    """`monitor`'s own options are parsed by main() here: `python -m case_runners monitor ...` hands it the rest."""
    p = sub.add_parser("monitor", help="host or vendor monitor daemon: -o start|stop|restart|status -l DIR",
                       add_help=False)
    p.set_defaults(func=lambda args: main(args.argv[1:]))
