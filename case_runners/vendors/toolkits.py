"""A vendor's base toolkits: vendor/<vendor>/base/toolkits/<benchmark>/toolkit.yaml, loaded and checked, and the
result line its program prints.

A toolkit is the vendor's native program for a base benchmark (FlagPerf's base/toolkits/<benchmark>/<vendor>/:
CUDA + cuBLAS gemm, NCCL bandwidth): it measures the chip below the framework. `--set mode=toolkit` (or `both`)
runs it in a base round (tasks/base/toolkit.py) instead of (or beside) perfplay's torch benchmark. Its folder:

    toolkit.yaml   metric (what the figure is, in words), unit (the benchmark's: FLOP/s, B/s or B), peak (the
                   vendor.yaml hardware key it is measured against: the benchmark's), build (optional: an argv
                   list run once per node before any rank runs the program), run (the argv list of the program),
                   runs_on (optional: `rank`, the default, every rank runs the program on its own device; or `node`,
                   the node's first rank runs it once for all the node's devices, one node only), description
    ...            its sources

Both argv lists run in the toolkit's folder (a relative path is its file, and an argument naming a source or a
script, SOURCE_SUFFIXES, must be one); placeholders stand anywhere in an
argument: {build} (the node's build folder of this toolkit, in the round's node directory), {toolkit} (the
toolkit's folder); in run also {device} (the rank's device index among those it sees), {rank}, {local_rank},
{world_size} and {nproc} (the node's ranks).

The program prints one result line per figure (other lines are its log), RESULT_PREFIX then space-separated
key=value pairs, a value with spaces quoted as a shell quotes it (kind='all_reduce fp32'):

    PERFPLAY_RESULT kind=copy achieved=4.3e10 bytes=268435456 iterations=20 seconds=0.0125

`kind` (the precision for gemm, copy/triad, the collective ...) and `achieved` (in the unit, > 0) are required;
`bytes` (moved or held per iteration), `size` (a label: 8192x8192x8192), `iterations` (default 1), `seconds`
(per iteration) and `algbw` (a collective's algorithm bandwidth, B/s) are optional. A program that exits non-zero,
prints no result line or a malformed one fails the round naming the line.

Every bad key, type or placeholder is a ConfigError naming the key, the file and the allowed values. Stdlib only.
"""

from __future__ import annotations

import dataclasses
import math
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from case_runners.core.errors import ConfigError, PerfplayError, shown
from case_runners.core.paths import display_path
from case_runners.plan.config.benchmarks import BENCHMARKS
from case_runners.plan.config.yaml_io import check_keys, load_mapping
from case_runners.vendors.layout import TOOLKIT_FILE, toolkits_dir

KEYS = ("description", "metric", "unit", "peak", "build", "run", "runs_on")
REQUIRED = ("metric", "unit", "peak", "run")
RANK, NODE = "rank", "node"
RUNS_ON = (RANK, NODE)
BUILD, TOOLKIT = "{build}", "{toolkit}"
BUILD_PLACEHOLDERS = (BUILD, TOOLKIT)
RUN_PLACEHOLDERS = (*BUILD_PLACEHOLDERS, "{device}", "{rank}", "{local_rank}", "{world_size}", "{nproc}")
PLACEHOLDER = re.compile(r"\{[^}]*\}")
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cu", ".h", ".hpp", ".cuh", ".sh", ".py")  # an argument naming one: a file

RESULT_PREFIX = "PERFPLAY_RESULT"
RESULT_KEYS: dict[str, type] = {"kind": str, "achieved": float, "bytes": int, "size": str, "iterations": int,
                                "seconds": float, "algbw": float}
RESULT_REQUIRED = ("kind", "achieved")
RESULT_FORMAT = f"{RESULT_PREFIX} kind=<kind> achieved=<number> [bytes=<int>] [size=<label>] [iterations=<int>] " \
                "[seconds=<number>] [algbw=<number>]"


@dataclasses.dataclass(frozen=True)
class Toolkit:
    """A checked toolkit.yaml."""

    benchmark: str  # the folder's name
    dir: Path  # vendor/<vendor>/base/toolkits/<benchmark>
    shown: str  # its toolkit.yaml, as messages name it
    description: str
    metric: str
    unit: str
    peak: str
    build: tuple[str, ...]  # as written (empty: nothing to build)
    run: tuple[str, ...]
    runs_on: str  # RUNS_ON

    def build_argv(self, build_dir: Path) -> list[str]:
        return [fill(arg, {BUILD: str(build_dir), TOOLKIT: str(self.dir)}) for arg in self.build]

    def run_argv(self, build_dir: Path, *, device: int, rank: int, local_rank: int, world_size: int,
                 nproc: int) -> list[str]:
        values = {BUILD: str(build_dir), TOOLKIT: str(self.dir), "{device}": str(device), "{rank}": str(rank),
                  "{local_rank}": str(local_rank), "{world_size}": str(world_size), "{nproc}": str(nproc)}
        return [fill(arg, values) for arg in self.run]


def fill(arg: str, values: Mapping[str, str]) -> str:
    """arg with each placeholder replaced by its value (load_toolkit allowed only known ones)."""
    return PLACEHOLDER.sub(lambda match: values[match.group(0)], arg)


def toolkit_names(root: Path, vendor: str) -> list[str]:
    """The vendor's toolkit folders (with a toolkit.yaml or not: load_toolkit says what is wrong)."""
    folder = toolkits_dir(root, vendor)
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))) \
        if folder.is_dir() else []


def load_toolkit(root: Path, vendor: str, benchmark: str) -> Toolkit:
    """vendor/<vendor>/base/toolkits/<benchmark>/toolkit.yaml, checked; ConfigError naming the key, the file and the
    allowed values (a missing folder: the toolkits the vendor has)."""
    folder = toolkits_dir(root, vendor) / benchmark
    path = folder / TOOLKIT_FILE
    file = display_path(path, root)
    if benchmark not in BENCHMARKS:
        raise ConfigError(f"'{benchmark}' is not a base benchmark: a toolkit's folder is named after the benchmark "
                          "it measures", file=display_path(folder, root), allowed=BENCHMARKS)
    if not path.is_file():
        have = toolkit_names(root, vendor)
        raise ConfigError(f"is missing: vendor '{vendor}' ships no toolkit for {benchmark}", file=file,
                          allowed=[f"the toolkits of {vendor}: {', '.join(have) or 'none'}", "mode torch"])
    data = load_mapping(path, root)
    check_keys(data, KEYS, REQUIRED, file)
    spec = BENCHMARKS[benchmark]
    for key in ("description", "metric"):
        if not isinstance(data.get(key, ""), str) or (key == "metric" and not data[key]):
            raise ConfigError("must be a string" + (" saying what the figure is" if key == "metric" else ""),
                              key=key, file=file)
    if data["unit"] != spec.unit:
        raise ConfigError(f"{shown(data['unit'])} is not the unit of {benchmark}'s figures", key="unit", file=file,
                          allowed=[spec.unit])
    if data["peak"] != spec.peak:
        raise ConfigError(f"{shown(data['peak'])} is not the peak {benchmark} is measured against (vendor.yaml "
                          f"hardware.<HW>.{spec.peak})", key="peak", file=file, allowed=[spec.peak])
    runs_on = data.get("runs_on", RANK)
    if runs_on not in RUNS_ON:
        raise ConfigError(f"{shown(runs_on)} is not where the program runs", key="runs_on", file=file,
                          allowed=RUNS_ON)
    build = _argv(data.get("build"), "build", BUILD_PLACEHOLDERS, folder, file, optional=True)
    return Toolkit(benchmark=benchmark, dir=folder, shown=file, description=data.get("description", ""),
                   metric=data["metric"], unit=spec.unit, peak=spec.peak, build=tuple(build),
                   run=tuple(_argv(data["run"], "run", RUN_PLACEHOLDERS, folder, file)), runs_on=runs_on)


def _argv(value: Any, key: str, placeholders: tuple[str, ...], folder: Path, file: str,
          optional: bool = False) -> list[str]:
    """An argv list of non-empty strings, its placeholders those allowed, an argument naming a source or script
    (SOURCE_SUFFIXES, no placeholder) a file of the folder."""
    if value is None and optional:
        return []
    rule = f"a list of strings, e.g. [cc, -O2, -o, {BUILD}/stream, stream.c]"
    if not isinstance(value, list) or not value or not all(isinstance(a, str) and a for a in value):
        raise ConfigError("must be a non-empty argv list", key=key, file=file, allowed=[rule])
    for i, arg in enumerate(value):
        for placeholder in PLACEHOLDER.findall(arg):
            if placeholder not in placeholders:
                raise ConfigError(f"{shown(arg)}: {placeholder} is not a placeholder of {key}", key=f"{key}[{i}]",
                                  file=file, allowed=placeholders)
        if Path(arg).suffix in SOURCE_SUFFIXES and not PLACEHOLDER.search(arg) and not arg.startswith("-") \
                and not _in_folder(folder, arg):
            raise ConfigError(f"{shown(arg)} is not a file of the toolkit's folder ({folder.name}/)",
                              key=f"{key}[{i}]", file=file,
                              allowed=sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                                             if p.is_file() and p.name != TOOLKIT_FILE)[:20])
    return value


def _in_folder(folder: Path, arg: str) -> bool:
    """Whether a relative argument names a file inside the folder (not above it)."""
    if Path(arg).is_absolute():
        return False
    path = (folder / arg).resolve()
    return path.is_file() and path.is_relative_to(folder.resolve())


def parse_result(line: str) -> dict[str, Any] | None:
    """The fields of a result line (None for any other line); PerfplayError naming the line when it is malformed."""
    if line.split(maxsplit=1)[:1] != [RESULT_PREFIX]:
        return None
    try:
        parts = shlex.split(line)
    except ValueError as exc:  # an unclosed quote
        raise PerfplayError(f"toolkit result line {line.strip()!r}: {exc} (the format: {RESULT_FORMAT})") from None
    found: dict[str, Any] = {}
    for part in parts[1:]:
        key, equals, raw = part.partition("=")
        if not equals or key not in RESULT_KEYS or key in found:
            why = "repeated" if key in found else "not key=value" if not equals else f"unknown key '{key}'"
            raise PerfplayError(f"toolkit result line {line.strip()!r}: {why} (the format: {RESULT_FORMAT})")
        try:
            value = RESULT_KEYS[key](raw)
        except ValueError:
            raise PerfplayError(f"toolkit result line {line.strip()!r}: {key}={raw!r} is not "
                                f"{'an integer' if RESULT_KEYS[key] is int else 'a number'}") from None
        if isinstance(value, float) and not (math.isfinite(value) and value > 0) or \
                isinstance(value, int) and value < (1 if key == "iterations" else 0):
            raise PerfplayError(f"toolkit result line {line.strip()!r}: {key}={raw} is out of range "
                                f"({'a finite number > 0' if isinstance(value, float) else 'an integer >= 0'})")
        found[key] = value
    missing = [key for key in RESULT_REQUIRED if key not in found]
    if missing:
        raise PerfplayError(f"toolkit result line {line.strip()!r} lacks {', '.join(missing)} (the format: "
                            f"{RESULT_FORMAT})")
    return found
