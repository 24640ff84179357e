"""The checkout a remote host runs: case_runners/, vendor/, the requirements and constraints.txt in one tar.

The same files give the same bytes (sorted names, no owner names, no compression timestamp), so Ansible's
copy sees no change on a second run. Modification times are kept: Python's bytecode cache relies on them.
"""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path

from case_runners.core import files

BUNDLE_NAME = "perfplay-src.tar"
CONTENTS = ("case_runners", "vendor", "requirements.txt", "requirements-case.txt", "requirements-agent.txt",
            "requirements-controller.txt", "constraints.txt")
SKIPPED = ("__pycache__", ".pytest_cache")


def _members(root: Path) -> list[Path]:
    found = []
    for name in CONTENTS:
        top = root / name
        found += [top] if top.is_file() else sorted(
            p for p in top.rglob("*") if p.is_file() and not set(p.parts) & set(SKIPPED) and p.suffix != ".pyc")
    return found


def _normalised(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_bundle(root: Path, out: Path) -> str:
    """Write the bundle of the checkout at root to out (atomically: whole or absent); return its sha256."""
    with files.replacing(out) as handle, tarfile.open(fileobj=handle, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in _members(root):
            tar.add(path, arcname=str(path.relative_to(root)), recursive=False, filter=_normalised)
    return hashlib.sha256(out.read_bytes()).hexdigest()
