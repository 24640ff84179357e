"""The dependency tree of perfplay's requirements as installed in this venv: what constraints.txt pins.

`make constraints` (python -m tests.dependency_tree) prints the file; tests/unit/test_packaging.py holds the file
to it. The roots are every pin of requirements.txt and requirements-dev.txt, and pip (the Makefile pins it too);
each distribution's requirements are followed whose markers hold here. Versions lose their local label
(torch 2.13.0+cpu is pinned as 2.13.0, which it satisfies): the pin is the same whatever index built it.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from case_runners.host.requirements import read_pins

REPO = Path(__file__).resolve().parents[1]
ROOT_FILES = ("requirements.txt", "requirements-dev.txt")
INSTALLER = "pip"
CONSTRAINTS = REPO / "constraints.txt"
HEADER = """\
# Every distribution perfplay's requirements pull in (requirements.txt, requirements-dev.txt, and pip), pinned:
# make installs with -c constraints.txt, and so does the runtime_host role. Written by `make constraints` from the
# venv; tests/unit/test_packaging.py checks it against the venv and the requirements files.
"""


def public_version(version: str) -> str:
    return version.split("+", 1)[0]


def roots() -> list[str]:
    return [name for file in ROOT_FILES for name, _ in read_pins(REPO / file)] + [INSTALLER]


def installed_tree() -> dict[str, tuple[str, str]]:
    """{canonical name: (name, version)} of every installed distribution the roots need, extras followed."""
    found: dict[str, tuple[str, str]] = {}
    visited: set[tuple[str, str]] = set()
    todo = [(name, "") for name in roots()]
    while todo:
        name, extra = todo.pop()
        key = (canonicalize_name(name), extra)
        if key in visited:
            continue
        visited.add(key)
        dist = metadata.distribution(name)  # a root or dependency that is not installed fails here, by name
        found[key[0]] = (dist.metadata["Name"], public_version(dist.version))
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
                todo += [(requirement.name, "")] + [(requirement.name, wanted) for wanted in requirement.extras]
    return found


def constraints_text() -> str:
    tree = installed_tree()
    return HEADER + "".join(f"{name}=={version}\n" for _, (name, version) in sorted(tree.items()))


if __name__ == "__main__":
    print(constraints_text(), end="")
