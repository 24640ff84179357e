"""Inside the container, before the node's ranks start (as FlagPerf does): the vendor case's
environment_variables.sh is sourced (by the container's entry shell), the case's requirements installed when
not already satisfied (case_requirements: a vendor's <vendor>_requirements.txt replaces the standard case's
requirements.txt), and its csrc/setup.py built. What was done goes to container_prepare.log.

Packages go to <run_dir>/<case_id>/.container-site (on the results mount, put on PYTHONPATH), so the later
rounds of the run find them installed; the image itself is never changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from case_runners.core import files
from case_runners.core.errors import PerfplayError
from case_runners.host.requirements import check_requirements
from case_runners.launch.container.image import hash_tree
from case_runners.plan.config.stacks import installs_without_deps
from case_runners.records.resolved import ResolvedConfig
from case_runners.vendors.layout import ENV_FILE, case_requirements, vendor_case_dir

PREPARE_LOG = "container_prepare.log"
SITE = ".container-site"


def _tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    hash_tree(digest, folder)
    return digest.hexdigest()[:16]


def _run(argv: list[str], log: Any, what: str) -> None:
    log.write(f"$ {' '.join(argv)}\n")
    log.flush()
    done = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False)
    if done.returncode:
        raise PerfplayError(f"{what} failed (exit code {done.returncode}); see {PREPARE_LOG}")


def _use_site(site: Path) -> None:
    """Put site first on this process's path and on the ranks' PYTHONPATH, once it exists."""
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if site.is_dir() and str(site) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), *paths]))
        sys.path.insert(0, str(site))


def _check_runtime(config_path: Path, site: Path, log: Any) -> None:
    """The vendor's runtime hook, device and backend in the image (`check-runtime`), once per case of a run."""
    stamp = site / ".runtime-checked"
    if stamp.exists():
        log.write("runtime: checked already\n")
        return
    done = subprocess.run([sys.executable, "-m", "case_runners", "check-runtime", "--config", str(config_path)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    log.write(f"runtime: check-runtime exit code {done.returncode}\n{done.stderr}")
    if done.returncode:
        try:
            problems = json.loads(done.stdout)["problems"]
        except (ValueError, KeyError, TypeError):
            problems = [f"check-runtime failed (exit code {done.returncode}); see {PREPARE_LOG}"]
        raise PerfplayError("; ".join(problems))
    files.secure_dir(site)
    stamp.touch()


def prepare(config: ResolvedConfig, config_path: Path, project_dir: Path, log_dir: Path) -> float:
    """Install the case's requirements and build its csrc; return the seconds spent. PerfplayError on failure."""
    started = time.monotonic()
    case_dir = vendor_case_dir(project_dir, config.vendor, config.case)
    site = config_path.parent / SITE
    files.secure_dir(log_dir)
    with files.open_text(log_dir / PREPARE_LOG) as log:
        sourced = os.environ.get("PERFPLAY_ENV_FILE")
        log.write(f"environment: {'sourced ' + sourced if sourced else f'no {ENV_FILE}'}\n")
        _use_site(site)  # what an earlier round installed counts as installed
        for requirements in case_requirements(project_dir, config.vendor, config.case, config.task_name,
                                              config.framework, config.engine):
            check = check_requirements(requirements)
            if check["satisfied"]:
                log.write(f"requirements: {requirements.relative_to(project_dir)} already satisfied\n")
            else:
                log.write(f"requirements: installing {', '.join(check['missing'] + check['mismatched'])}\n")
                no_deps = ["--no-deps"] if installs_without_deps(str(requirements.relative_to(project_dir))) else []
                _run([sys.executable, "-m", "pip", "install", "--no-input", "--progress-bar", "off", *no_deps,
                      "--target", str(site), "-r", str(requirements)], log, f"pip install -r {requirements}")
        _use_site(site)  # what was installed just now: the check imports the vendor's modules
        _check_runtime(config_path, site, log)
        setup = case_dir / "csrc" / "setup.py"
        if setup.is_file():
            stamp = site / f".csrc-{_tree_digest(setup.parent)}"
            if stamp.exists():
                log.write("csrc: already built\n")
            else:
                log.write("csrc: building setup.py\n")
                with tempfile.TemporaryDirectory() as tmp:  # the project is mounted read-only: build a copy
                    source = Path(tmp) / "csrc"
                    shutil.copytree(setup.parent, source)
                    _run([sys.executable, "-m", "pip", "install", "--no-input", "--no-deps", "--no-build-isolation",
                          "--target", str(site), str(source)], log, f"building {setup}")
                stamp.touch()
        _use_site(site)
        spent = time.monotonic() - started
        log.write(f"prepared in {spent:.2f} s\n")
    return spent
