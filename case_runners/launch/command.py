"""A node's commands: `launch` (its ranks; --detach in the background), `wait`, `finish`, `cleanup`, and
`worker` (one rank, started by launch)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from case_runners.core.cli_io import print_json, refuse_renamed
from case_runners.core.defaults import (
    CLEANUP_GRACE_S,
    HEARTBEAT_TIMEOUT_S,
    MONITOR_INTERVAL_S,
    PROGRESS_INTERVAL_S,
    RDZV_TIMEOUT_ENV,
    RDZV_TIMEOUT_S,
)
from case_runners.core.errors import PerfplayError
from case_runners.core.paths import RESULTS_NAME
from case_runners.core.run_ids import MANUAL_RUN_ID, RUN_ID_RULE


def _carry_run_id(args: argparse.Namespace) -> None:
    """Re-execute this command with the run id in its environment unless it is there already: a cleanup trusts
    only processes whose environment names their run."""
    from case_runners.core.paths import package_root
    from case_runners.core.run_ids import RUN_ID_ENV, check_run_id
    check_run_id(args.run_id, key="--run-id", file=None)
    if os.environ.get(RUN_ID_ENV) != args.run_id:
        path = os.pathsep.join(filter(None, [str(package_root()), os.environ.get("PYTHONPATH")]))
        os.execve(sys.executable, [sys.executable, "-m", "case_runners", *args.argv],
                  {**os.environ, RUN_ID_ENV: args.run_id, "PYTHONPATH": path})


def _receive_config(path: Path) -> None:
    """--config-stdin: the resolved config the controller sends a host, checked, then written atomically where
    the launcher reads it (its directory created private where missing)."""
    from case_runners.core import files
    from case_runners.records.resolved import ResolvedConfig
    from case_runners.records.schema import RecordError
    source = "--config-stdin"
    try:
        doc = json.loads(sys.stdin.read())
    except ValueError as exc:  # UnicodeDecodeError included
        raise RecordError(source, [f"is not JSON ({exc})"]) from None
    ResolvedConfig.from_json(doc, source)
    files.secure_dir(path.parent)
    files.atomic_write_json(path, doc)


def _launcher_args(argv: list[str]) -> list[str]:
    """The background launcher's arguments: this command's, less what only the start takes (--detach,
    --config-stdin, --wait-s)."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip or arg in ("--detach", "--config-stdin") or arg.startswith("--wait-s="):
            skip = False
            continue
        skip = arg == "--wait-s"
        if not skip:
            kept.append(arg)
    return kept


def _start_detached(args: argparse.Namespace) -> int:
    """--detach: start the launcher in the background and print its identity; with --wait-s, the first poll's
    answer too (`wait`), so that a round shorter than that needs no module run of its own to wait."""
    from case_runners.core.run_ids import check_run_id
    from case_runners.launch import detached
    check_run_id(args.run_id, key="--run-id", file=None)
    if args.config_stdin:
        _receive_config(Path(args.config))
    started = detached.start(_launcher_args(args.argv[1:]), Path(args.log_dir))
    if args.wait_s is not None and started["started"]:
        from case_runners.core.processes import ProcessId
        from case_runners.launch.waiting import wait
        launcher = started["launcher"]
        ident = ProcessId(launcher["pid"], launcher["start"], launcher["pidns"])
        started["wait"] = wait(Path(args.log_dir), args.run_id, ident, args.wait_s, launcher["started_at"],
                               args.timeout_s)
    print_json(started)
    return 0


def cmd_launch(args: argparse.Namespace) -> int:
    if args.config_stdin and not args.detach:
        raise PerfplayError("--config-stdin goes with --detach (the launch a module starts on a host)")
    if args.wait_s is not None and not args.detach:
        raise PerfplayError("--wait-s goes with --detach (the launch a module starts on a host)")
    if args.detach:
        return _start_detached(args)
    from case_runners.core.netutil import free_port
    from case_runners.core.paths import project_root
    from case_runners.launch.node import EXIT_CODES, launch, spec_from_config
    from case_runners.records.resolved import ResolvedConfig
    _carry_run_id(args)
    if not args.detached:
        from case_runners.core.processes import die_with_parent
        die_with_parent(signal.SIGTERM)  # started by `case_runners run`: stop (and stop the ranks) if it dies
    spec = spec_from_config(Path(args.config), Path(args.log_dir), node_rank=args.node_rank,
                            master_addr=args.master_addr, master_port=args.master_port,
                            timeout_s=args.timeout_s, run_id=args.run_id, node_name=args.node_name, nic=args.nic,
                            rdzv_timeout_s=args.rdzv_timeout_s, heartbeat_timeout_s=args.heartbeat_timeout_s,
                            monitors=not args.no_monitors, monitor_interval_s=args.monitor_interval_s,
                            inside_container=args.inside_container)
    if spec.nnodes == 1 and not spec.master_port:
        spec = dataclasses.replace(spec, master_port=free_port())
    config = ResolvedConfig.load(spec.config_path)
    if args.inside_container:
        from case_runners.launch.container.prepare import prepare
        spec = dataclasses.replace(spec, timeout_s=spec.timeout_s - prepare(config, spec.config_path, project_root(),
                                                                              spec.log_dir))
        result = launch(spec)
    elif config.runtime_kind == "docker":
        from case_runners.launch.container.supervise import supervise
        result = supervise(spec, config, project_root())
    else:
        result = launch(spec)
    if not args.detached:  # a detached launcher's node result is in node_result.json; its log stays for problems
        print_json(result.to_json())
    return EXIT_CODES[result.status]


def _node_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log-dir", required=True, help="the node directory")
    p.add_argument("--run-id", required=True)
    p.add_argument("--launcher", type=json.loads, metavar="JSON",
                   help="the launcher as `launch --detach` printed it: {pid, start, pidns, started_at}")


def _stop_args(p: argparse.ArgumentParser) -> None:
    """How finish and cleanup stop what is left: --grace-s, --containers and --round."""
    p.add_argument("--grace-s", type=float, default=CLEANUP_GRACE_S, metavar="SECONDS",
                   help=f"seconds between SIGTERM and SIGKILL (default {CLEANUP_GRACE_S:g})")
    p.add_argument("--containers", action="store_true", help="(docker runtime) also remove the run's containers")
    p.add_argument("--round", help="with --containers: only this round's (<case_id>/round<N>)")


def _launcher(args: argparse.Namespace) -> Any:
    from case_runners.core.processes import ProcessId
    from case_runners.core.run_ids import check_run_id
    check_run_id(args.run_id, key="--run-id", file=None)
    ident = ProcessId.from_json(args.launcher) if args.launcher is not None else None
    if args.launcher is not None and ident is None:
        raise PerfplayError(f"--launcher {json.dumps(args.launcher)} is not {{pid, start, pidns}} of a process")
    return ident


def cmd_wait(args: argparse.Namespace) -> int:
    from case_runners.launch.waiting import ended, pack_inline, wait
    from case_runners.records.names import SUCCESS
    ident = _launcher(args)
    log_dir = Path(args.log_dir)
    started_at = (args.launcher or {}).get("started_at")
    answer = wait(log_dir, args.run_id, ident, args.for_s, started_at, args.timeout_s) if ident \
        else ended(log_dir, args.run_id)
    if args.inline_archive is not None and answer["finished"] and answer["status"] == SUCCESS:
        answer["archive_b64"] = pack_inline(log_dir, args.inline_archive)
    print_json(answer)
    return 0


def cmd_finish(args: argparse.Namespace) -> int:
    from case_runners.launch.node_end import finish
    print_json(finish(Path(args.log_dir), args.run_id, _launcher(args), grace_s=args.grace_s,
                       containers=args.containers, round_name=args.round,
                       archive=Path(args.archive) if args.archive else None))
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from case_runners.core.paths import results_root
    from case_runners.core.run_ids import check_run_id
    from case_runners.launch.cleanup import stop_run
    check_run_id(args.run_id, key="--run-id", file=None)
    run_dir = Path(args.dir) if args.dir else results_root() / args.run_id
    print_json(stop_run(run_dir, args.run_id, args.grace_s, check=args.check, containers=args.containers,
                         round_name=args.round))
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from case_runners.core.processes import die_with_parent
    die_with_parent()  # started by a launcher: never outlive it
    from case_runners.launch.node import RANK_EXIT_GRACE_S
    from case_runners.rank.worker import main as worker_main
    return worker_main(args.config, args.log_dir, launcher_grace_s=RANK_EXIT_GRACE_S)


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("launch", help="start this node's ranks and wait for them")
    p.add_argument("--config", required=True)
    p.add_argument("--log-dir", required=True)
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=0,
                   help="node 0's rendezvous port (nnodes > 1); 0: a free port (single node only)")
    p.add_argument("--timeout-s", type=float, metavar="SECONDS", help="case timeout; default: the case's timeout_s")
    p.add_argument("--run-id", default=MANUAL_RUN_ID, help=f"the run ({RUN_ID_RULE}); default {MANUAL_RUN_ID}")
    p.add_argument("--node-name", help="this node's name in reasons and node_result.json; default: the hostname")
    p.add_argument("--nic", help="network interface of the collectives (GLOO_/NCCL_SOCKET_IFNAME unless set); "
                                 "default on nnodes > 1: the one that routes to master_addr")
    p.add_argument("--rdzv-timeout-s", type=float, metavar="SECONDS",
                   help=f"seconds the nodes have to meet at node 0 (default: ${RDZV_TIMEOUT_ENV}, "
                        f"else {RDZV_TIMEOUT_S:g})")
    p.add_argument("--heartbeat-timeout-s", type=float, metavar="SECONDS",
                   help=f"seconds of silence after which a node counts as lost (default {HEARTBEAT_TIMEOUT_S:g})")
    p.add_argument("--no-monitors", action="store_true", help="run no monitors (default: host and the vendor's)")
    p.add_argument("--monitor-interval-s", type=float, default=MONITOR_INTERVAL_S, metavar="SECONDS",
                   help=f"seconds between monitor samples (default {MONITOR_INTERVAL_S:g})")
    p.add_argument("--inside-container", action="store_true",
                   help="(docker runtime) this is the launcher in the node's container: prepare the case first")
    p.add_argument("--detach", action="store_true",
                   help="start the launcher in the background and print its identity (JSON); `wait` follows it")
    p.add_argument("--config-stdin", action="store_true",
                   help="with --detach: read the resolved config (JSON) on stdin and write it to --config first "
                        "(a host that is not the controller)")
    p.add_argument("--wait-s", type=float, metavar="SECONDS",
                   help="with --detach: then wait up to this long for the launcher, as `wait --for-s` does, and "
                        "print that answer too (wait)")
    p.add_argument("--detached", action="store_true", help=argparse.SUPPRESS)  # the launcher --detach started
    refuse_renamed(p)
    p.set_defaults(func=cmd_launch)

    p = sub.add_parser("wait", help="wait up to --for-s seconds for a background launcher: its node result once it "
                                    "has ended, else where the round stands (JSON)")
    _node_args(p)
    p.add_argument("--for-s", type=float, default=PROGRESS_INTERVAL_S, metavar="SECONDS",
                   help=f"return after this long if the launcher still runs (default {PROGRESS_INTERVAL_S:g})")
    p.add_argument("--timeout-s", type=float, metavar="SECONDS", help="the case timeout, for the progress line")
    p.add_argument("--inline-archive", type=int, metavar="MAX_BYTES",
                   help="once the node has succeeded, answer its directory too (archive_b64: a base64 .tar.gz) "
                        "when it packs into at most MAX_BYTES (else null: `finish --archive` packs it)")
    p.set_defaults(func=cmd_wait)

    p = sub.add_parser("finish", help="end a node of a round: stop what is left of it unless it succeeded, pack its "
                                      "directory (JSON)")
    _node_args(p)
    _stop_args(p)
    p.add_argument("--archive", help="write the node directory here as a .tar.gz")
    p.set_defaults(func=cmd_finish)

    p = sub.add_parser("cleanup", help="stop what is left of a run on this host: the processes its pid files "
                                        "name, its containers (JSON)")
    p.add_argument("--run-id", required=True)
    p.add_argument("--dir", help="where the run's pid files are: the host's run directory, or one node directory "
                                 f"of a round; default the checkout's {RESULTS_NAME}/RUN_ID")
    _stop_args(p)
    p.add_argument("--check", action="store_true", help="list what would be stopped; stop nothing")
    p.set_defaults(func=cmd_cleanup)

    p = sub.add_parser("worker", help="one rank (started by launch)")
    p.add_argument("--config", required=True)
    p.add_argument("--log-dir", required=True)
    p.add_argument("--run-id", default=MANUAL_RUN_ID, help="the run this rank belongs to")
    p.set_defaults(func=cmd_worker)
