"""Every module documents itself: DOCUMENTATION, EXAMPLES and RETURN parse, options match argument_spec. The
options every module has are documented once, in the doc fragment perfplay_cli, and the attributes they share in
perfplay_attributes (playbooks/doc_fragments/): what is checked is what ansible-doc renders, the fragments merged in."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.module_utils import basic

from module_harness import REPO, load_action, load_module

MODULES = sorted(path.stem for path in (REPO / "library").glob("*.py"))
FRAGMENTS = REPO / "playbooks" / "doc_fragments"


@pytest.fixture(scope="module")
def rendered() -> dict:
    """ansible-doc --json of every module, with the project's ansible.cfg (library, doc_fragment_plugins)."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-doc"), "--json", "-t", "module", *MODULES],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return json.loads(done.stdout)


class _Captured(Exception):
    pass


def argument_spec(module, monkeypatch) -> dict:
    """The module's argument_spec; for a documentation-only module, its action plugin's ARGUMENT_SPEC."""
    if not hasattr(module, "main"):
        return load_action(module.__name__.removeprefix("perfplay_library_")).ARGUMENT_SPEC

    def capture(self, argument_spec, **kwargs):
        raise _Captured(argument_spec)

    monkeypatch.setattr(basic.AnsibleModule, "__init__", capture)
    with pytest.raises(_Captured) as captured:
        module.main()
    return captured.value.args[0]


def test_every_module_is_covered():
    assert MODULES == ["case_finish", "case_image", "case_launch", "case_plan", "case_wait", "host_check_info",
                       "round_record", "run_cleanup", "run_history", "run_report",
                       "run_summary", "run_vars_check"]


NO_CLI = {"run_vars_check"}  # runs no case_runners subcommand: no python, no project_dir


def fragment(name: str, section: str) -> dict:
    """One section (options, attributes) of a perfplay fragment or of one of its parts (perfplay_cli.project_dir)."""
    file, _, part = name.partition(".")
    text = getattr(runpy.run_path(str(FRAGMENTS / f"{file}.py"))["ModuleDocFragment"], part.upper() or "DOCUMENTATION")
    return yaml.safe_load(text).get(section) or {}


def fragments_of(name: str, file: str) -> list[str]:
    """The parts of the fragment `file` that module `name` extends."""
    extends = yaml.safe_load(load_module(name).DOCUMENTATION).get("extends_documentation_fragment") or []
    assert all(f.partition(".")[0] in ("perfplay_cli", "perfplay_attributes") for f in extends), extends
    return [f for f in extends if f.partition(".")[0] == file]


def fragment_options(name: str) -> set[str]:
    return set(fragment(name, "options"))


@pytest.mark.parametrize("name", sorted(set(MODULES) - NO_CLI))
def test_the_common_options_are_documented_once(name):
    own = yaml.safe_load(load_module(name).DOCUMENTATION)
    fragments = fragments_of(name, "perfplay_cli")
    shared = [fragment_options(fragment) for fragment in fragments]
    assert "project_dir" in set().union(*shared)
    assert sum(map(len, shared)) == len(set().union(*shared)), "an option in two fragments"
    assert not set().union(*shared) & set(own.get("options") or {}), "documented in the fragment already"


@pytest.mark.parametrize("name", MODULES)
def test_the_shared_attributes_are_documented_once(name, rendered):
    """Every module extends perfplay_attributes (no diff, POSIX hosts) and states none of its attributes again;
    every attribute ansible-doc renders says its support."""
    parts = fragments_of(name, "perfplay_attributes")
    assert "perfplay_attributes" in parts, parts
    shared = [set(fragment(part, "attributes")) for part in parts]
    assert sum(map(len, shared)) == len(set().union(*shared)), "an attribute in two fragments"
    own = yaml.safe_load(load_module(name).DOCUMENTATION).get("attributes") or {}
    assert not set().union(*shared) & set(own), "documented in the fragment already"
    attributes = rendered[name]["doc"]["attributes"]
    assert attributes["diff_mode"]["support"] == "none" and attributes["platform"]["platforms"] == "posix"
    assert all(value.get("support") in ("full", "partial", "none") for value in attributes.values()), attributes


@pytest.mark.parametrize("name", MODULES)
def test_documentation(name, monkeypatch, rendered):
    module = load_module(name)
    doc = rendered[name]["doc"]
    assert doc["module"] == name
    assert set(doc["attributes"]) >= {"check_mode", "diff_mode", "idempotent", "platform"}
    spec = argument_spec(module, monkeypatch)
    assert set(doc["options"]) == set(spec)
    for option, settings in spec.items():
        documented = doc["options"][option]
        assert documented["type"] == settings.get("type", "str"), option
        assert documented.get("required", False) == settings.get("required", False), option
        assert documented.get("default") == settings.get("default"), option
        assert documented.get("choices") == settings.get("choices"), option
    examples = yaml.safe_load(module.EXAMPLES)
    others = ("ansible.builtin.assert", "ansible.builtin.set_stats", "ansible.builtin.pip")
    assert examples and all(name in task for task in examples if not any(other in task for other in others))
    returned = yaml.safe_load(module.RETURN)
    assert returned and all("description" in value for value in returned.values())
