"""`monitor` command: -o start|stop|restart|status (the FlagPerf vendor-monitor contract) and run.

`run` is the monitor in the foreground (what the daemon execs; also handy inside a container).
`ensure-started` / `ensure-stopped` take several --name and act only where the state differs, printing
JSON {"changed": [...], "messages": [...]} — one process for all of a round's monitors (the playbook's way).
Exit codes: 0 ok, 1 failed, 2 bad arguments, 3 status: not running.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
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
    parser.add_argument("-o", "--operation", required=True, choices=[*OPERATIONS, "run", *ENSURE])
    parser.add_argument("-l", "--log-dir", "--log", dest="log_dir", default="./logs",
                        help="directory for samples, pid file and sys_info (default: ./logs)")
    parser.add_argument("--name", required=True, action="append",
                        help='"host" or a vendor name (vendor/<name>/monitor.py); ensure-* take several')
    parser.add_argument("--run-id", default="manual", help="keeps concurrent runs apart (default: manual)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples (default: 1.0)")
    parser.add_argument("--vendor", default=None, help="plugin vendor when it differs from --name")
    parser.add_argument("--check", action="store_true", help="ensure-*: report what would change, change nothing")
    parser.add_argument("--ready-fd", type=int, default=None, help=argparse.SUPPRESS)


ENSURE = {"ensure-started": True, "ensure-stopped": False}


def ensure(specs: list[MonitorSpec], want_running: bool, check: bool) -> int:
    """Start (or stop, in reverse order) each monitor whose state differs; print what changed as JSON."""
    changed, messages, failed = [], [], False
    for spec in specs if want_running else list(reversed(specs)):
        quiet = io.StringIO()
        with contextlib.redirect_stdout(quiet):
            running = daemon.status(spec) == 0
        if running == want_running:
            messages.append(quiet.getvalue().strip())
            continue
        changed.append(spec.name)
        if check:
            messages.append(f"would {'start' if want_running else 'stop'} {spec.label}")
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = (daemon.start if want_running else daemon.stop)(spec)
        messages.append(out.getvalue().strip())
        failed = failed or code != 0
    print(json.dumps({"changed": changed, "messages": messages}))
    return 1 if failed else 0


def run_args(args: argparse.Namespace) -> int:
    names = args.name if isinstance(args.name, list) else [args.name]
    if len(names) > 1 and args.operation not in ENSURE:
        print(f"monitor: -o {args.operation} takes one --name; ensure-started/ensure-stopped take several",
              file=sys.stderr)
        return 2
    try:
        specs = [MonitorSpec(log_dir=args.log_dir, name=name, run_id=args.run_id, interval=args.interval,
                             vendor=args.vendor) for name in names]
    except MonitorError as exc:
        print(f"monitor: {exc}", file=sys.stderr)
        return 2
    if args.operation in ENSURE:
        try:
            return ensure(specs, ENSURE[args.operation], args.check)
        except OSError as exc:
            print(f"monitor: {args.operation} failed: {exc}", file=sys.stderr)
            return 1
    spec = specs[0]
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
