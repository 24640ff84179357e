"""What every command shares: its parser class (no abbreviations), one JSON document on stdout, a JSON request
file, and the refusal of an option renamed with its run var. Stdlib only: every command builds its parser."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_BAD_INPUT = 2  # a command refused its input (a PerfplayError: the message names the key and file)
RUN_VAR_PREFIX = "perfplay_"  # every run var's name starts with it; a command's option is the rest
# Run vars renamed: the old name is an error naming the new one (plan/run_vars.py), and so is the old name of the
# option that sets one.
RENAMED = {f"{RUN_VAR_PREFIX}{old}": f"{RUN_VAR_PREFIX}{old}_s" for old in (
    "case_timeout", "rdzv_timeout", "heartbeat_timeout", "monitor_interval", "progress_interval")}


class ArgumentParser(argparse.ArgumentParser):
    """Every parser of case_runners and bench: argparse's, refusing an abbreviated option (`--vend` for `--vendor`)
    instead of guessing, so that a later option sharing the prefix never changes what a command line means. Its
    subparsers are of this class too (add_subparsers' default)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def load_json(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


class Renamed(argparse.Action):
    """An option renamed with its run var (RENAMED): refused, naming the new one. Registered, it is also
    no longer taken as an abbreviation of the new one."""

    def __init__(self, option_strings: list[str], dest: str, new: str) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs="?", help=argparse.SUPPRESS)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.error(f"{option_string} is renamed {self.new}: give that instead")


def refuse_renamed(parser: argparse.ArgumentParser) -> None:
    """The old name of each of `parser`'s options whose run var was renamed, as a refusal naming the new one."""
    def flag(run_var: str) -> str:
        return "--" + run_var.removeprefix(RUN_VAR_PREFIX).replace("_", "-")
    for old, new in RENAMED.items():
        if flag(new) in parser._option_string_actions:
            parser.add_argument(flag(old), action=Renamed, new=flag(new))
