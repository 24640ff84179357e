"""perfplay as a Python project: pyproject.toml installs case_runners with its files and the `perfplay` command,
constraints.txt pins the whole dependency tree, make checks the Python before it makes the venv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from case_runners.paths import project_root
from case_runners.requirements_check import read_pins
from dependency_tree import CONSTRAINTS, constraints_text, public_version

REPO = project_root()
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PYTHON_MIN = PYPROJECT["project"]["requires-python"].removeprefix(">=")
CACHES = shutil.ignore_patterns("__pycache__", "*.pyc")


def package_files(top: Path) -> set[Path]:
    return {p.relative_to(top) for p in (top / "case_runners").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """`pip install --target` of a copy of the checkout (a build in the checkout would leave build/ there)."""
    source = tmp_path_factory.mktemp("source")
    setuptools = PYPROJECT["tool"]["setuptools"]
    for name in ("pyproject.toml", PYPROJECT["project"]["readme"], *setuptools["dynamic"]["dependencies"]["file"]):
        shutil.copy(REPO / name, source)
    shutil.copytree(REPO / "case_runners", source / "case_runners", ignore=CACHES)
    target = tmp_path_factory.mktemp("target")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--no-index", "--target", str(target), str(source)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return target


def test_the_package_holds_every_file_of_case_runners(installed: Path) -> None:
    assert package_files(installed) == package_files(REPO)


def test_perfplay_is_python_m_case_runners(installed: Path, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(installed))  # the dependencies: this venv's site-packages
    perfplay = subprocess.run([str(installed / "bin" / "perfplay"), "--help"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
    module = subprocess.run([sys.executable, "-m", "case_runners", "--help"], cwd=REPO, capture_output=True,
                            text=True, timeout=120, check=False)
    assert perfplay.returncode == 0, perfplay.stderr
    assert perfplay.stdout == module.stdout and "check-vendor" in module.stdout
    imported = subprocess.run([sys.executable, "-c", "import case_runners; print(case_runners.__file__)"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True)
    assert Path(imported.stdout.strip()).is_relative_to(installed)


def test_pip_install_dot_needs_what_requirements_txt_pins(installed: Path) -> None:
    """`pip install .` gives what make installs: every pin of requirements.txt (and of the files it includes)."""
    (dist_info,) = installed.glob("perfplay-*.dist-info")
    metadata = Parser().parsestr((dist_info / "METADATA").read_text(encoding="utf-8"))
    requires = map(Requirement, metadata.get_all("Requires-Dist"))
    required = {(canonicalize_name(r.name), str(r.specifier)) for r in requires}
    pinned = {(canonicalize_name(name), f"=={version}") for name, version in read_pins(REPO / "requirements.txt")}
    assert required == pinned
    assert metadata["Requires-Python"] == PYPROJECT["project"]["requires-python"]


def constraint_pins() -> dict[str, str]:
    return {canonicalize_name(name): version for name, version in read_pins(CONSTRAINTS)}


@pytest.mark.parametrize("requirements", sorted(p.name for p in REPO.glob("requirements*.txt")))
def test_constraints_pin_every_requirement_at_its_version(requirements: str) -> None:
    pinned = constraint_pins()
    for name, version in read_pins(REPO / requirements):
        assert version, f"{requirements}: {name} is not pinned (name==version)"
        assert pinned.get(canonicalize_name(name)) == public_version(version), \
            f"{requirements} pins {name}=={version}, constraints.txt {pinned.get(canonicalize_name(name))}: " \
            "pin it there too; make constraints then pins what it pulls in"


def test_constraints_are_the_installed_dependency_tree() -> None:
    assert CONSTRAINTS.read_text(encoding="utf-8") == constraints_text(), \
        "constraints.txt is not this venv's dependency tree of the requirements: make constraints rewrites it"


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "-s", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)


def test_make_reads_the_minimum_python_from_pyproject() -> None:
    shown = make("--eval", "show-python-min: ; @echo $(PYTHON_MIN)", "show-python-min")
    assert shown.stdout.strip() == PYTHON_MIN


def test_make_checks_the_python_before_the_venv() -> None:
    assert make("check-python", f"PYTHON={sys.executable}").returncode == 0
    newer = f"{sys.version_info.major}.{sys.version_info.minor + 1}"
    old = make("check-python", f"PYTHON={sys.executable}", f"PYTHON_MIN={newer}")
    version = ".".join(map(str, sys.version_info[:3]))
    assert old.returncode != 0
    assert old.stderr.splitlines()[0] == \
        f"perfplay needs Python >= {newer}; {sys.executable} is {version}: set PYTHON=python{newer}"
    missing = make("check-python", "PYTHON=/nonexistent/python3")
    assert missing.stderr.splitlines()[0] == \
        f"perfplay needs Python >= {PYTHON_MIN}; /nonexistent/python3 is not installed: set PYTHON=python{PYTHON_MIN}"
