"""The docs' own commands, as a user copies them: run with the venv's Python (a bare `python` is not the one `make`
installed perfplay into), and leaving the checkout clean: every file or folder they write into it (a report's `-o`,
a `compare --plot`, ansible-runner's private data dir, import-flagperf's default `--out`) is one git ignores, so the
rounds run after them do not record the checkout as changed (the environment's `perfplay.dirty`)."""

from __future__ import annotations

import re
import subprocess
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from case_runners.core.paths import project_root
from case_runners.host.requirements import read_pins
from case_runners.vendors.flagperf.command import DEFAULT_OUT

REPO = project_root()
DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "vendor").glob("*/README.md"),
               *(REPO / "case_runners" / "cases").glob("*/README.md")])
# An output option and its value, in a code block or an inline `command`
OUTPUT = re.compile(r"(?:\s-o|--output|--plot|--out)[ =](?P<path>[^\s`'\"|)\]]+)")
RUNNER_DIR = re.compile(r"ansible-runner run (?P<path>[^\s`]+)")  # its private data dir: env/ in, artifacts/ out
NOT_A_PATH = re.compile(r"^(start|stop|restart|status|[A-Z_]+|\.|<.*)$")  # monitor actions, placeholders, in place


def outputs() -> list[tuple[str, str]]:
    """(doc, a path relative to the checkout that a command of the doc writes)."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        paths = [m["path"] for m in OUTPUT.finditer(text)]
        paths += [f"{m['path']}/{name}" for m in RUNNER_DIR.finditer(text) for name in ("env/extravars",
                                                                                       "artifacts/first/stdout")]
        if "import-flagperf ~/" in text:  # without --out: its default, in the working directory
            paths.append(f"{DEFAULT_OUT}/flagperf_training.yml")
        for path in paths:
            if not (NOT_A_PATH.match(path) or path.startswith(("/", "~", "$", "results/"))) and \
                    ("." in path or "/" in path):  # a file name or folder, not a word of prose ("--plot for")
                found.append((str(doc.relative_to(REPO)), path))
    return sorted(set(found))


def test_the_docs_commands_that_write_into_the_checkout_are_found():
    found = {path for _, path in outputs()}
    assert {"a-vs-b.html", "loss.png", "runs/env/extravars", f"{DEFAULT_OUT}/flagperf_training.yml"} <= found


@pytest.mark.parametrize(("doc", "path"), outputs())
def test_what_a_docs_command_writes_into_the_checkout_is_ignored_by_git(doc, path):
    ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", "--no-index", path], check=False,
                             timeout=60)
    assert ignored.returncode == 0, f"{doc}: its command writes {path} into the checkout, which git does not " \
                                    "ignore: every round after it records the checkout as dirty (.gitignore)"


def test_a_file_of_the_checkout_itself_is_not_ignored():
    """The check above can fail: a path git does not ignore is told apart."""
    done = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", "--no-index", "docs/report.md"],
                          check=False, timeout=60)
    assert done.returncode == 1 and Path(REPO / "docs" / "report.md").is_file()


CODE_BLOCK = re.compile(r"^```[a-z]*\n(?P<body>.*?)^```", re.M | re.S)
INLINE_CODE = re.compile(r"(?<!`)`(?!`)(?P<body>[^`\n]+)`(?!`)")  # a `command` in running text
BARE_PYTHON = re.compile(r"^\s*(?:[A-Z_]+=\S+\s+)*(?P<python>python3?)\s", re.M)  # a command line, after VAR=...


def bare_python_lines(docs: list[Path] = DOCS) -> list[str]:
    """Each command line of a code block, and each inline `command` of the running text, that runs a bare python."""
    found = []
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        lines = [line for block in CODE_BLOCK.finditer(text) for line in block["body"].splitlines()]
        lines += [span["body"] for span in INLINE_CODE.finditer(CODE_BLOCK.sub("", text))]
        found += [f"{_shown(doc)}: {line.strip()}" for line in lines if BARE_PYTHON.match(line)]
    return found


def _shown(doc: Path) -> str:
    return str(doc.relative_to(REPO)) if doc.is_relative_to(REPO) else doc.name


def test_the_docs_commands_run_the_venv_s_python(tmp_path):
    assert BARE_PYTHON.match("python -m case_runners run llama") and BARE_PYTHON.match("X=1 python3 x.py")
    assert not BARE_PYTHON.match(".venv/bin/python -m case_runners run llama")
    doc = tmp_path / "doc.md"
    doc.write_text("Run `python -m case_runners run x` or `.venv/bin/python -m case_runners cases`.\n\n"
                   "```\npython -m case_runners report\n```\n", encoding="utf-8")
    assert bare_python_lines([doc]) == ["doc.md: python -m case_runners report", "doc.md: python -m case_runners run x"]
    assert bare_python_lines() == [], "a bare python is not the venv's outside it: write .venv/bin/python"


VENV_TOOL = re.compile(r"\.venv/bin/(?P<tool>[a-z][a-z0-9_.-]*)")
DEV_INSTALL = "make dev"  # the Makefile's target for requirements-dev.txt


def _scripts() -> dict[str, str]:
    """Console script -> the distribution that installs it."""
    return {ep.name: canonicalize_name(ep.dist.name) for ep in metadata.entry_points(group="console_scripts")
            if ep.dist is not None}


def _installed_by(requirements: str) -> set[str]:
    """The distributions a requirements file pins (with the files it includes), and what they require."""
    todo, found = [Requirement(f"{name}=={version}") for name, version in read_pins(REPO / requirements)], set()
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name not in found:
            found.add(name)
            todo += [r for r in map(Requirement, metadata.requires(name) or [])
                     if r.marker is None or r.marker.evaluate({"extra": ""})]
    return found


def test_every_venv_tool_the_docs_run_is_installed_or_its_install_is_said():
    """`make run` installs requirements.txt and perfplay; a tool of requirements-dev.txt (ansible-runner,
    ansible-builder) is run only by a page that says `make dev`, and `make dev` installs requirements-dev.txt."""
    scripts, run = _scripts(), _installed_by("requirements.txt") | {"perfplay"}
    dev = {canonicalize_name(name) for name, _ in read_pins(REPO / "requirements-dev.txt")}
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for tool in sorted({m["tool"] for m in VENV_TOOL.finditer(text)} - {"python", "pip"}):
            dist = scripts.get(tool)
            assert dist is not None, f"{doc.relative_to(REPO)} runs .venv/bin/{tool}, which no package installs"
            if dist not in run:
                assert dist in dev and DEV_INSTALL in text, \
                    f"{doc.relative_to(REPO)} runs .venv/bin/{tool} ({dist}), which `make run` does not install: " \
                    f"say `{DEV_INSTALL}`"
    shown = subprocess.run(["make", "--no-print-directory", "-n", "-B", "dev"], cwd=REPO, capture_output=True,
                           text=True, timeout=120, check=False)
    assert shown.returncode == 0 and "-r requirements-dev.txt" in shown.stdout, shown.stdout + shown.stderr
