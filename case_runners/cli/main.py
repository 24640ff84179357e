"""`python -m case_runners`: the commands the playbook runs on every host, and a single-host runner.

Machine-facing commands print one JSON document on stdout. torch is imported by `worker`, and by the checks of a
vendor's runtime (`host-check`, `check-runtime`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from case_runners import __version__
from case_runners.cli.run_options import ArgumentParser, add_run_options
from case_runners.core.defaults import (
    CLEANUP_GRACE_S,
    HEARTBEAT_TIMEOUT_S,
    MONITOR_INTERVAL_S,
    PROGRESS_INTERVAL_S,
    RDZV_TIMEOUT_ENV,
    RDZV_TIMEOUT_S,
    VENDOR,
)
from case_runners.core.errors import PerfplayError
from case_runners.core.paths import RESULTS_NAME
from case_runners.core.run_ids import MANUAL_RUN_ID, RUN_ID_RULE
from case_runners.plan.config.resolved import TASKS, TRAINING

EXIT_BAD_INPUT = 2


def _print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _load_json(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def cmd_plan(args: argparse.Namespace) -> int:
    from case_runners.plan.run_plan import make_plan
    plan = make_plan(_load_json(args.request), check=args.check)
    _print_json(plan)
    return 0 if plan["ok"] else EXIT_BAD_INPUT


def cmd_worker(args: argparse.Namespace) -> int:
    from case_runners.core.processes import die_with_parent
    die_with_parent()  # started by a launcher: never outlive it
    from case_runners.launch.node import RANK_EXIT_GRACE_S
    from case_runners.rank.worker import main as worker_main
    return worker_main(args.config, args.log_dir, launcher_grace_s=RANK_EXIT_GRACE_S)


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


def cmd_launch(args: argparse.Namespace) -> int:
    from case_runners.core.netutil import free_port
    from case_runners.core.paths import project_root
    from case_runners.launch.node import EXIT_CODES, launch, spec_from_config
    from case_runners.records.resolved import ResolvedConfig
    if args.config_stdin and not args.detach:
        raise PerfplayError("--config-stdin goes with --detach (the launch a module starts on a host)")
    if args.detach:
        from case_runners.core.run_ids import check_run_id
        from case_runners.launch import detached
        check_run_id(args.run_id, key="--run-id", file=None)
        if args.config_stdin:
            _receive_config(Path(args.config))
        launch_args = [a for a in args.argv[1:] if a not in ("--detach", "--config-stdin")]
        _print_json(detached.start(launch_args, Path(args.log_dir)))
        return 0
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
        _print_json(result.to_json())
    return EXIT_CODES[result.status]


def _node_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log-dir", required=True, help="the node directory")
    p.add_argument("--run-id", required=True)
    p.add_argument("--launcher", type=json.loads, metavar="JSON",
                   help="the launcher as `launch --detach` printed it: {pid, start, pidns, started_at}")


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
    _print_json(answer)
    return 0


def cmd_finish(args: argparse.Namespace) -> int:
    from case_runners.launch.node_end import finish
    _print_json(finish(Path(args.log_dir), args.run_id, _launcher(args), grace_s=args.grace_s,
                       containers=args.containers, round_name=args.round,
                       archive=Path(args.archive) if args.archive else None))
    return 0


def cmd_image(args: argparse.Namespace) -> int:
    from case_runners.core.paths import project_root
    from case_runners.launch.container.image import ensure_image, image_spec
    from case_runners.vendors.description import load_vendor
    request = _load_json(args.request)
    unknown = sorted(set(request) - {"vendor", "framework", "settings", "log"})
    if unknown:
        raise PerfplayError(f"unknown image request keys {unknown} (allowed: framework, log, settings, vendor)")
    root = project_root()
    spec = image_spec(root, load_vendor(request["vendor"], root), request["framework"], request.get("settings"))
    log_path = Path(request["log"]) if request.get("log") else None
    _print_json(ensure_image(root, spec, check=args.check, log_path=log_path))
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from case_runners.core.paths import results_root
    from case_runners.core.run_ids import check_run_id
    from case_runners.launch.cleanup import stop_run
    check_run_id(args.run_id, key="--run-id", file=None)
    run_dir = Path(args.dir) if args.dir else results_root() / args.run_id
    _print_json(stop_run(run_dir, args.run_id, args.grace_s, check=args.check, containers=args.containers,
                         round_name=args.round))
    return 0


def cmd_check_run_id(args: argparse.Namespace) -> int:
    from case_runners.core.run_ids import check_run_id
    print(check_run_id(args.run_id, key=args.key))
    return 0


def cmd_infer(args: argparse.Namespace) -> int:
    from case_runners.core.paths import project_root
    from case_runners.plan.inference_config import resolve_inference
    from case_runners.tasks.inference.pipeline import run_pipeline
    root = project_root()
    resolved, notes = resolve_inference(args.case, args.vendor, root)
    for note in notes:
        print(note, file=sys.stderr)
    # stdout is the JSON document; progress and exporters' chatter go to stderr
    with contextlib.redirect_stdout(sys.stderr):
        result = run_pipeline(resolved, root, Path(args.work_dir), args.data_dir,
                              log=lambda line: print(line, file=sys.stderr, flush=True))
    _print_json({"config": resolved.to_json(), "notes": notes, "result": result})
    return 0


def cmd_monitor(args: argparse.Namespace, rest: list[str]) -> int:
    from case_runners.monitors.cli import main as monitor_main
    return monitor_main(rest)


def cmd_host_check(args: argparse.Namespace) -> int:
    from case_runners.host.check import host_check
    result = host_check(_load_json(args.request))
    _print_json(result)
    return 0


def cmd_check_runtime(args: argparse.Namespace) -> int:
    from case_runners.host.check import runtime_problems
    from case_runners.records.resolved import ResolvedConfig
    problems = runtime_problems(ResolvedConfig.load(args.config))
    _print_json({"ok": not problems, "problems": problems})
    return 0 if not problems else 1


def cmd_check_vendor(args: argparse.Namespace) -> int:
    from case_runners.core.paths import project_root
    from case_runners.vendors.check.run import check_vendor, report
    data_dirs = {}
    for item in args.data_dir:
        case, sep, path = item.partition("=")
        if not sep:
            raise PerfplayError(f"--data-dir wants CASE=DIR, got {item!r}")
        data_dirs[case] = path
    found = check_vendor(args.name, Path(args.root) if args.root else project_root(), args.functional,
                         args.steps, args.case or None, data_dirs)
    text, code = report(args.name, found)
    print(text)
    return code


def cmd_requirements(args: argparse.Namespace) -> int:
    from case_runners.host.requirements import check_requirements
    _print_json(check_requirements(Path(args.requirements)))
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    from case_runners.records.resolved import ResolvedConfig
    from case_runners.records.round_build import compact_record, write_round_record
    record = write_round_record(Path(args.round_dir), ResolvedConfig.load(args.config), args.round, args.run_id,
                                args.error)
    _print_json({"record": record.to_json(), "compact": compact_record(record, args.error)})
    return 0


def cmd_check_record(args: argparse.Namespace) -> int:
    from case_runners.records.check import report
    lines, code = report(args.paths)
    print("\n".join(lines))
    return code


def cmd_summary(args: argparse.Namespace) -> int:
    from case_runners.records.run_dir import check_run_dir
    from case_runners.records.summary_build import summarize_run
    from case_runners.views.summary.files import write_run_summary
    from case_runners.views.summary.text import render_table
    run_dir = check_run_dir(Path(args.run_dir))  # a mistyped path is refused, as report and history refuse it
    summary, written = write_run_summary(run_dir) if args.write else (summarize_run(run_dir), None)
    if args.table:
        print(render_table(summary))
    else:
        _print_json({**summary.to_json(), **({"written": written} if written is not None else {}),
                     "table": render_table(summary)})
    return 0


def cmd_discard_run(args: argparse.Namespace) -> int:
    from case_runners.plan.run_plan import discard_unstarted_run
    _print_json({"removed": discard_unstarted_run(Path(args.run_dir))})
    return 0


def cmd_prepare_text(args: argparse.Namespace) -> int:
    from case_runners.cases.llama.prepare import prepare_text
    prepare_text(args.src, args.out, args.tokenizer, args.vocab_size, args.glob, args.held_out)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from case_runners.cli.local_run import run_local
    return run_local(args)


class _Renamed(argparse.Action):
    """An option renamed with its run var (run_vars.RENAMED): refused, naming the new one. Registered, it is also
    no longer taken as an abbreviation of the new one."""

    def __init__(self, option_strings: list[str], dest: str, new: str) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs="?", help=argparse.SUPPRESS)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.error(f"{option_string} is renamed {self.new}: give that instead")


def _refuse_renamed(parser: argparse.ArgumentParser) -> None:
    """The old name of each of `parser`'s options whose run var was renamed, as a refusal naming the new one."""
    from case_runners.plan.run_var_names import PREFIX, RENAMED

    def flag(run_var: str) -> str:
        return "--" + run_var.removeprefix(PREFIX).replace("_", "-")
    for old, new in RENAMED.items():
        if flag(new) in parser._option_string_actions:
            parser.add_argument(flag(old), action=_Renamed, new=flag(new))


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, people's first. command: the one about to be parsed; where it is one the
    playbook's modules and the launchers run (_add_machine_commands, a call per host and round), only theirs are
    built, so the modules the other commands need are not imported (a third of this CLI's start)."""
    from case_runners.core.paths import PROJECT_ENV
    parser = ArgumentParser(prog="python -m case_runners", description=__doc__.splitlines()[0],
                                     epilog=f"{PROJECT_ENV}: the perfplay checkout to run, its vendor/ and its "
                                            "case_runners (default: the checkout this package is in; a "
                                            "non-editable install needs it)")
    parser.add_argument("--version", action="version", version=f"perfplay case_runners {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    if command is not None:
        _add_machine_commands(sub)
        return parser if command in sub.choices else build_parser()
    _add_user_commands(sub)
    _add_machine_commands(sub)
    return parser


def _add_user_commands(sub: argparse._SubParsersAction) -> None:
    """The commands people run: the single-host runner, the checks and tools, the views."""
    from case_runners.cases.llama.data import TOKENIZERS
    from case_runners.cases.llama.prepare import DEFAULT_GLOB, DEFAULT_HELD_OUT, DEFAULT_VOCAB_SIZE
    from case_runners.vendors.flagperf.command import add_command as add_flagperf_command
    from case_runners.vendors.scaffold.commands import add_commands
    from case_runners.views.catalogue.cli import add_command as add_cases_command
    from case_runners.views.compare.cli import add_command as add_compare_command
    from case_runners.views.compare.runs_cli import add_command as add_compare_runs_command
    from case_runners.views.history.cli import add_command as add_history_command
    from case_runners.views.report.cli import add_command as add_report_command

    p = sub.add_parser("run", help="run cases on this host without Ansible: plan, monitors, launch, record, summary; "
                                   "with --nnode N --node-rank R this host's node of each round")
    p.add_argument("cases", nargs="*", metavar="CASE",
                   help="case names or FlagPerf keys case:framework:hardware:nnodes:nproc:repeat (or --model-name)")
    p.add_argument("--task", choices=TASKS, default=TRAINING,
                   help="[run var perfplay_task] inference: the cases' inference pipeline (steps a-g: torch "
                        "validation, ONNX export, the vendor's engine); base: hardware benchmarks (CASE: gemm, "
                        "allreduce, ...; none: the vendor's base suite); generate: LLM generation latency (TTFT, "
                        "TPOT, tokens/s) of a case that offers it (llama)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a mutable or run-only config key (a run-only one makes the run non-standard; "
                        "inference: a key of configurations.yaml); an option below that sets the same key must "
                        "agree")
    p.add_argument("--results-dir", help=f"default: the checkout's {RESULTS_NAME}/, as for the playbook and history")
    p.add_argument("--timeout-s", type=int, metavar="SECONDS", help="case timeout; default: the case's timeout_s")
    p.add_argument("--monitor-interval-s", type=float, default=MONITOR_INTERVAL_S, metavar="SECONDS")
    p.add_argument("--no-monitors", action="store_true")
    add_run_options(p)
    _refuse_renamed(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("infer", help="an inference case on this host: the inference pipeline, steps a-g (JSON)")
    p.add_argument("case")
    p.add_argument("--vendor", default=VENDOR)
    p.add_argument("--work-dir", required=True, help="where the ONNX file and the compiled engine go")
    p.add_argument("--data-dir")
    p.set_defaults(func=cmd_infer)

    p = sub.add_parser("check-vendor", help="check a vendor folder against the vendor folder layout "
                                            "(docs/adapting-a-chip.md): files, configs, README, monitor, engines, "
                                            "extern; --functional runs its cases (exit 1 on an error)")
    p.add_argument("name", help="vendor/<name>/")
    p.add_argument("--functional", action="store_true",
                   help="also run every adapted case for a few steps in its functional shape (at 1x2 where the "
                        "vendor's probe counts two devices, else 1x1) and every inference case through a-g")
    p.add_argument("--steps", type=int, default=5, help="training steps per case with --functional (default 5)")
    p.add_argument("--case", action="append", default=[], help="with --functional: only this case (repeatable)")
    p.add_argument("--data-dir", action="append", default=[], metavar="CASE=DIR",
                   help="a case's data dir for --functional (else synthetic data where the case has it)")
    p.add_argument("--root", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_check_vendor)

    p = sub.add_parser("check-record", help="check that files are valid perfplay documents (resolved config, rank "
                                            "or node result, round record, run summary), each of the kind its "
                                            "schema names: one line per valid file, exit 1 naming every problem")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.set_defaults(func=cmd_check_record)

    p = sub.add_parser("prepare-text", help="a tree of text files as the llama case's token files: train.bin and "
                                            "val.bin with their JSON sidecars, split by file (a line per split)")
    p.add_argument("src", metavar="SRC", help="the tree of text files (e.g. sysconfig.get_paths()['stdlib'])")
    p.add_argument("out", metavar="OUT", help="the data dir to write")
    p.add_argument("--tokenizer", choices=TOKENIZERS, default="bpe",
                   help="bpe: a byte-level BPE trained on the train files (default); bytes: UTF-8 bytes")
    p.add_argument("--vocab-size", type=int, metavar="N", help=f"bpe's vocab (default {DEFAULT_VOCAB_SIZE})")
    p.add_argument("--glob", default=DEFAULT_GLOB, help=f"the files to read (default {DEFAULT_GLOB!r})")
    p.add_argument("--held-out", type=float, default=DEFAULT_HELD_OUT, metavar="FRACTION",
                   help=f"the share of files held out, chosen by a hash of their path (default {DEFAULT_HELD_OUT})")
    p.set_defaults(func=cmd_prepare_text)

    add_commands(sub)  # new-vendor, new-case
    add_compare_command(sub)
    add_report_command(sub)
    add_compare_runs_command(sub)
    add_flagperf_command(sub)  # import-flagperf
    add_history_command(sub)
    add_cases_command(sub)




def _add_machine_commands(sub: argparse._SubParsersAction) -> None:
    """The commands the playbook's modules, the launchers and the ranks run: their parsers need only quick imports."""
    p = sub.add_parser("plan", help="resolve and check a run request (JSON) and create the run directory")
    p.add_argument("--request", required=True)
    p.add_argument("--check", action="store_true", help="validate only; write nothing")
    p.set_defaults(func=cmd_plan)

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
    p.add_argument("--detached", action="store_true", help=argparse.SUPPRESS)  # the launcher --detach started
    _refuse_renamed(p)
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
    p.add_argument("--grace-s", type=float, default=CLEANUP_GRACE_S, metavar="SECONDS",
                   help=f"seconds between SIGTERM and SIGKILL (default {CLEANUP_GRACE_S:g})")
    p.add_argument("--containers", action="store_true", help="(docker runtime) also remove the round's containers")
    p.add_argument("--round", help="with --containers: the round (<case_id>/round<N>)")
    p.add_argument("--archive", help="write the node directory here as a .tar.gz")
    p.set_defaults(func=cmd_finish)

    p = sub.add_parser("image", help="(docker runtime) build a vendor's image unless its tag exists (JSON)")
    p.add_argument("--request", required=True, help="JSON file: vendor, framework, settings (run var perfplay_image)")
    p.add_argument("--check", action="store_true", help="report whether it would build; build nothing")
    p.set_defaults(func=cmd_image)

    p = sub.add_parser("cleanup", help="stop what is left of a run on this host: the processes its pid files "
                                        "name, its containers (JSON)")
    p.add_argument("--run-id", required=True)
    p.add_argument("--dir", help="where the run's pid files are: the host's run directory, or one node directory "
                                 f"of a round; default the checkout's {RESULTS_NAME}/RUN_ID")
    p.add_argument("--grace-s", type=float, default=CLEANUP_GRACE_S, metavar="SECONDS",
                   help=f"seconds between SIGTERM and SIGKILL (default {CLEANUP_GRACE_S:g})")
    p.add_argument("--containers", action="store_true", help="(docker runtime) also remove the run's containers")
    p.add_argument("--round", help="with --containers: only this round's (<case_id>/round<N>)")
    p.add_argument("--check", action="store_true", help="list what would be stopped; stop nothing")
    p.set_defaults(func=cmd_cleanup)

    p = sub.add_parser("check-run-id", help="exit 2 with the rule unless RUN_ID is a valid run id")
    p.add_argument("run_id")
    p.add_argument("--key", default="perfplay_run_id", help="the name to put in the message")
    p.set_defaults(func=cmd_check_run_id)

    p = sub.add_parser("worker", help="one rank (started by launch)")
    p.add_argument("--config", required=True)
    p.add_argument("--log-dir", required=True)
    p.add_argument("--run-id", default=MANUAL_RUN_ID, help="the run this rank belongs to")
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("monitor", help="host or vendor monitor daemon: -o start|stop|restart|status -l DIR",
                       add_help=False)
    p.set_defaults(func=cmd_monitor, passthrough=True)

    p = sub.add_parser("host-check", help="the host preflight: python, devices, data dirs, master port (JSON)")
    p.add_argument("--request", required=True, help="JSON file: vendor, nproc, cases, device_count, master_port")
    p.set_defaults(func=cmd_host_check)

    p = sub.add_parser("check-runtime", help="the vendor's runtime hook, device and backend for a resolved config, "
                                             "in this Python (JSON; exit 1 on a problem)")
    p.add_argument("--config", required=True, help="a resolved config (resolved_config.json)")
    p.set_defaults(func=cmd_check_runtime)

    p = sub.add_parser("requirements", help="whether this Python has every pinned requirement (JSON)")
    p.add_argument("--requirements", required=True, help="a requirements.txt of name==version pins")
    p.set_defaults(func=cmd_requirements)

    p = sub.add_parser("record", help="build a round's record from its node dirs, write it as round_record.json and "
                                      "print it with its compact digest (JSON: record, compact)")
    p.add_argument("--round-dir", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--round", type=int, required=True)
    p.add_argument("--run-id")
    p.add_argument("--error", action="append", default=[],
                   help="a problem the orchestration met in this round (a host that failed a task): fails the round")
    p.set_defaults(func=cmd_record)

    p = sub.add_parser("summary", help="summarise a run directory over rounds")
    p.add_argument("run_dir")
    p.add_argument("--write", action="store_true",
                   help="write summary.json and summary.md where their content changed (listed in \"written\")")
    p.add_argument("--table", action="store_true", help="print the table instead of JSON (which holds it as 'table')")
    p.set_defaults(func=cmd_summary)

    p = sub.add_parser("discard-run", help="remove a run directory in which no round started (JSON)")
    p.add_argument("run_dir")
    p.set_defaults(func=cmd_discard_run)


def _run_the_named_checkout(argv: list[str]) -> None:
    """With PERFPLAY_HOME naming another checkout than the one this package runs from (a non-editable install),
    re-execute this command with that checkout's case_runners: the code its vendor/ is written for, and the code
    the launchers and ranks it starts run (from the checkout)."""
    from case_runners.core.paths import PROJECT_ENV, package_root, project_root
    if not os.environ.get(PROJECT_ENV) or (root := project_root()) == package_root():
        return
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    # -P: the checkout comes first on the path, not a case_runners/ in the working directory (Python >= 3.11, as
    # pyproject's requires-python says)
    os.execve(sys.executable, [sys.executable, "-P", "-m", "case_runners", *argv], {**os.environ, "PYTHONPATH": path})


def main(argv: list[str] | None = None) -> int:
    program = argv is None  # the command itself, not a call from Python (which is never replaced)
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if program:
            _run_the_named_checkout(argv)
        if argv[:1] == ["monitor"]:
            return cmd_monitor(argparse.Namespace(), argv[1:])
        args = build_parser(argv[0] if argv else None).parse_args(argv)
        args.argv = argv
        return args.func(args)
    except PerfplayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
