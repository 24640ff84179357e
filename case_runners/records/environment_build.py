"""A round's environment (records/environment.py), built on the controller with its record: the checkout's git
state, rank 0's software versions and thread settings, node 0's host and device names from its monitors' sys_info
files. Nothing here fails a record: what cannot be found is null (or [] for the device names)."""

from __future__ import annotations

import subprocess
import typing
from pathlib import Path
from typing import Any

from case_runners import __version__
from case_runners.core.paths import ProjectError, project_root
from case_runners.monitors.spec import MonitorSpec
from case_runners.records.environment import Environment, HostInfo, Perfplay, Threads
from case_runners.records.schema import ABSENT, Absent, RecordError, field_names, read_json, value_problems

GIT_TIMEOUT_S = 10  # a git that hangs (a network file system) costs a record this much at most, once per call
HOST_MONITOR = "host"
# rank 0's versions() keys that have their own field; the rest is the vendor's stack ("software")
PYTHON, TORCH = "python", "torch"


def _git(root: Path, *argv: str) -> str | None:
    """git's stdout in the checkout, or None when git is missing, fails or hangs."""
    try:
        done = subprocess.run(["git", "-C", str(root), *argv], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def checkout_state(root: Path | None = None) -> Perfplay:
    """The perfplay that runs: its version, and its checkout's commit and whether it has changes (tracked or
    untracked files git does not ignore); both null when the checkout is not a git work tree of its own."""
    state = Perfplay(version=__version__, commit=None, dirty=None)
    try:
        root = (root or project_root()).resolve()
    except ProjectError:
        return state
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top.strip()).resolve() != root:  # not a checkout, or a folder inside another repository
        return state
    commit, status = _git(root, "rev-parse", "HEAD"), _git(root, "status", "--porcelain")
    if commit is not None and commit.strip():
        state.commit = commit.strip()
    if status is not None:
        state.dirty = bool(status.strip())
    return state


def _sys_info(path: Path) -> dict[str, Any]:
    """A monitor's sys_info.json, or {} when it is missing or not a JSON object."""
    try:
        found = read_json(path)
    except RecordError:
        return {}
    return found if isinstance(found, dict) else {}


def host_info(node_dir: Path | None) -> HostInfo | None:
    """Node 0's host from its host monitor's sys_info.json; None without one."""
    info = _sys_info(MonitorSpec(node_dir, HOST_MONITOR).sys_info_path) if node_dir else {}
    if not info:
        return None
    hints = typing.get_type_hints(HostInfo)  # a value of another type (a hand-edited file) is null
    return HostInfo(**{name: None if value_problems(hints[name], info.get(name), name) else info.get(name)
                       for name in field_names(HostInfo)})


def device_names(node_dir: Path | None, vendor: str) -> list[str]:
    """Node 0's device names, in index order, from its vendor monitor's sys_info; [] when unknown."""
    info = _sys_info(MonitorSpec(node_dir, vendor).sys_info_path) if node_dir else {}
    devices = info.get("devices")
    if not isinstance(devices, list):
        return []
    return [str(d["name"]) for d in devices if isinstance(d, dict) and d.get("name") is not None]


def build_environment(versions: dict[str, Any] | None, node_dir: Path | None, vendor: str,
                      root: Path | None = None, threads: Threads | Absent = ABSENT) -> Environment:
    """The environment of a round: `versions`, rank 0's (None when rank 0 left no result with them); `node_dir`,
    node 0's node directory (None when the round has none here); `threads`, rank 0's thread settings."""
    versions = dict(versions or {})
    python, torch = versions.pop(PYTHON, None), versions.pop(TORCH, None)
    return Environment(perfplay=checkout_state(root), python=None if python is None else str(python),
                       torch=None if torch is None else str(torch),
                       software={str(k): str(v) for k, v in versions.items()},
                       host=host_info(node_dir), devices=device_names(node_dir, vendor), threads=threads)
