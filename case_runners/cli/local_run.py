"""`python -m case_runners run`: one host, no Ansible — the same steps the playbook takes per round.

Its options are the unified run interface (run_options.py; docs/running.md). With --nnode N > 1 this host runs its node
(--node-rank) of each round, as torchrun does: every host starts the same command with the same --run-id, node 0
serves the rendezvous and writes the round records and the summary from its own node directory (the others stay
on their hosts: the records name them in nodes_elsewhere), and every other node prints its node's result.
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

from case_runners.cli.run_options import CONFIG_KEY, RUN_VAR, SELECTION, add_run_options, given
from case_runners.core.cli_io import refuse_renamed
from case_runners.core.defaults import MONITOR_INTERVAL_S
from case_runners.core.errors import ConfigError
from case_runners.core.netutil import free_port
from case_runners.core.paths import RESULTS_NAME, project_root, results_root
from case_runners.core.processes import PARENT_PID_ENV
from case_runners.core.run_ids import RUN_ID_ENV, check_run_id
from case_runners.host.check import host_check
from case_runners.host.requirements import unsatisfied
from case_runners.launch import waiting
from case_runners.launch.progress import progress
from case_runners.plan.config.resolved import TASKS, TRAINING
from case_runners.plan.config.yaml_io import VALUE_LIMIT, load_yaml
from case_runners.plan.run_plan import Plan, check_request, resolve_cases, write_run_dir
from case_runners.plan.run_vars import RunRequest
from case_runners.records.names import BASE, OPERATION, SUCCESS
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round_build import read_node_result, write_round_record
from case_runners.tasks.operation import CASE as OPERATION_CASE
from case_runners.vendors.description import vendor_for_device
from case_runners.views.history.cli import index_into
from case_runners.views.report.cli import write_report
from case_runners.views.summary.files import write_run_summary
from case_runners.views.summary.text import render_table

EXIT_INTERRUPTED = 130


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The run overrides: every --set KEY=VALUE and every option that sets a config key (--batch-size, --step,
    ...), each VALUE read as a YAML scalar or flow list (0.1, true, [1, 1, 1, 1]). ConfigError (exit status 2,
    before any run directory) for a --set that is not KEY=VALUE, and for two that set a key differently."""
    texts: list[tuple[str, str, str, str]] = []  # (what gave it, as errors name it, key, value text)
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set wants KEY=VALUE, got {item[:80]!r}")
        texts.append((f"--set {item[:80]}", f"--set {key}", key, value))  # a parse error never echoes the value
    for option, value in given(args, CONFIG_KEY):
        text = "true" if option.metavar is None else value
        shown = option.flags[0] if option.metavar is None else f"{option.flags[0]} {text}"
        texts.append((shown, shown, option.key, text))
    overrides: dict[str, Any] = {}
    said: dict[str, str] = {}
    for shown, source, key, text in texts:
        value = load_yaml(text, source=source, limit=VALUE_LIMIT)
        if key in overrides and (type(value), value) != (type(overrides[key]), overrides[key]):
            raise ConfigError(f"{said[key]} and {shown} set it differently: give one", key=key)
        overrides[key], said[key] = value, shown
    return overrides


def _request(args: argparse.Namespace) -> RunRequest:
    """The plan request of the command line. ConfigError (exit status 2, before any run directory) for a bad
    --set, a case given twice or not at all, a --device no vendor (or not --vendor) has, a bad --run-id."""
    if args.cases and args.model_name:
        raise ConfigError(f"give the case as CASE or as --model-name, not both (got {' '.join(args.cases)} and "
                          f"--model-name {args.model_name})")
    names = args.cases or ([args.model_name] if args.model_name else [])
    if not names and args.task == OPERATION:  # its one case, which the --set overrides apply to
        names = [OPERATION_CASE]
    if not names and args.task != BASE:  # the base task's default: the vendor's base suite
        raise ConfigError("no case: give CASE or --model-name")
    overrides = _overrides(args)
    fields = {option.key: value for option, value in given(args, SELECTION) if option.key != "case"}
    request: dict[str, Any] = {option.key: value for option, value in given(args, RUN_VAR)}
    if args.device is not None:
        request["vendor"] = vendor_for_device(args.device, args.vendor)
    if args.run_id is not None:
        check_run_id(args.run_id, key="--run-id", file=None)
    results_dir = Path(args.results_dir).resolve() if args.results_dir else results_root()  # the one default
    return cast(RunRequest, {  # the keys of RUN_VAR options are request keys
        **request, "runtime": "host", "task": args.task, "results_dir": str(results_dir),
        "case_timeout_s": args.timeout_s,
        **({"cases": [{"case": name, **fields, "overrides": overrides} for name in names]} if names else {})})


def _node_problems(configs: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    """What keeps this host from running its node (--node-rank) of every case's rounds."""
    problems = []
    if not 0 <= args.master_port <= 65535:
        problems.append(f"--master-port {args.master_port} is not a port (0 to 65535)")
    for config in configs:
        nnodes, case_id = config["nnodes"], config["case_id"]
        if not 0 <= args.node_rank < nnodes:
            problems.append(f"--node-rank {args.node_rank}: {case_id} has {nnodes} node(s), ranks 0 to {nnodes - 1}"
                            + ("" if nnodes > 1 else " (more nodes: --nnode N)"))
        if nnodes > 1 and args.run_id is None:
            problems.append(f"{case_id} runs on {nnodes} nodes: start every node with the same --run-id")
        if nnodes > 1 and args.master_port == 0:
            problems.append(f"--master-port 0: {case_id} runs on {nnodes} nodes, which meet at node 0's "
                            "--master-port: give the same port on every node")
    return list(dict.fromkeys(problems))


def _host_problems(plan: Plan) -> list[str]:
    """What the playbook's host preflight would find on this host: the vendor cases' requirements (which the
    playbook installs and this run does not; their warnings printed), Python, devices, every case's data dir."""
    wanted = [name for config in plan["cases"] for name in config.get("requirements") or []]
    problems, warnings = unsatisfied(wanted, project_root())
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    nproc = max((config["nproc"] for config in plan["cases"]), default=0)
    return problems or host_check({"vendor": plan["run_vars"]["vendor"], "nproc": nproc,
                                   "cases": plan["cases"]})["problems"]


def launch_argv(config: dict[str, Any], node_dir: Path, run_id: str, args: argparse.Namespace) -> list[str]:
    """This host's node of one round: `case_runners launch` (which runs the round's monitors), as the playbook
    runs it; the command a user can run by hand to start the node again."""
    nnodes = config["nnodes"]
    port = args.master_port or free_port()
    return [sys.executable, "-m", "case_runners", "launch", "--config", config["config_path"], "--log-dir",
            str(node_dir), "--run-id", run_id, "--node-rank", str(args.node_rank), "--master-addr",
            args.master_addr, "--master-port", str(port),
            *(["--rdzv-timeout-s", f"{args.rdzv_timeout_s:g}"] if nnodes > 1 and args.rdzv_timeout_s else []),
            "--monitor-interval-s", f"{args.monitor_interval_s:g}", *(["--no-monitors"] if args.no_monitors else [])]


def _launch(argv: list[str], run_id: str, node_dir: Path, label: str, interval: float, timeout_s: float) -> int:
    """Run the launcher, printing every interval the progress line the playbook prints (launch.waiting.line of
    the node's first rank's events). Ctrl-C reaches it too: it stops its ranks, and this waits for it to finish."""
    env = {**os.environ, RUN_ID_ENV: run_id, PARENT_PID_ENV: str(os.getpid())}
    launcher = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, cwd=project_root())
    interrupted, started = False, time.time()
    while True:
        try:
            code = launcher.wait(timeout=interval)
            return EXIT_INTERRUPTED if interrupted else code
        except subprocess.TimeoutExpired:
            print(f"  {label}: {waiting.line(progress(node_dir), time.time() - started, timeout_s)}", file=sys.stderr,
                  flush=True)
        except KeyboardInterrupt:
            interrupted = True  # the launcher got the same SIGINT from the terminal: let it stop its ranks


def run_local(args: argparse.Namespace) -> int:
    root = project_root()
    resolved = resolve_cases(check_request(_request(args), root), root)  # planned once, written below
    checked = resolved.plan()
    problems = [f"error: {e}" for e in checked["errors"]] or \
        [f"error: {p}" for p in _node_problems(checked["cases"], args) or _host_problems(checked)]
    if problems:  # rejected before anything is written: no run directory is left behind
        print("\n".join(problems), file=sys.stderr)
        return 2
    plan = write_run_dir(resolved, root)
    if not plan["ok"]:
        print("\n".join(f"error: {e}" for e in plan["errors"]), file=sys.stderr)
        return 2
    assert plan["run_dir"] is not None and plan["run_id"] is not None  # an accepted plan has its directory
    run_dir, run_id, host = Path(plan["run_dir"]), plan["run_id"], socket.gethostname()
    node_rank = args.node_rank
    interrupted, all_succeeded = False, True
    for config in plan["cases"]:
        nnodes = config["nnodes"]
        for round_no in range(1, config["repeat"] + 1):
            if interrupted:
                break
            round_dir = run_dir / config["case_id"] / f"round{round_no}"
            node_dir = round_dir / f"{host}_noderank{node_rank}"
            argv = launch_argv(config, node_dir, run_id, args)
            print(f"# {config['case_id']} round {round_no}, node {node_rank} of {nnodes}:\n{shlex.join(argv)}",
                  file=sys.stderr, flush=True)
            label = f"{config['case_id']} round {round_no}"
            interrupted = _launch(argv, run_id, node_dir, label, float(plan["run_vars"]["progress_interval_s"]),
                                  float(config["timeout_s"])) == EXIT_INTERRUPTED
            if node_rank == 0:
                record = write_round_record(round_dir, ResolvedConfig.from_json(config), round_no, run_id,
                                            nodes_elsewhere=list(range(1, nnodes)))
                status, reason = record.status, record.reason
            else:  # node 0 writes the round's record
                status, reason, _ = read_node_result(node_dir)
                all_succeeded = all_succeeded and status == SUCCESS
                status = f"node {node_rank}: {status}"
            print(f"{config['case_id']} round {round_no}: {status}" + (f" ({reason})" if reason else ""),
                  file=sys.stderr)
    if node_rank != 0:
        print(f"results: {run_dir} (node {node_rank}'s directories; node 0 writes the round records and summary)")
        return EXIT_INTERRUPTED if interrupted else 0 if all_succeeded else 1
    summary, _ = write_run_summary(run_dir)
    print(render_table(summary))
    index_into(run_dir, Path(plan["run_vars"]["history_db"]))
    print(f"results: {run_dir}")
    if isinstance(summary.write_error, str):
        print(f"warning: summary.json and summary.md not written: {summary.write_error}", file=sys.stderr)
    report = write_report([run_dir])
    if report.write_error:
        print(f"warning: report.html not written: {report.write_error}", file=sys.stderr)
    else:
        print(f"report: {report.path}")
    return EXIT_INTERRUPTED if interrupted else 1 if summary.failed_rounds else 0


def cmd_run(args: argparse.Namespace) -> int:
    return run_local(args)


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run cases on this host without Ansible: plan, monitors, launch, record, summary; "
                                   "with --nnode N --node-rank R this host's node of each round")
    p.add_argument("cases", nargs="*", metavar="CASE",
                   help="case names or FlagPerf keys case:framework:hardware:nnodes:nproc:repeat (or --model-name)")
    p.add_argument("--task", choices=TASKS, default=TRAINING,
                   help="[run var perfplay_task] inference: the cases' inference pipeline (steps a-g: torch "
                        "validation, ONNX export, the vendor's engine); base: hardware benchmarks (CASE: gemm, "
                        "allreduce, ...; none: the vendor's base suite); generate: LLM generation latency (TTFT, "
                        "TPOT, tokens/s) of a case that offers it (llama); operation: single operators, native and "
                        "with the vendor's operator library (no CASE: the vendor's operation.yaml)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a mutable or run-only config key (a run-only one makes the run non-standard; "
                        "inference: a key of configurations.yaml); an option below that sets the same key must "
                        "agree")
    p.add_argument("--results-dir", help=f"default: the checkout's {RESULTS_NAME}/, as for the playbook and history")
    p.add_argument("--timeout-s", type=int, metavar="SECONDS", help="case timeout; default: the case's timeout_s")
    p.add_argument("--monitor-interval-s", type=float, default=MONITOR_INTERVAL_S, metavar="SECONDS")
    p.add_argument("--no-monitors", action="store_true")
    add_run_options(p)
    refuse_renamed(p)
    p.set_defaults(func=cmd_run)
