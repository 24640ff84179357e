"""`python -m case_runners` is dispatch only: each command's parser lives beside its code, in its room, and only the
chosen command's module is imported."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

from case_runners.cli.main import COMMANDS, build_parser


def registered(module: str) -> set[str]:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    importlib.import_module(module).add_command(sub)
    return set(sub.choices)


def test_each_module_registers_the_commands_the_table_gives_it() -> None:
    for module in set(COMMANDS.values()):
        assert registered(module) == {c for c, m in COMMANDS.items() if m == module}, module


def test_the_whole_parser_has_every_command_and_one_command_only_its_own() -> None:
    def commands(parser: argparse.ArgumentParser) -> set[str]:
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return set(sub.choices)

    assert commands(build_parser()) == set(COMMANDS)
    assert commands(build_parser("wait")) == {c for c, m in COMMANDS.items() if m == COMMANDS["wait"]}


def test_a_command_imports_only_its_room() -> None:
    code = ("import json, sys; from case_runners.cli.main import main; main(['check-run-id', 'run20261126-abcdef']); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('case_runners.') "
            "or m in ('torch', 'ansible'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
    assert "case_runners.plan.command" in loaded
    assert not loaded & {"torch", "ansible", "case_runners.views.report.cli", "case_runners.launch.command",
                         "case_runners.cli.local_run"}, sorted(loaded)


def test_finish_and_cleanup_take_the_same_stop_options() -> None:
    """finish and cleanup stop what is left alike: one definition of --grace-s, --containers and --round (the two
    copies had drifted: "the round's containers" against "the run's", for the same stop_run)."""
    def stop_options(command: str) -> dict[str, tuple[object, ...]]:
        (sub,) = [a for a in build_parser(command)._actions if isinstance(a, argparse._SubParsersAction)]
        return {a.option_strings[0]: (a.dest, a.default, a.type, a.metavar, a.help)
                for a in sub.choices[command]._actions if a.dest in ("grace_s", "containers", "round")}

    assert len(stop_options("finish")) == 3
    assert stop_options("finish") == stop_options("cleanup")
