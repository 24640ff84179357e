"""perfplay as a Python project: pyproject.toml installs case_runners with its files and the `perfplay` command,
constraints.txt pins the whole dependency tree, make checks the Python before it makes the venv."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from case_runners.core.paths import PROJECT_ENV, project_root
from case_runners.host.requirements import read_pins
from case_runners.records.round import RoundRecord
from dependency_tree import CONSTRAINTS, constraints_text, public_version

REPO = project_root()
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PYTHON_MIN = PYPROJECT["project"]["requires-python"].removeprefix(">=")
CACHES = shutil.ignore_patterns("__pycache__", "*.pyc")


def package_files(top: Path) -> set[Path]:
    return {p.relative_to(top) for p in (top / "case_runners").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def pip(python: str | Path, *args: str | Path) -> None:
    done = subprocess.run([str(python), "-m", "pip", *map(str, args)], capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """`pip wheel` of a copy of the checkout (a build in the checkout would leave build/ there)."""
    source = tmp_path_factory.mktemp("source")
    setuptools = PYPROJECT["tool"]["setuptools"]
    for name in ("pyproject.toml", PYPROJECT["project"]["readme"], *setuptools["dynamic"]["dependencies"]["file"]):
        shutil.copy(REPO / name, source)
    shutil.copytree(REPO / "case_runners", source / "case_runners", ignore=CACHES)
    out = tmp_path_factory.mktemp("wheel")
    pip(sys.executable, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index", "--wheel-dir", out,
        source)
    (built,) = out.glob("perfplay-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory) -> Path:
    """The wheel installed with `pip install --target`."""
    target = tmp_path_factory.mktemp("target")
    pip(sys.executable, "install", "--quiet", "--no-deps", "--no-index", "--target", target, wheel)
    return target


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory) -> Path:
    """A venv with the wheel installed in it (not editable), this venv's packages its dependencies: a .pth names
    this venv's site-packages, which is no site dir there, so its editable perfplay is not found."""
    folder = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], timeout=120, check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(folder), "platbase": str(folder)}))
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    # --ignore-installed: this venv's own perfplay (seen through the .pth) is never a candidate to uninstall
    pip(folder / "bin" / "python", "install", "--quiet", "--no-deps", "--no-index", "--ignore-installed", wheel)
    return folder


def perfplay(venv: Path, *args: str, cwd: Path, home: Path | None) -> subprocess.CompletedProcess:
    """The venv's `perfplay` in cwd (outside the checkout), with PERFPLAY_HOME=home or without it."""
    env = {k: v for k, v in os.environ.items() if k not in (PROJECT_ENV, "PYTHONPATH")}
    env.update({PROJECT_ENV: str(home)} if home else {})
    return subprocess.run([str(venv / "bin" / "perfplay"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


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


def test_an_installed_perfplay_without_a_checkout_says_what_to_set(venv: Path, tmp_path: Path) -> None:
    done = perfplay(venv, "check-vendor", "cpu", cwd=tmp_path, home=None)
    assert done.returncode == 2
    assert f"set {PROJECT_ENV} to the checkout" in done.stderr and "not a perfplay checkout" in done.stderr
    wrong = perfplay(venv, "check-vendor", "cpu", cwd=tmp_path, home=tmp_path)
    assert wrong.returncode == 2
    assert wrong.stderr.strip() == \
        f"error: {PROJECT_ENV}={tmp_path} is not a perfplay checkout: it has no case_runners/__init__.py and no vendor"


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """A checkout for PERFPLAY_HOME: a copy of this one's case_runners/ and vendor/ (its results/ is its own)."""
    checkout = tmp_path_factory.mktemp("home")
    for name in ("case_runners", "vendor"):
        shutil.copytree(REPO / name, checkout / name, ignore=CACHES)
    return checkout


def test_an_installed_perfplay_runs_the_checkout_perfplay_home_names(venv: Path, home: Path, tmp_path: Path) -> None:
    """And one rule for where runs and their history are: the checkout's results/, whatever the working directory,
    so `history list` and `report <run id>` run elsewhere find the run `run` made."""
    checked = perfplay(venv, "check-vendor", "cpu", cwd=tmp_path, home=home)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1] == "check-vendor cpu: 0 error(s), 0 warning(s)"
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir(), elsewhere.mkdir()
    ran = perfplay(venv, "run", "digits_cnn", "--set", "max_steps=5", cwd=here, home=home)
    assert ran.returncode in (0, 1), ran.stderr  # 1: the round stopped at max_steps, short of the target
    (record,) = (home / "results").glob("run*/digits_cnn_CPUx1x1/round1/round_record.json")
    assert "max_steps" in str(RoundRecord.load(record).reason)
    assert list(here.iterdir()) == [], "nothing in the working directory: no ./results of its own"
    run_id = record.parents[2].name
    listed = perfplay(venv, "history", "list", "--json", cwd=elsewhere, home=home)
    assert listed.returncode == 0, listed.stderr
    assert [row["run_id"] for row in json.loads(listed.stdout)] == [run_id]
    report = perfplay(venv, "report", run_id, "--check", cwd=elsewhere, home=home)
    assert report.returncode in (0, 1) and str(record.parents[2]) in report.stdout + report.stderr, \
        report.stdout + report.stderr


def test_perfplay_home_runs_that_checkouts_case_runners(venv: Path, tmp_path: Path) -> None:
    """Not the installed copy: the checkout's vendor/ is written for its own code, and the launchers and ranks
    run from the checkout."""
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "case_runners", checkout / "case_runners", ignore=CACHES)
    (checkout / "vendor").mkdir()
    init = checkout / "case_runners" / "__init__.py"
    init.write_text(init.read_text(encoding="utf-8").replace("__version__ = \"", "__version__ = \"9!"),
                    encoding="utf-8")
    shown = perfplay(venv, "--version", cwd=tmp_path, home=checkout)
    assert shown.stdout.split()[-1].startswith("9!"), shown.stdout + shown.stderr


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
