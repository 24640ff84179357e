"""`python -m case_runners run`: one host, no Ansible — the same steps the playbook takes per round."""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from case_runners.config.plan import make_plan
from case_runners.config.yaml_io import VALUE_LIMIT, load_yaml
from case_runners.errors import ConfigError
from case_runners.launch.node import launch, spec_from_config
from case_runners.netutil import free_port
from case_runners.results.record import write_round_record
from case_runners.results.summary import render_table, write_run_summary


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
            "results_dir": str(Path(args.results_dir).resolve()), "timeout_s": args.timeout}


def _monitors(operation: str, names: list[str], log_dir: Path, run_id: str, interval: float) -> None:
    """All of a round's monitors in one process, as the playbook's monitor module does."""
    if not names:
        return
    argv = [sys.executable, "-m", "case_runners", "monitor", "-o", operation, "-l", str(log_dir),
            *[arg for name in names for arg in ("--name", name)], "--run-id", run_id, "--interval", str(interval)]
    subprocess.run(argv, check=False, stdout=subprocess.DEVNULL)


def run_local(args: argparse.Namespace) -> int:
    plan = make_plan(_request(args))
    if not plan["ok"]:
        print("\n".join(f"error: {e}" for e in plan["errors"]), file=sys.stderr)
        return 2
    run_dir, run_id, host = Path(plan["run_dir"]), plan["run_id"], socket.gethostname()
    for config in plan["cases"]:
        if config["nnodes"] != 1:
            print(f"error: {config['case_id']} needs {config['nnodes']} nodes; use the playbook", file=sys.stderr)
            return 2
        monitors = [] if args.no_monitors else ["host"] + ([config["vendor"]] if config["vendor_info"]["monitor"] else [])
        for round_no in range(1, config["repeat"] + 1):
            round_dir = run_dir / config["case_id"] / f"round{round_no}"
            node_dir = round_dir / f"{host}_noderank0"
            node_dir.mkdir(parents=True)
            _monitors("ensure-started", monitors, node_dir, run_id, args.monitor_interval)
            try:
                spec = spec_from_config(Path(config["config_path"]), node_dir, node_rank=0,
                                        master_addr="127.0.0.1", master_port=free_port(), timeout_s=None,
                                        run_id=run_id)
                launch(spec)
            finally:
                _monitors("ensure-stopped", monitors, node_dir, run_id, args.monitor_interval)
            record = write_round_record(round_dir, config, round_no, run_id)
            print(f"{config['case_id']} round {round_no}: {record['status']}"
                  + (f" ({record['reason']})" if record["reason"] else ""), file=sys.stderr)
    summary = write_run_summary(run_dir)
    print(render_table(summary))
    print(f"results: {run_dir}")
    return 1 if summary["failed_rounds"] else 0
