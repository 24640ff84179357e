"""The options of `python -m case_runners run`: the unified run interface (docs/running.md), one table for every case.

RUN_OPTIONS maps each option to where its value goes: a config key of the case (set as `--set KEY=VALUE` sets it,
and checked by the plan as any run override is), a field of the case selection (run var perfplay_cases), a run
var, this host's node of the round (`case_runners launch`), or the vendor, picked by its device type. The parser's
options and their --help, the plan request (local_run.py) and the docs' table (docs/running.md) all come from it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from case_runners.core.defaults import RDZV_TIMEOUT_ENV, RDZV_TIMEOUT_S, VENDOR
from case_runners.core.run_ids import RUN_ID_RULE

CONFIG_KEY = "config key"  # a param of the case's config, as --set KEY=VALUE sets it
SELECTION = "selection"  # a field of the case selection (run var perfplay_cases)
RUN_VAR = "run var"  # a key of the plan request: the run var perfplay_<key>
NODE = "node"  # this host's node of the round: `case_runners launch --<key>`
DEVICE = "device"  # the vendor whose vendor.yaml `device` it is
MASTER_ADDR = "127.0.0.1"  # as torchrun's


@dataclass(frozen=True)
class RunOption:
    flags: tuple[str, ...]  # the option, then its aliases
    kind: str  # CONFIG_KEY, SELECTION, RUN_VAR, NODE or DEVICE
    key: str  # the config key, selection field, request key or launch option it sets
    meaning: str
    metavar: str | None = None  # None: a flag, which sets a config key to true
    type: Any = str  # a config key's value is text, read as --set reads it (the plan checks it)
    default: Any = None

    @property
    def dest(self) -> str:
        return self.flags[0].removeprefix("--").replace("-", "_")

    @property
    def target(self) -> str:
        """What the option sets, as --help and the docs name it."""
        return {CONFIG_KEY: f"config key {self.key}", SELECTION: f"selection {self.key}",
                RUN_VAR: f"run var perfplay_{self.key}", NODE: f"launch --{self.key.replace('_', '-')}",
                DEVICE: "vendor.yaml device"}[self.kind]

    @property
    def help(self) -> str:
        default = "" if self.default is None else f" (default {self.default})"
        return f"[{self.target}] {self.meaning}{default}"


RUN_OPTIONS: tuple[RunOption, ...] = (
    RunOption(("--model-name",), SELECTION, "case", "the case to run, instead of CASE", "CASE"),
    RunOption(("--vendor",), RUN_VAR, "vendor", f"the vendor folder vendor/NAME/ (default {VENDOR}, or the one "
                                                "--device picks)", "NAME"),
    RunOption(("--device",), DEVICE, "device", "the device type (cpu, cuda, musa, ...): run on the vendor whose "
                                               "vendor.yaml device it is; with --vendor the two must agree", "TYPE"),
    RunOption(("--hardware",), SELECTION, "hardware", "the vendor's hardware model (default: its default_hardware)",
              "MODEL"),
    RunOption(("--batch-size",), CONFIG_KEY, "batch_size", "training samples per rank and step", "N"),
    RunOption(("--epoch",), CONFIG_KEY, "max_epochs", "stop after N epochs (0: no epoch limit)", "N"),
    RunOption(("--step",), CONFIG_KEY, "max_steps", "stop after N steps (0: no step limit): the short functional run",
              "N"),
    RunOption(("--functional",), SELECTION, "functional", "the case's declared functional shape (config.yaml's "
                                                          "functional: block, inference: parameters.yaml's): a "
                                                          "small round, non-standard (check-vendor --functional)"),
    RunOption(("--lr",), CONFIG_KEY, "lr", "the learning rate", "LR"),
    RunOption(("--autocast",), CONFIG_KEY, "amp", "automatic mixed precision (amp=true): autocast to the vendor's "
                                                  "amp_dtype in vendor.yaml (fp16 adds a GradScaler)"),
    RunOption(("--dataset-path", "--data-dir"), SELECTION, "data_dir", "the case's data directory", "DIR"),
    RunOption(("--nproc-per-node", "--nproc"), SELECTION, "nproc", "ranks (devices) per node", "N", int),
    RunOption(("--nnode", "--nnodes"), SELECTION, "nnodes", "nodes of the round; with N > 1 each host runs its node "
                                                            "(--node-rank) with the same --run-id", "N", int),
    RunOption(("--repeat",), SELECTION, "repeat", "rounds of each case", "N", int),
    RunOption(("--node-rank",), NODE, "node_rank", "this host's node, 0 to N-1; node 0 serves the rendezvous and "
                                                   "writes the round records", "R", int, 0),
    RunOption(("--master-addr",), NODE, "master_addr", "node 0's address, the same on every node", "ADDR",
              default=MASTER_ADDR),
    RunOption(("--master-port",), NODE, "master_port", "node 0's rendezvous port, the same on every node; 0: a free "
                                                       "port, on one node only", "PORT", int, 0),
    RunOption(("--rdzv-timeout-s",), NODE, "rdzv_timeout_s", f"seconds the nodes have to meet at node 0 (default: "
                                                             f"${RDZV_TIMEOUT_ENV}, else {RDZV_TIMEOUT_S:g})",
              "SECONDS", float),
    RunOption(("--history-db",), RUN_VAR, "history_db", "the history database the run is indexed into (default: "
                                                        "perfplay.sqlite in --results-dir)", "PATH"),
    RunOption(("--progress-interval-s",), RUN_VAR, "progress_interval_s", "seconds between the progress lines printed "
                                                                      "while a round runs (default: 30)", "SECONDS",
              float),
    RunOption(("--run-id",), RUN_VAR, "run_id", f"the run and its directory's name ({RUN_ID_RULE}); required with "
                                                "--nnode > 1, the same on every node", "RUN_ID"),
)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """RUN_OPTIONS on `run`'s parser, each --help naming what it sets."""
    group = parser.add_argument_group("the unified run interface (docs/running.md), [what each option sets]")
    for option in RUN_OPTIONS:
        if option.metavar is None:
            group.add_argument(*option.flags, dest=option.dest, action="store_true", default=None, help=option.help)
        else:
            group.add_argument(*option.flags, dest=option.dest, type=option.type, metavar=option.metavar,
                               default=option.default, help=option.help)


def given(args: argparse.Namespace, kind: str) -> list[tuple[RunOption, Any]]:
    """The options of `kind` given on the command line (not left at their default), with their values."""
    return [(option, getattr(args, option.dest)) for option in RUN_OPTIONS
            if option.kind == kind and getattr(args, option.dest) not in (None, option.default)]


def markdown_table() -> str:
    """RUN_OPTIONS as the docs' table: option (and aliases), what it sets, meaning."""
    rows = ["| option | sets | meaning |", "|---|---|---|"]
    for option in RUN_OPTIONS:
        flags = ", ".join(f"`{flag}{'' if option.metavar is None else ' ' + option.metavar}`"
                          for flag in option.flags)
        default = "" if option.default is None else f" (default `{option.default}`)"
        rows.append(f"| {flags} | {option.target} | {option.meaning}{default} |")
    return "\n".join(rows)
