"""Whether this Python already has every pinned requirement, so a host's venv is left alone when it does.

Reads `name==version` lines (comments and blank lines ignored; `-r FILE` includes another file, relative to
the including one) and compares with installed distributions. A local version label (torch 2.13.0+cpu)
satisfies its public version.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from case_runners.plan.config.stacks import installs_without_deps

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


_INCLUDE = re.compile(r"^\s*(?:-r|--requirement)[\s=]+(\S+)")


def read_pins(path: Path, seen: frozenset[Path] = frozenset()) -> list[tuple[str, str]]:
    """The pins of a requirements file and of the files it includes, each pin once."""
    found: list[tuple[str, str]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        include = _INCLUDE.match(line)
        if include:
            target = (path.parent / include[1]).resolve()
            if target not in seen:
                found += read_pins(target, seen | {path.resolve()})
        else:
            found += pins(line)
    return list(dict.fromkeys(found))


def check_requirements(path: Path) -> dict[str, Any]:
    missing, mismatched, unpinned = [], [], []
    for name, version in read_pins(path):
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


def unsatisfied(files: list[str], root: Path) -> tuple[list[str], list[str]]:
    """(problems, warnings) of the requirements files a run needs (relative to root), each once: a pin this Python
    lacks or has at another version is a problem naming the file; a line that is not a pin cannot be checked without
    pip (a warning)."""
    answer = pins_answer(files, root)
    return answer["problems"], answer["warnings"]


def pins_answer(files: list[str], root: Path) -> dict[str, Any]:
    """The requirements part of the host check (stdlib only: it runs before anything the pins install is imported):
    unsatisfied's problems and warnings, and `unmet`, the files pip is to install (a pin missing or at another
    version, or a line that cannot be checked without pip)."""
    unmet, problems, warnings = [], [], []
    for name in dict.fromkeys(files):
        check = check_requirements(root / name)
        if not check["satisfied"]:
            unmet.append(name)
        wrong = check["missing"] + check["mismatched"]
        if wrong:
            no_deps = " --no-deps" if installs_without_deps(name) else ""
            problems.append(f"{name}: this Python ({sys.executable}) lacks {', '.join(wrong)}: install them with "
                            f"{sys.executable} -m pip install{no_deps} -r {root / name} (the playbook does)")
        if check["unpinned"]:
            warnings.append(f"{name}: {', '.join(check['unpinned'])} not a name==version pin: not checked")
    return {"unmet": unmet, "problems": problems, "warnings": warnings}
