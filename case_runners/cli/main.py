"""`python -m case_runners`: the commands the playbook runs on every host, and a single-host runner.

Dispatch only: each command registers its parser with the code it runs, in its room (COMMANDS), and only the chosen
command's module is imported. Machine-facing commands print one JSON document on stdout. torch is imported by
`worker`, and by the checks of a vendor's runtime (`host-check`, `check-runtime`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from case_runners import __version__
from case_runners.core.cli_io import EXIT_BAD_INPUT, ArgumentParser
from case_runners.core.errors import PerfplayError

# command -> the module that registers it (its add_command) and runs it, in the order `--help` lists them
COMMANDS = {
    "run": "case_runners.cli.local_run",
    "plan": "case_runners.plan.command",
    "launch": "case_runners.launch.command",
    "wait": "case_runners.launch.command",
    "finish": "case_runners.launch.command",
    "image": "case_runners.launch.container.command",
    "cleanup": "case_runners.launch.command",
    "check-run-id": "case_runners.plan.command",
    "infer": "case_runners.cli.infer",
    "worker": "case_runners.launch.command",
    "monitor": "case_runners.monitors.cli",
    "host-check": "case_runners.host.command",
    "check-runtime": "case_runners.host.command",
    "check-vendor": "case_runners.vendors.check.command",
    "requirements": "case_runners.host.command",
    "record": "case_runners.records.command",
    "check-record": "case_runners.records.command",
    "summary": "case_runners.views.summary.command",
    "discard-run": "case_runners.plan.command",
    "prepare-text": "case_runners.cases.llama.command",
    "prepare-lambada": "case_runners.cases.gpt2.command",
    "prepare-images": "case_runners.cases.imagenet.command",
    "prepare-summaries": "case_runners.cases.t5_small.command",
    "new-vendor": "case_runners.vendors.scaffold.commands",
    "new-case": "case_runners.vendors.scaffold.commands",
    "compare": "case_runners.views.compare.cli",
    "report": "case_runners.views.report.cli",
    "compare-runs": "case_runners.views.compare.runs_cli",
    "import-flagperf": "case_runners.vendors.flagperf.command",
    "history": "case_runners.views.history.cli",
    "cases": "case_runners.views.catalogue.cli",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of `command` alone where it is one (only its module imported), else of every command."""
    from case_runners.core.paths import PROJECT_ENV
    parser = ArgumentParser(prog="python -m case_runners", description=__doc__.splitlines()[0],
                                     epilog=f"{PROJECT_ENV}: the perfplay checkout to run, its vendor/ and its "
                                            "case_runners (default: the checkout this package is in; a "
                                            "non-editable install needs it)")
    parser.add_argument("--version", action="version", version=f"perfplay case_runners {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    modules = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for name in modules:
        importlib.import_module(name).add_command(sub)
    return parser


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
            from case_runners.monitors.cli import main as monitor_main
            return monitor_main(argv[1:])
        args = build_parser(argv[0] if argv else None).parse_args(argv)
        args.argv = argv
        return int(args.func(args))
    except PerfplayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
