"""What AWX and ansible-builder make of the checkout: the playbooks AWX lists, the execution environment, and
the ansible-core range the play checks first (stated once, in playbooks/preflight.yml)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from test_import_graph import closure, external_imports, modules

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
USER_PLAYBOOKS = ["playbooks/cleanup.yml", "playbooks/preflight.yml", "playbooks/run_case.yml", "run_case.yml"]

# AWX's rule for the playbooks a project offers, reimplemented from awx/main/utils/ansible.py (skip_directory,
# could_be_playbook; called by Project.playbooks in awx/main/models/projects.py) at ansible/awx e21dd0a:
# a .yml or .yaml file outside roles/, tasks/, group_vars/, host_vars/ and dot directories, with a line that
# starts, after blanks and an optional "-", with `hosts:`, `include:` or `import_playbook:` (the last two with
# an optional `ansible.builtin.` since AWX 21.2.0, before which only the short names count), or a vault file.
SKIPPED_DIRS = {"roles", "tasks", "group_vars", "host_vars"}
PLAY_LINE = {"current": re.compile(r"\s*-?\s*(hosts|(ansible\.builtin\.)?(include|import_playbook)):"),
             "before 21.2.0": re.compile(r"\s*-?\s*(hosts|include|import_playbook):")}


def awx_playbooks(project: Path, rule: str) -> list[str]:
    found = []
    for directory, _, names in os.walk(project):
        parts = Path(directory).relative_to(project).parts
        if SKIPPED_DIRS & set(parts) or any(part.startswith(".") for part in parts):
            continue
        for name in names:
            path = Path(directory, name)
            if path.suffix not in (".yml", ".yaml"):
                continue
            lines = path.read_text(encoding="utf-8", errors="ignore").splitlines()
            if (lines and lines[0].startswith("$ANSIBLE_VAULT;")) or any(PLAY_LINE[rule].match(x) for x in lines):
                found.append(str(path.relative_to(project)))
    return sorted(found)


def test_awx_lists_the_playbooks_users_run():
    listed = awx_playbooks(REPO, "current")
    assert [p for p in listed if p in USER_PLAYBOOKS] == USER_PLAYBOOKS, listed


def test_awx_before_21_2_lists_the_play_itself():
    """Older AWX and Tower miss the root run_case.yml (a FQCN import): docs/awx.md points them to
    playbooks/run_case.yml, the same play."""
    listed = awx_playbooks(REPO, "before 21.2.0")
    assert "playbooks/run_case.yml" in listed and "run_case.yml" not in listed
    assert "`playbooks/run_case.yml`" in (REPO / "docs" / "awx.md").read_text()


def _pin(requirements: str, package: str) -> str:
    (line,) = [line for line in (REPO / requirements).read_text().splitlines() if line.startswith(f"{package}==")]
    return line


def _ee_context(tmp_path: Path) -> Path:
    """`ansible-builder create` (no network, no container engine): the EE's build context."""
    context = tmp_path / "context"
    proc = subprocess.run([str(BIN / "ansible-builder"), "create", "--file", str(REPO / "execution-environment.yml"),
                           "--context", str(context), "--output-filename", "Containerfile"],
                          capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return context


def test_the_execution_environment_builds_its_context(tmp_path: Path):
    """The Containerfile and the requirements of the controller, at the versions the checkout pins, and no torch
    (the cases run on the hosts, not in the EE)."""
    context = _ee_context(tmp_path)
    containerfile = (context / "Containerfile").read_text()
    refs = f'ARG ANSIBLE_INSTALL_REFS="{_pin("requirements-controller.txt", "ansible-core")} '
    assert refs + f'{_pin("requirements-dev.txt", "ansible-runner")}"' in containerfile
    assert 'ARG PYCMD="/usr/bin/python3.11"' in containerfile
    python = (context / "_build" / "requirements.txt").read_text()
    assert python == (REPO / "requirements-ee.txt").read_text()
    assert "torch" not in ee_python(context)
    assert "openssh-clients" in (context / "_build" / "bindep.txt").read_text()


def ee_python(context: Path) -> list[str]:
    """The pip requirements the EE's builder stage installs: ansible-builder's own introspect.py, run on the
    context as the Containerfile lays it out in /build before it runs introspect (requirements.txt, and what the
    steps copy beside it)."""
    containerfile, build = (context / "Containerfile").read_text(), context / "build"
    build.mkdir()
    if (context / "_build" / "requirements").is_dir():  # what requirements.txt includes
        copy, introspect = containerfile.find("COPY _build/requirements/ ./"), containerfile.find("introspect.py")
        assert 0 <= copy < introspect, "the files requirements.txt includes are in /build before introspect runs"
        shutil.copytree(context / "_build" / "requirements", build, dirs_exist_ok=True)
    shutil.copy(context / "_build" / "requirements.txt", build)
    subprocess.run([sys.executable, str(context / "_build" / "scripts" / "introspect.py"), "introspect",
                    "--user-pip=requirements.txt", "--write-pip=pip.txt"], cwd=build, check=True, timeout=120,
                   capture_output=True)
    return [line.split("#")[0].strip() for line in (build / "pip.txt").read_text().splitlines() if line.strip()]


def _with_dependencies(requirements: list[str]) -> set[str]:
    """The distributions `requirements` install, with what they require (as installed in this venv)."""
    todo, found = [Requirement(r) for r in requirements], set()
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in found:
            continue
        found.add(name)
        for needed in map(Requirement, metadata.requires(name) or []):
            if needed.marker is None or needed.marker.evaluate({"extra": ""}):
                todo.append(needed)
    return found


def test_the_execution_environment_has_what_the_report_imports(tmp_path: Path):
    """The play writes report.html on the controller: every package the report's code imports (matplotlib) is
    installed in the EE, or under AWX the run ends with a warning and no report."""
    known = modules(REPO, "case_runners")
    report = closure(REPO, "case_runners", "case_runners.views.report")
    imported = set().union(*(external_imports(known[m][0]) for m in report))
    needed = imported - set(sys.stdlib_module_names) - {"case_runners"}
    assert "matplotlib" in needed
    distributions = metadata.packages_distributions()
    installed = _with_dependencies([*ee_python(_ee_context(tmp_path)),  # and ansible_core, ansible_runner:
                                    _pin("requirements-controller.txt", "ansible-core"),
                                    _pin("requirements-dev.txt", "ansible-runner")])
    missing = {module: distributions.get(module) for module in sorted(needed)
               if not {canonicalize_name(d) for d in distributions.get(module, [])} & installed}
    assert not missing, f"the report imports what the execution environment does not install: {missing}"


def _ansible_core_range() -> dict[str, str]:
    (plan_play, *_) = yaml.safe_load((REPO / "playbooks" / "preflight.yml").read_text())
    assert plan_play["tasks"][0]["name"] == "Check the ansible-core version", "the very first task"
    return plan_play["vars"]["perfplay_ansible_core"]


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_the_pinned_ansible_core_is_in_the_range_the_play_checks():
    bounds = _ansible_core_range()
    pinned = _pin("requirements-controller.txt", "ansible-core").split("==")[1]
    assert _version(bounds["min"]) <= _version(pinned) < _version(bounds["below"])


def test_the_docs_state_the_range():
    bounds = _ansible_core_range()
    assert f"ansible-core >= {bounds['min']}, < {bounds['below']}" in (REPO / "docs" / "awx.md").read_text()
