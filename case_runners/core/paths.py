"""Where the project's files are.

The project is a perfplay checkout: the folder holding case_runners/ and vendor/ (and the requirements, playbooks
and roles). A checkout runs in place (PYTHONPATH, `make`'s editable install); a non-editable install
(`pip install .`) holds the package alone, and PERFPLAY_HOME names the checkout whose vendor/ it runs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from case_runners.core.errors import PerfplayError

VENDOR_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")  # a folder under vendor/; also a monitor's name
RESULTS_NAME = "results"  # the results root of every command: <checkout>/results (results_root)
RESOLVED_NAME = "resolved_config.json"  # a case's resolved config, <run_dir>/<case_id>/resolved_config.json
CHECKPOINT_DIR = "checkpoint"  # a trained model (save_checkpoint: true), <run_dir>/<case_id>/checkpoint on its hosts
PROJECT_ENV = "PERFPLAY_HOME"  # the checkout perfplay runs: its vendor/, and its case_runners (cli.main)
PROJECT_MARKERS = ("case_runners/__init__.py", "vendor")  # what makes a folder a perfplay checkout
# Counted FLOPs per sample, per case and shape (tasks/training/flops.py): this file in the venv, or the env's file.
FLOPS_CACHE_FILE = "perfplay-flops-cache.json"
FLOPS_CACHE_ENV = "PERFPLAY_FLOPS_CACHE_FILE"


class ProjectError(PerfplayError):
    """No perfplay checkout to take vendor/ from."""


def package_root() -> Path:
    """The folder holding the case_runners package that runs: the checkout, or site-packages when installed."""
    return Path(__file__).resolve().parents[2]


def _missing(folder: Path) -> list[str]:
    return [name for name in PROJECT_MARKERS if not (folder / name).exists()]


def project_root() -> Path:
    """The perfplay checkout: $PERFPLAY_HOME when set, else the folder holding this package when it is one.
    ProjectError saying what to set when neither is."""
    home = os.environ.get(PROJECT_ENV)
    if home:
        root = Path(home).expanduser().resolve()
        missing = _missing(root)
        if missing:
            raise ProjectError(f"{PROJECT_ENV}={home} is not a perfplay checkout: it has no {' and no '.join(missing)}")
        return root
    root = package_root()
    if _missing(root):
        raise ProjectError(f"case_runners runs from {root}, which is not a perfplay checkout (no vendor/): a "
                           f"non-editable install holds the package alone; set {PROJECT_ENV} to the checkout "
                           "(the folder with case_runners/ and vendor/)")
    return root


def results_root(root: Path | None = None) -> Path:
    """The results dir every command defaults to (the playbook's perfplay_results_dir, `run --results-dir`, the
    history database's folder, where run ids are looked up): the checkout's results/, wherever perfplay is installed
    and whatever the working directory, so a run, its history and its report are found by every command."""
    return (root or project_root()) / RESULTS_NAME


def display_path(path: Path, root: Path | None = None) -> str:
    """A path relative to the project root when it lies inside it, for messages."""
    try:
        root = root or project_root()
        return str(path.resolve().relative_to(root.resolve()))
    except (ValueError, ProjectError):
        return str(path)
