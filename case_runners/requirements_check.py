"""Whether this Python already has every pinned requirement, so a host's venv is left alone when it does.

Reads `name==version` lines (comments and blank lines ignored) and compares with installed distributions.
A local version label (torch 2.13.0+cpu) satisfies its public version.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path
from typing import Any

_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([^\s;#]+)")


def pins(text: str) -> list[tuple[str, str]]:
    found = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = _PIN.match(line)
        found.append((match[1], match[2]) if match else (line, ""))
    return found


def check_requirements(path: Path) -> dict[str, Any]:
    missing, mismatched, unpinned = [], [], []
    for name, version in pins(path.read_text(encoding="utf-8")):
        if not version:
            unpinned.append(name)
            continue
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(f"{name}=={version}")
            continue
        if installed.split("+", 1)[0] != version.split("+", 1)[0]:
            mismatched.append(f"{name}=={version} (installed {installed})")
    # An unpinned line cannot be checked without pip: report it as not satisfied.
    return {"satisfied": not (missing or mismatched or unpinned), "missing": missing, "mismatched": mismatched,
            "unpinned": unpinned}
