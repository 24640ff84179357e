"""`python -m case_runners run`: one host, no Ansible — the same steps the playbook takes per round."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from case_runners.config.yaml_io import VALUE_LIMIT, load_yaml
from case_runners.errors import ConfigError
from case_runners.host_check import host_check
from case_runners.netutil import free_port
from case_runners.paths import project_root
from case_runners.plan.run_plan import make_plan
from case_runners.processes import PARENT_PID_ENV
from case_runners.records.resolved import ResolvedConfig
from case_runners.results.record import write_round_record
from case_runners.results.summary import render_table, write_run_summary
from case_runners.run_ids import RUN_ID_ENV


def _request(args: argparse.Namespace) -> dict[str, Any]:
    """The plan request of the command line; ConfigError (exit status 2, before any run directory) if a --set is
    not KEY=VALUE with VALUE a YAML scalar or flow list (0.1, true, [1, 1, 1, 1]) the loader accepts."""
    overrides = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set wants KEY=VALUE, got {item[:80]!r}")
        overrides[key] = load_yaml(value, source=f"--set {key}", limit=VALUE_LIMIT)
    cases = []
    for case in args.cases:
        selection: dict[str, Any] = {"case": case, "overrides": overrides}
        for key in ("hardware", "nproc", "repeat", "data_dir"):
            if getattr(args, key) is not None:
                selection[key] = getattr(args, key)
        cases.append(selection)
    return {"vendor": args.vendor, "runtime": "host", "cases": cases, "task": args.task,
            "results_dir": str(Path(args.results_dir).resolve()), "case_timeout_s": args.timeout_s}


def _host_problems(plan: dict[str, Any], vendor: str) -> list[str]:
    """What the playbook's host preflight would find on this host: Python, devices, every case's data dir."""
    nproc = max((config["nproc"] for config in plan["cases"]), default=0)
    return host_check({"vendor": vendor, "nproc": nproc, "cases": plan["cases"]})["problems"]


def _launch(config: dict[str, Any], node_dir: Path, run_id: str, args: argparse.Namespace) -> int:
    """This host's node of one round: `case_runners launch` (which runs the round's monitors), as the playbook
    runs it. Ctrl-C reaches it too: it stops its ranks, and this waits for it to finish before going on."""
    argv = [sys.executable, "-m", "case_runners", "launch", "--config", config["config_path"], "--log-dir",
            str(node_dir), "--run-id", run_id, "--master-port", str(free_port()),
            "--monitor-interval", str(args.monitor_interval), *(["--no-monitors"] if args.no_monitors else [])]
    env = {**os.environ, RUN_ID_ENV: run_id, PARENT_PID_ENV: str(os.getpid())}
    launcher = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, cwd=project_root())
    interrupted = False
    while True:
        try:
            code = launcher.wait()
            return 130 if interrupted else code
        except KeyboardInterrupt:
            interrupted = True  # the launcher got the same SIGINT from the terminal: let it stop its ranks


def run_local(args: argparse.Namespace) -> int:
    request = _request(args)
    checked = make_plan(request, check=True)
    problems = [f"error: {e}" for e in checked["errors"]] or \
        [f"error: {p}" for p in _host_problems(checked, args.vendor)]
    if not problems:
        problems = [f"error: {config['case_id']} needs {config['nnodes']} nodes; use the playbook"
                    for config in checked["cases"] if config["nnodes"] != 1]
    if problems:  # rejected before anything is written: no run directory is left behind
        print("\n".join(problems), file=sys.stderr)
        return 2
    plan = make_plan(request)
    if not plan["ok"]:
        print("\n".join(f"error: {e}" for e in plan["errors"]), file=sys.stderr)
        return 2
    run_dir, run_id, host = Path(plan["run_dir"]), plan["run_id"], socket.gethostname()
    interrupted = False
    for config in plan["cases"]:
        for round_no in range(1, config["repeat"] + 1):
            if interrupted:
                break
            round_dir = run_dir / config["case_id"] / f"round{round_no}"
            interrupted = _launch(config, round_dir / f"{host}_noderank0", run_id, args) == 130
            record = write_round_record(round_dir, ResolvedConfig.from_json(config), round_no, run_id)
            print(f"{record.case_id} round {round_no}: {record.status}"
                  + (f" ({record.reason})" if record.reason else ""), file=sys.stderr)
    summary, _ = write_run_summary(run_dir)
    print(render_table(summary))
    print(f"results: {run_dir}")
    if isinstance(summary.write_error, str):
        print(f"warning: summary.json and summary.md not written: {summary.write_error}", file=sys.stderr)
    return 130 if interrupted else 1 if summary.failed_rounds else 0
