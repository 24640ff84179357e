"""Roles take their inputs as arguments (meta/argument_specs.yml) and publish their results as facts: a role
called without an argument it needs, or with one of the wrong type, stops at Ansible's argument-spec check, and
no play reads another play's registered result through hostvars."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from jinja2 import Environment, nodes
from packaging.utils import canonicalize_name

from playbook_run import REPO, run_playbook

ROLES = sorted(path.name for path in (REPO / "roles").iterdir() if path.is_dir())
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    # name: (role, the arguments it is called with)
    "host_preflight-none": ("host_preflight", {}),
    "host_preflight-nproc-not-int": ("host_preflight", {
        "host_preflight_python": "/usr/bin/python3", "host_preflight_project_dir": "/opt/perfplay",
        "host_preflight_vendor": "cpu", "host_preflight_nproc": "many"}),
    "runtime_host-none": ("runtime_host", {}),
    "runtime_docker-none": ("runtime_docker", {}),
    "clear_caches-not-bool": ("clear_caches", {"clear_caches_enabled": "maybe"}),
}


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_the_roles_are_covered():
    assert ROLES == ["clear_caches", "host_preflight", "runtime_docker", "runtime_host"]
    assert {role for role, _ in CALLS.values()} == set(ROLES)


def test_each_role_declares_its_arguments():
    """Every option has a type and a description, and is either required or has its default in defaults/main.yml
    (the same value where the spec states one); the defaults read no run var and no other host: the caller
    passes what the role needs."""
    wrong = []
    for role in ROLES:
        (spec,) = load(REPO / "roles" / role / "meta" / "argument_specs.yml")["argument_specs"].values()
        options = spec["options"]
        defaults_file = REPO / "roles" / role / "defaults" / "main.yml"
        defaults = (load(defaults_file) or {}) if defaults_file.exists() else {}
        wrong += [f"{role}: default of no option: {name}" for name in sorted(set(defaults) - set(options))]
        for name, option in options.items():
            if not (option.get("type") and option.get("description")):
                wrong.append(f"{role}: {name}: no type or no description")
            if bool(option.get("required")) == (name in defaults):
                wrong.append(f"{role}: {name}: wants either required: true or a default in defaults/main.yml")
            if "default" in option and option["default"] != defaults.get(name):
                wrong.append(f"{role}: {name}: the spec's default {option['default']!r} is not defaults/main.yml's")
        wrong += [f"{role}: default {name} reads {value!r}" for name, value in defaults.items()
                  if isinstance(value, str) and ("perfplay_" in value or "hostvars" in value)]
    assert not wrong, "; ".join(wrong)


def _hostvars_reads(source: str) -> set[str]:
    """The names a Jinja source reads off a host's vars: hostvars[h].x, hostvars[h]['x'], and
    map('extract', hostvars) | map(attribute='x')."""
    tree = Environment().parse(source)
    found = set()
    for node in [*tree.find_all(nodes.Getattr), *tree.find_all(nodes.Getitem)]:
        host = node.node
        if isinstance(host, (nodes.Getattr, nodes.Getitem)) and isinstance(host.node, nodes.Name) \
                and host.node.name == "hostvars":
            if isinstance(node, nodes.Getattr):
                found.add(node.attr)
            elif isinstance(node.arg, nodes.Const):
                found.add(node.arg.value)
    for call in tree.find_all(nodes.Filter):
        if call.name == "map" and any(name.name == "hostvars" for name in call.find_all(nodes.Name)):
            found.update(kw.value.value for kw in call.kwargs
                         if kw.key == "attribute" and isinstance(kw.value, nodes.Const))
    return found


def _strings(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [s for value in node.values() for s in _strings(value)]
    if isinstance(node, list):
        return [s for item in node for s in _strings(item)]
    return [node] if isinstance(node, str) else []


def _registers(node: Any) -> set[str]:
    if isinstance(node, dict):
        own = {node["register"]} if isinstance(node.get("register"), str) else set()
        return own.union(*(_registers(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_registers(item) for item in node))
    return set()


def test_no_play_reads_a_register_through_hostvars():
    """A role's or a play's result reaches other hosts and plays as a fact it publishes (set_fact), never as the
    register of one of its tasks: a register's shape is that task's, and renaming the task breaks its readers."""
    files = sorted(p for folder in ("playbooks", "roles") for p in (REPO / folder).rglob("*.yml"))
    documents = {path: load(path) for path in files}
    registers = set().union(*map(_registers, documents.values()))
    assert {"perfplay_plan", "host_preflight_check"} <= registers  # the reader sees them
    assert _hostvars_reads("{{ hostvars[h].a.b }} {{ hostvars['x']['c'] }} {{ hs | map('extract', hostvars) "
                           "| map(attribute='d') }}") == {"a", "c", "d"}
    read = [f"{path.relative_to(REPO)}: {name}" for path, document in documents.items()
            for source in _strings(document) if "{{" in source for name in _hostvars_reads(source) & registers]
    assert not read, "registers read through hostvars: " + "; ".join(read)


def test_a_role_called_without_its_arguments_stops_at_the_argument_spec(tmp_path: Path):
    """One play calls each role with missing or wrongly typed arguments and keeps what each call failed with."""
    out = tmp_path / "errors.json"
    keep = {"ansible.builtin.set_fact": {"errors": "{{ errors | combine({call: {'task': ansible_failed_task.action, "
                                                  "'msg': ansible_failed_result.msg}}) }}"}}
    tasks: list[dict[str, Any]] = [
        {"name": name, "vars": {"call": name}, "rescue": [keep],
         "block": [{"ansible.builtin.include_role": {"name": role}, "vars": arguments}]}
        for name, (role, arguments) in CALLS.items()]
    tasks.append({"ansible.builtin.copy": {"content": "{{ errors | to_json }}", "dest": str(out), "mode": "0644"}})
    playbook = tmp_path / "roles.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "vars": {"errors": {}},
                                         "tasks": tasks}], sort_keys=False))
    run = run_playbook(REPO, str(playbook), timeout=300)
    assert run.rc == 0, run.output[-3000:]
    errors = json.loads(out.read_text())
    assert sorted(errors) == sorted(CALLS), run.output[-3000:]  # every call failed
    assert {error["task"] for error in errors.values()} == {"ansible.builtin.validate_argument_spec"}, errors
    expected = {
        "host_preflight-none": "missing required arguments: host_preflight_project_dir, host_preflight_python, "
                               "host_preflight_vendor",
        "host_preflight-nproc-not-int": "argument 'host_preflight_nproc' is of type str and we were unable to "
                                        "convert to int",
        "runtime_host-none": "missing required arguments: runtime_host_project_dir, runtime_host_venv",
        "runtime_docker-none": "missing required arguments: runtime_docker_project_dir, runtime_docker_python",
        "clear_caches-not-bool": "argument 'clear_caches_enabled' is of type str and we were unable to convert "
                                 "to bool",
    }
    for name, text in expected.items():
        assert errors[name]["msg"].startswith("Validation of arguments failed:"), errors[name]
        assert text in errors[name]["msg"], errors[name]


def test_runtime_host_installs_a_no_deps_file_without_its_packages_dependencies(tmp_path: Path):
    """A stack's pins that list everything it imports (plan/config/stacks.py NO_DEPS, the plan's host_needs no_deps)
    go in with pip's --no-deps: tyro comes without docstring_parser, which it declares."""
    (tmp_path / "pins.txt").write_text("tyro==1.0.17\n")
    venv = tmp_path / "venv"
    playbook = tmp_path / "install.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "runtime_host"},
         "vars": {"runtime_host_project_dir": str(tmp_path), "runtime_host_venv": str(venv),
                  "runtime_host_python": sys.executable, "runtime_host_copy_project": False,
                  "runtime_host_install": ["pins.txt"], "runtime_host_no_deps": ["pins.txt"]}}]}], sort_keys=False))
    run = run_playbook(REPO, str(playbook), timeout=600)
    assert run.rc == 0, run.output[-3000:]
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
                            capture_output=True, text=True, check=True, timeout=300)
    names = {canonicalize_name(item["name"]) for item in json.loads(listed.stdout)}
    assert "tyro" in names and "docstring-parser" not in names, names
