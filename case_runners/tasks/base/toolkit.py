"""A base benchmark measured by the vendor's toolkit (vendors/toolkits.py: its toolkit.yaml and result line): built
once per node, then run by the rank as its child (rank/child.py: the round's deadline and a stop reach it), each
result line it prints one measurement, against the peak the torch benchmark's figures are measured against.

The build runs in the node's directory of the round (TOOLKIT_BUILD_DIR/<benchmark>, the program's output in the
rank's log): the node's ranks take a lock on it, the first builds and leaves a stamp with its exit code and last
lines, the others read the stamp. A toolkit that runs once per node (runs_on: node) runs on the node's first rank;
the node's other ranks measure nothing of their own.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from case_runners.core import files
from case_runners.core.errors import PerfplayError
from case_runners.plan.config.benchmarks import PEAK_FLOPS, TOOLKIT
from case_runners.rank import stop_request
from case_runners.rank.child import run_child
from case_runners.rank.env import DEVICE_INDEX_ENV, DistEnv
from case_runners.records.base import Measurement, measurement
from case_runners.tasks.base.context import BaseContext
from case_runners.tasks.base.sizes import size_label
from case_runners.vendors.toolkits import NODE, RESULT_FORMAT, RESULT_PREFIX, Toolkit, parse_result

TOOLKIT_BUILD_DIR = "toolkit_build"  # in the node's directory of the round: <benchmark>/ per toolkit
STAMP = ".perfplay_built.json"  # in the build folder: {"code": exit code, "tail": last lines}
LOCK_POLL_S = 0.2


def build_dir(node_dir: Path, toolkit: Toolkit) -> Path:
    return node_dir / TOOLKIT_BUILD_DIR / toolkit.benchmark


@contextlib.contextmanager
def _node_lock(path: Path) -> Iterator[None]:
    """The node's lock on the build (a file lock: the node's ranks share the directory), waited for with the stop
    checks of the round."""
    with open(path, "a+", encoding="utf-8") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                stop_request.check("base (waiting for the toolkit's build)")
                time.sleep(LOCK_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build(toolkit: Toolkit, node_dir: Path, say: Any) -> Path:
    """The toolkit built in the node's build folder, once per node; its folder. PerfplayError naming the command and
    its last output where the build failed (on every rank of the node)."""
    folder = build_dir(node_dir, toolkit)
    folder.mkdir(parents=True, exist_ok=True)
    with _node_lock(folder.parent / f"{toolkit.benchmark}.lock"):
        stamp = folder / STAMP
        if not stamp.is_file():
            argv = toolkit.build_argv(folder)
            if argv:
                say(f"toolkit {toolkit.benchmark}: building: {' '.join(argv)}")
                code, tail = run_child(argv, toolkit.dir, dict(os.environ), what="the toolkit's build",
                                       doing="base")
            else:
                code, tail = 0, []
            files.atomic_write_json(stamp, {"code": code, "argv": argv, "tail": tail})
        built = json.loads(stamp.read_text(encoding="utf-8"))
    if built["code"] != 0:
        said = "\n".join(built["tail"])
        raise PerfplayError(f"{toolkit.shown}: the build exited with {built['code']}: {' '.join(built['argv'])}; "
                            f"its last output:\n{said}")
    return folder


def measure(toolkit: Toolkit, ctx: BaseContext, env: DistEnv, node_dir: Path) -> list[Measurement]:
    """The toolkit built (once per node), then run on this rank (or once per node, on its first rank): one
    measurement per result line, `source` toolkit."""
    folder = build(toolkit, node_dir, ctx.say)
    if toolkit.runs_on == NODE and env.local_rank != 0:
        return []
    argv = toolkit.run_argv(folder, device=int(os.environ.get(DEVICE_INDEX_ENV) or env.local_rank), rank=env.rank,
                            local_rank=env.local_rank, world_size=env.world_size, nproc=env.local_world_size)
    ctx.say(f"toolkit {toolkit.benchmark}: running: {' '.join(argv)}")
    lines: list[str] = []
    code, tail = run_child(argv, toolkit.dir, dict(os.environ),
                           lambda line: lines.append(line) if line.lstrip().startswith(RESULT_PREFIX) else None,
                           what="the toolkit's program", doing="base")
    said = "\n".join(tail)
    if code != 0:
        raise PerfplayError(f"{toolkit.shown}: the program exited with {code}: {' '.join(argv)}; its last "
                            f"output:\n{said}")
    try:
        results = [fields for fields in map(parse_result, lines) if fields is not None]
    except PerfplayError as exc:
        raise PerfplayError(f"{toolkit.shown}: {exc}") from None
    if not results:
        raise PerfplayError(f"{toolkit.shown}: the program printed no result line ({RESULT_FORMAT}); its last "
                            f"output:\n{said}")
    return [_measurement(toolkit, ctx, fields) for fields in results]


def _measurement(toolkit: Toolkit, ctx: BaseContext, fields: dict[str, Any]) -> Measurement:
    """A result line's measurement: its size (the label, else the bytes' size), the peak of its kind for gemm."""
    nbytes = fields.get("bytes")
    size = fields.get("size") or (size_label(nbytes) if nbytes is not None else "-")
    peak = ctx.peak(precision=fields["kind"] if toolkit.peak == PEAK_FLOPS else None)
    extra = {"algbw": fields["algbw"]} if "algbw" in fields else {}
    return measurement(toolkit.benchmark, fields["kind"], size, fields["achieved"], peak,
                       iterations=fields.get("iterations", 1), seconds=fields.get("seconds"), nbytes=nbytes,
                       note=f"the vendor's toolkit ({toolkit.shown}): {toolkit.metric}", source=TOOLKIT, **extra)
