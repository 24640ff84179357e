"""A vendor's own training stacks: vendor/<vendor>/stacks/<name>/stack.yaml, loaded and checked.

A vendor stack is the vendor's training program (FlagPerf's in_container cases: a Megatron fork in the vendor's
image). perfplay launches it per rank as it launches any rank, hands it the inputs that make runs comparable and
measures what it writes (tasks/training/vendor_stack.py). Its folder:

    stack.yaml         name (the folder's), description, cases it runs (e.g. [llama]), command (an argv list run
                       per rank like a torchrun worker: relative paths are the folder's files, {python} the rank's
                       Python), params (its own, vendor-mutable where it runs: {name: {default: ..., <range>}} as
                       plan/config/constraints.py declares them; not the case's or the trainer's names, but a
                       built-in stack's may be reused, as Megatron's tensor_parallel is torchtitan's too),
                       log_parser (optional: for a program that prints its own log instead of writing perfplay's
                       stream, a built-in parser's name, LOG_PARSERS, or
                       a .py file of the folder defining PARSER_FUNCTION(line, inputs):
                       tasks/training/log_parsers.py), log_file (optional, with a log_parser: the file the program
                       writes its log to, parsed instead of its output; LOG_FILE_PLACEHOLDERS {log_dir}, the rank's
                       log directory, and {rank} stand in it; a relative path is the stack folder's, the program's
                       working directory; the inputs' `log_file` says where it is), log_rank (optional: the
                       rank whose log carries the steps, LOG_RANKS: `all` (the default: every rank's), `0` or
                       `last` (Megatron's print_rank_last); every other rank only has to run its command and end
                       well, and the round's figures are the logging rank's)
    requirements.txt   optional: its pins, installed with the case's
    ...                its own code

A case key's framework field names it (`llama:<name>:...`). Every bad key, type or path is a ConfigError naming the
key, the file and the allowed values. Stdlib only.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import Any

from case_runners.core.errors import ConfigError
from case_runners.core.paths import display_path
from case_runners.plan.config.constraints import Constraint, declare_params
from case_runners.plan.config.stacks import PYTORCH, STACKS
from case_runners.plan.config.yaml_io import check_keys, load_mapping
from case_runners.vendors.layout import STACK_FILE, STACK_REQUIREMENTS, stacks_dir

PYTHON = "{python}"  # in a command: the rank's Python (sys.executable)
PLACEHOLDERS = (PYTHON,)
KEYS = ("name", "description", "cases", "command", "params", "log_parser", "log_file", "log_rank")
REQUIRED = ("name", "cases", "command")
# A framework field: no ':' or '-', and no '_<digits>' (selection.py reads that as a version)
NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z][a-z0-9]*)*$")
NAME_RULE = "lower-case words of letters and digits joined by _, each starting with a letter"
PLACEHOLDER = re.compile(r"\{[^}]*\}")
MEGATRON = "megatron"  # Megatron-LM's training log (and its forks': FlagScale, vendors' in_container images)
LOG_PARSERS = (MEGATRON,)  # the built-in log parsers (tasks/training/log_parsers.py)
PARSER_FUNCTION = "parse_line"  # a parser file's function: (line, inputs) -> the stream's events, or None
LOG_DIR, RANK = "{log_dir}", "{rank}"
LOG_FILE_PLACEHOLDERS = (LOG_DIR, RANK)
ALL_RANKS, LAST_RANK = "all", "last"
LOG_RANKS = (ALL_RANKS, 0, LAST_RANK)  # log_rank's values: every rank logs its steps, rank 0 only, the last only


@dataclasses.dataclass(frozen=True)
class VendorStack:
    """A checked stack.yaml."""

    name: str
    dir: Path  # vendor/<vendor>/stacks/<name>
    shown: str  # its stack.yaml, as messages name it
    description: str
    cases: tuple[str, ...]
    command: tuple[str, ...]  # as written: {python} and paths relative to dir (argv() resolves them)
    params: dict[str, Any]  # its params' defaults
    constraints: dict[str, Constraint]
    log_parser: str | None = None  # a built-in parser's name or a .py file of dir; None: the program writes the stream
    log_file: str | None = None  # as written, placeholders and all (log_path() resolves it); None: its output
    log_rank: str | int = ALL_RANKS  # LOG_RANKS

    def logging_rank(self, world_size: int) -> int | None:
        """The one rank whose log carries the steps (log_rank); None where every rank's does."""
        return None if self.log_rank == ALL_RANKS else world_size - 1 if self.log_rank == LAST_RANK else 0

    def logs_on(self, rank: int, world_size: int) -> bool:
        """Whether this rank's program logs the steps (the rank then measures the round from its log)."""
        return self.logging_rank(world_size) in (None, rank)

    def log_path(self, log_dir: Path, rank: int) -> Path | None:
        """The log file of a rank whose log directory is log_dir, where the stack declares one."""
        if self.log_file is None:
            return None
        return self.dir / self.log_file.replace(LOG_DIR, str(log_dir)).replace(RANK, str(rank))

    @property
    def requirements(self) -> Path | None:
        """Its requirements.txt, where it has one."""
        path = self.dir / STACK_REQUIREMENTS
        return path if path.is_file() else None

    def argv(self, python: str) -> list[str]:
        """The command to run: {python} the rank's Python, an argument naming a file of the folder its absolute
        path."""
        return [python if arg == PYTHON else str(self.dir / arg) if _in_folder(self.dir, arg) else arg
                for arg in self.command]


def stack_names(root: Path, vendor: str) -> list[str]:
    """The vendor's stack folders (each with a stack.yaml or not: load_stack says what is wrong)."""
    folder = stacks_dir(root, vendor)
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))) \
        if folder.is_dir() else []


def vendor_stacks(root: Path, vendor: str) -> dict[str, VendorStack]:
    """Every stack of the vendor, loaded; ConfigError for the first that is not right."""
    return {name: load_stack(root, vendor, name) for name in stack_names(root, vendor)}


def stacks_for_case(root: Path, vendor: str, *cases: str) -> dict[str, VendorStack]:
    """The vendor's stacks that run the case (their `cases` list one of these names: a model case's own, and the
    case package it runs on, cases.case_package: a stack for `llama` runs llama3_8b)."""
    return {name: stack for name, stack in vendor_stacks(root, vendor).items() if set(cases) & set(stack.cases)}


def load_stack(root: Path, vendor: str, name: str) -> VendorStack:
    """vendor/<vendor>/stacks/<name>/stack.yaml, checked; ConfigError naming the key, the file, the allowed values."""
    folder = stacks_dir(root, vendor) / name
    path = folder / STACK_FILE
    shown = display_path(path, root)
    if not path.is_file():
        raise ConfigError(f"is missing: a vendor stack's folder needs its {STACK_FILE}", file=shown)
    data = load_mapping(path, root)
    check_keys(data, KEYS, REQUIRED, shown)
    if data["name"] != name:
        raise ConfigError(f"{data['name']!r} is not the stack's folder name", key="name", file=shown, allowed=[name])
    if not NAME.match(name) or name == PYTORCH or name in STACKS:
        why = "is a built-in stack's name" if name in (PYTORCH, *STACKS) else f"is not a stack name ({NAME_RULE})"
        raise ConfigError(why, key="name", file=shown, allowed=[NAME_RULE, f"not {', '.join((PYTORCH, *STACKS))}"])
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ConfigError("must be a string", key="description", file=shown)
    cases = data["cases"]
    if not isinstance(cases, list) or not cases or not all(isinstance(c, str) and c for c in cases):
        raise ConfigError("must be a non-empty list of case names", key="cases", file=shown, allowed=["[llama]"])
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise ConfigError("must be a mapping of params to {default: ..., <range>}", key="params", file=shown)
    defaults, constraints = declare_params(params, file=shown, prefix="params.")
    return VendorStack(name=name, dir=folder, shown=shown, description=description, cases=tuple(cases),
                       command=tuple(_command(data["command"], folder, shown)), params=defaults,
                       constraints=constraints, log_parser=_log_parser(data.get("log_parser"), folder, shown),
                       log_file=_log_file(data.get("log_file"), data.get("log_parser"), shown),
                       log_rank=_log_rank(data.get("log_rank", ALL_RANKS), shown))


def _log_rank(value: Any, shown: str) -> str | int:
    """One of LOG_RANKS (a YAML 0 or '0' is rank 0)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value not in (*LOG_RANKS, "0"):
        raise ConfigError(f"{value!r} is not a rank whose log carries the steps", key="log_rank", file=shown,
                          allowed=LOG_RANKS)
    return 0 if value in (0, "0") else value


def _log_file(value: Any, parser: Any, shown: str) -> str | None:
    """A path, its placeholders LOG_FILE_PLACEHOLDERS only; declared with a log_parser."""
    if value is None:
        return None
    rule = f"a path, with {LOG_DIR} (the rank's log directory) and {RANK} where they stand, e.g. {LOG_DIR}/megatron.log"
    if not isinstance(value, str) or not value:
        raise ConfigError("must be a path", key="log_file", file=shown, allowed=[rule])
    for placeholder in PLACEHOLDER.findall(value):
        if placeholder not in LOG_FILE_PLACEHOLDERS:
            raise ConfigError(f"{value!r}: {placeholder} is not a placeholder", key="log_file", file=shown,
                              allowed=LOG_FILE_PLACEHOLDERS)
    if parser is None:
        raise ConfigError("is read by the stack's log_parser, which it lacks", key="log_file", file=shown,
                          allowed=[*LOG_PARSERS, f"a .py file defining {PARSER_FUNCTION}(line, inputs)"])
    return value


def _log_parser(value: Any, folder: Path, shown: str) -> str | None:
    """A built-in parser's name, or a .py file of the folder whose top level defines PARSER_FUNCTION with two
    parameters (read, not run); None where the key is absent."""
    if value is None:
        return None
    allowed = [*LOG_PARSERS, f"a .py file of {folder.name}/ defining {PARSER_FUNCTION}(line, inputs)"]
    if not isinstance(value, str) or not value:
        raise ConfigError("must be a parser's name or a file", key="log_parser", file=shown, allowed=allowed)
    if value in LOG_PARSERS:
        return value
    if Path(value).suffix != ".py" or not _in_folder(folder, value):
        raise ConfigError(f"{value!r} is neither a built-in parser nor a .py file of the stack's folder "
                          f"({folder.name}/)", key="log_parser", file=shown, allowed=allowed)
    path = folder / value
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{value!r} is not Python: {exc}", key="log_parser", file=shown, allowed=allowed) from None
    function = next((node for node in tree.body if isinstance(node, ast.FunctionDef)
                     and node.name == PARSER_FUNCTION), None)
    if function is None or len(function.args.posonlyargs + function.args.args) != 2:
        why = "defines no" if function is None else "does not define its"
        raise ConfigError(f"{value!r} {why} top-level function {PARSER_FUNCTION}(line, inputs)", key="log_parser",
                          file=shown, allowed=allowed)
    return value


def _command(command: Any, folder: Path, shown: str) -> list[str]:
    """An argv list: strings, the first {python} or a file of the folder; placeholders {python} only; an argument
    that is a relative path (with a '/' or a file suffix) a file of the folder."""
    rule = f"a list of strings, the first {PYTHON} or a file of {folder.name}/ (e.g. [{PYTHON}, train.py])"
    if not isinstance(command, list) or not command or not all(isinstance(a, str) and a for a in command):
        raise ConfigError("must be a non-empty argv list", key="command", file=shown, allowed=[rule])
    for i, arg in enumerate(command):
        key = f"command[{i}]"
        for placeholder in PLACEHOLDER.findall(arg):
            if placeholder not in PLACEHOLDERS or arg != placeholder:
                raise ConfigError(f"{arg!r}: {placeholder} is not a placeholder (a whole argument)", key=key,
                                  file=shown, allowed=PLACEHOLDERS)
        if arg == PYTHON or arg.startswith("-") or Path(arg).is_absolute():
            continue
        path_like = "/" in arg or Path(arg).suffix in (".py", ".sh")
        if (path_like or i == 0) and not _in_folder(folder, arg):
            raise ConfigError(f"{arg!r} is not a file of the stack's folder ({folder.name}/)", key=key, file=shown,
                              allowed=sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                                             if p.is_file() and p.name != STACK_FILE)[:20])
    return command


def _in_folder(folder: Path, arg: str) -> bool:
    """Whether a relative argument names a file inside the folder (not above it)."""
    if Path(arg).is_absolute() or arg.startswith("-"):
        return False
    path = (folder / arg).resolve()
    return path.is_file() and path.is_relative_to(folder.resolve())
