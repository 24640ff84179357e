"""Helpers of the integration tests: run the real ansible-playbook from a checkout, as a user would."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
_TASK = re.compile(r"^TASK \[(?P<name>.+)\] \**$")
_STATUS = re.compile(r"^(?P<status>ok|changed|skipping|failed|fatal): \[")


@dataclass
class PlaybookRun:
    rc: int
    output: str  # stdout and stderr, interleaved as a user sees them

    def task_statuses(self) -> dict[str, list[str]]:
        """Task title -> statuses its hosts/items reported, from the default stdout callback."""
        statuses: dict[str, list[str]] = {}
        current = None
        for line in self.output.splitlines():
            if match := _TASK.match(line):
                current = match["name"]
                statuses.setdefault(current, [])
            elif current and (match := _STATUS.match(line)):
                statuses[current].append(match["status"])
        return statuses


def checkout_copy(dest: Path) -> Path:
    """A private copy of the checkout to edit: without its venv, git, results and caches (results/ at the top
    only, not case_runners/records)."""
    top = {".venv", ".git", "results", ".ansible", ".pytest_cache", ".perfplay-images"}

    def ignore(directory: str, names: list[str]) -> set[str]:
        return {n for n in names if (Path(directory) == REPO and n in top) or n == "__pycache__"}

    shutil.copytree(REPO, dest, ignore=ignore, symlinks=True)
    return dest


def playbook_env(checkout: Path) -> dict[str, str]:
    """The caller's environment without its ANSIBLE_* settings: the checkout's ansible.cfg decides."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(checkout / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", PYTHONUNBUFFERED="1")
    return env


def run_playbook(checkout: Path, playbook: str, *args: str, timeout: float = 600,
                 env: dict[str, str] | None = None) -> PlaybookRun:
    """env: variables laid over playbook_env's, which the local ranks inherit."""
    proc = subprocess.run([str(BIN / "ansible-playbook"), playbook, *args], cwd=checkout,
                          env={**playbook_env(checkout), **(env or {})},
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
    return PlaybookRun(proc.returncode, proc.stdout)


def launched_anything(results_dir: Path) -> list[str]:
    """Evidence that a round started: round directories or monitor pid files."""
    return sorted(str(p.relative_to(results_dir)) for p in [*results_dir.glob("run*/*/round*"),
                                                          *results_dir.rglob("*.pid")])


def flat(text: str) -> str:
    """Ansible wraps long lines and warnings at the terminal width: compare with single spaces."""
    return " ".join(text.split())
