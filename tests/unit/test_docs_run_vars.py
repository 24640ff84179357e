"""docs/run-vars.md is the one place the run vars are documented, and it stays in sync with the code.

Read from the files alone (no Ansible run, no Ansible import):
- the `perfplay_*` vars the plays read: every Jinja expression in playbooks/ and roles/ (templated strings and
  bare conditions), less the names the plays define themselves (vars, vars files, set_fact, register, loop_var);
- case_plan's options (library/case_plan.py's DOCUMENTATION) and the vars each one carries: the value preflight
  passes it, or the run var its description names;
- the role options each var reaches: a role default or a role var set from it, or an option whose description in
  roles/*/meta/argument_specs.yml names it;
- the vars the sample and local inventories set.

The doc's table lists, per var, its default, what it reaches (`case_plan.<option>`, `<role option>`) and what it
means. A var read and not documented, documented and not read, or a wrong mapping fails naming the var. The
defaults the plan applies (case_runners/plan/run_vars.py, from case_runners/core/defaults.py) are the doc's.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jinja2 import Environment, nodes

from case_runners.core import defaults
from case_runners.plan.run_vars import (
    CHOICES,
    DOCUMENTED_RUN_VARS,
    KNOWN_RUN_VARS,
    PLAY_VARS,
    QUERIED_NAMES,
    RENAMED,
    RUN_VAR_PREFIX,
    SCALARS,
)

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "run-vars.md"
CASE_PLAN = ROOT / "library" / "case_plan.py"
VAR = re.compile(r"perfplay_[a-z][a-z0-9_]*")
ROW = re.compile(r"^\|\s*`(perfplay_[a-z0-9_]+)`\s*\|(.*)\|\s*$")
TICKED = re.compile(r"`([^`]+)`")
CONDITION_KEYS = ("when", "that", "changed_when", "failed_when", "until")
SET_FACT = ("set_fact", "ansible.builtin.set_fact")
PLAN_MODULE = "case_plan"
JINJA = Environment()


def yaml_files(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*") if p.suffix in (".yml", ".yaml"))


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT))


def walk(node: Any, key: str | None = None) -> Iterator[tuple[str | None, Any, Any]]:
    """(key, value, parent mapping) for every mapping entry and list item of a YAML document, depth first."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield k, v, node
            yield from walk(v, k)
    elif isinstance(node, list):
        for item in node:
            yield key, item, None
            yield from walk(item, key)


def expressions(key: str | None, value: Any) -> list[str]:
    """The Jinja sources in one YAML value: a templated string, or a bare condition."""
    if not isinstance(value, str):
        return []
    if "{{" in value or "{%" in value:
        return [value]
    return ["{{ " + value + " }}"] if key in CONDITION_KEYS else []


def _root_name(node: nodes.Node) -> str | None:
    while isinstance(node, (nodes.Getattr, nodes.Getitem)):
        node = node.node
    return node.name if isinstance(node, nodes.Name) else None


def reads(source: str) -> set[str]:
    """The perfplay_* vars a Jinja source reads: names, hostvars[...].perfplay_x / ['perfplay_x'], and
    map(attribute='perfplay_x')."""
    tree = JINJA.parse(source)
    found = {n.name for n in tree.find_all(nodes.Name) if n.ctx == "load"}
    for attr in tree.find_all(nodes.Getattr):
        if _root_name(attr) == "hostvars":
            found.add(attr.attr)
    for item in tree.find_all(nodes.Getitem):
        if _root_name(item) == "hostvars" and isinstance(item.arg, nodes.Const) and isinstance(item.arg.value, str):
            found.add(item.arg.value)
    for call in tree.find_all(nodes.Filter):
        found.update(kw.value.value for kw in call.kwargs
                     if kw.key == "attribute" and isinstance(kw.value, nodes.Const) and isinstance(kw.value.value, str))
    return {name for name in found if VAR.fullmatch(name)}


def default_literals(source: str) -> Iterator[tuple[str, Any]]:
    """(var, X) for each `var | default(X)` of a Jinja source where X is a literal other than null or ''."""
    for n in JINJA.parse(source).find_all(nodes.Filter):
        if n.name == "default" and isinstance(n.node, nodes.Name) and VAR.fullmatch(n.node.name) and n.args \
                and isinstance(n.args[0], nodes.Const) and n.args[0].value not in (None, ""):
            yield n.node.name, n.args[0].value


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def role_options() -> dict[str, tuple[str, dict[str, Any]]]:
    """Every role option in roles/*/meta/argument_specs.yml: name -> (file, its spec)."""
    options = {}
    for path in sorted(ROOT.glob("roles/*/meta/argument_specs.yml")):
        for spec in (load(path).get("argument_specs") or {}).values():
            for name, option in (spec.get("options") or {}).items():
                options[name] = (shown(path), option)
    return options


def case_plan_documentation() -> dict[str, Any]:
    """library/case_plan.py's DOCUMENTATION, read from the source (importing the module would import Ansible)."""
    tree = ast.parse(CASE_PLAN.read_text(encoding="utf-8"))
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(getattr(t, "id", None) == "DOCUMENTATION" for t in stmt.targets):
            return yaml.safe_load(ast.literal_eval(stmt.value))
    raise AssertionError(f"{shown(CASE_PLAN)} has no DOCUMENTATION")


def text_of(description: Any) -> str:
    return " ".join(description) if isinstance(description, list) else str(description or "")


class Code:
    """What the code says about the run vars."""

    def __init__(self) -> None:
        self.read: dict[str, set[str]] = {}      # var -> files that read it
        self.defined: set[str] = set()           # names the plays define themselves
        self.reaches: dict[str, set[str]] = {}   # var -> case_plan.<option> and role options it reaches
        self.defaults: dict[str, set[str]] = {}  # var -> its defaults as the code writes them
        self.options = role_options()
        plan_doc = case_plan_documentation()
        self.plan_options: dict[str, dict[str, Any]] = plan_doc["options"]
        for path in yaml_files("playbooks", "roles"):
            self._read_yaml(path)
        self._read_descriptions()
        for found in (self.read, self.reaches, self.defaults):
            for var in self.defined & set(found):
                del found[var]

    def _read_yaml(self, path: Path) -> None:
        """A play's or a role's file: the names it defines, the vars it reads, where they reach, their defaults."""
        if path.parent.name == "vars":  # a vars file the plays load (playbooks/vars/) or a role's vars
            self.defined.update(load(path) or {})
        for key, value, parent in walk(load(path)):
            if key in ("vars", *SET_FACT) and isinstance(value, dict):
                self.defined.update(value)
            elif key in ("register", "loop_var") and isinstance(value, str):
                self.defined.add(value)
            elif key == PLAN_MODULE and isinstance(value, dict):
                for option, given in value.items():
                    for source in expressions(option, given):
                        for var in reads(source):
                            self._reach(var, f"{PLAN_MODULE}.{option}")
            if isinstance(parent, dict) and key in self.options:  # a role option set in a default or a role var
                for source in expressions(key, value):
                    for var in reads(source):
                        self._reach(var, key)
            for source in expressions(key, value):
                for var in reads(source):
                    self.read.setdefault(var, set()).add(shown(path))
                for var, literal in default_literals(source):
                    self.defaults.setdefault(var, set()).add(plain(literal))

    def _read_descriptions(self) -> None:
        """The vars case_plan's options and the roles' options name in their descriptions, and case_plan's
        defaults."""
        for option, spec in self.plan_options.items():
            for var in VAR.findall(text_of(spec.get("description"))):
                self._reach(var, f"{PLAN_MODULE}.{option}")
                self.read.setdefault(var, set()).add(shown(CASE_PLAN))
                if "default" in spec:
                    self.defaults.setdefault(var, set()).add(plain(spec["default"]))
        for name, (file, spec) in self.options.items():
            for var in VAR.findall(text_of(spec.get("description"))):
                self._reach(var, name)
                self.read.setdefault(var, set()).add(file)

    def _reach(self, var: str, target: str) -> None:
        self.reaches.setdefault(var, set()).add(target)


def plain(value: Any) -> str:
    """A default as the doc writes it in backticks."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def documented() -> dict[str, dict[str, Any]]:
    """docs/run-vars.md's rows: var -> {line, default, reaches (backticked names), meaning}."""
    rows: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(DOC.read_text(encoding="utf-8").splitlines(), 1):
        match = ROW.match(line)
        if not match:
            continue
        var, cells = match[1], [c.strip() for c in match[2].split("|")]
        assert var not in rows, f"{shown(DOC)}:{number}: {var} is documented twice (also line {rows[var]['line']})"
        assert len(cells) == 3, f"{shown(DOC)}:{number}: {var}: want the cells default | reaches | meaning"
        default, reaches, meaning = cells
        assert meaning, f"{shown(DOC)}:{number}: {var} has no meaning"
        rows[var] = {"line": number, "default": set(TICKED.findall(default)), "reaches": set(TICKED.findall(reaches)),
                     "meaning": meaning}
    return rows


@pytest.fixture(scope="module")
def code() -> Code:
    return Code()


@pytest.fixture(scope="module")
def doc() -> dict[str, dict[str, Any]]:
    return documented()


def test_the_reader_sees_the_vars_the_plays_read(code: Code) -> None:
    """The parser finds what it must (a changed file layout would make every other check vacuous)."""
    for var in ("perfplay_cases", "perfplay_vendor", "perfplay_venv", "perfplay_nic", "perfplay_node_addr"):
        assert var in code.read, var
    assert {"perfplay_run", "perfplay_round", "perfplay_plan", "perfplay_host_is_local"} <= code.defined
    assert "perfplay_hosts" not in code.read  # a string literal (an inventory group), not a var


def test_every_var_read_is_documented(code: Code, doc: dict[str, dict[str, Any]]) -> None:
    missing = [f"{var} (read by {', '.join(sorted(files))})" for var, files in sorted(code.read.items())
               if var not in doc]
    assert not missing, f"run vars missing from {shown(DOC)}: " + "; ".join(missing)


def test_every_var_documented_is_read(code: Code, doc: dict[str, dict[str, Any]]) -> None:
    extra = [f"{var} (line {row['line']})" for var, row in sorted(doc.items()) if var not in code.read]
    assert not extra, (f"{shown(DOC)} documents vars that nothing in playbooks/, roles/ or "
                       f"{shown(CASE_PLAN)} reads: " + ", ".join(extra))


def test_each_var_names_the_options_it_reaches(code: Code, doc: dict[str, dict[str, Any]]) -> None:
    wrong = []
    for var, row in sorted(doc.items()):
        want, have = code.reaches.get(var, set()), row["reaches"]
        if want - have:
            wrong.append(f"{var} (line {row['line']}) reaches {', '.join(sorted(want - have))}, not listed")
        if have - want:
            wrong.append(f"{var} (line {row['line']}) lists {', '.join(sorted(have - want))}, which it does not reach")
    assert not wrong, f"{shown(DOC)}, column 'reaches': " + "; ".join(wrong)


def test_the_options_reached_exist(code: Code, doc: dict[str, dict[str, Any]]) -> None:
    unknown = [f"{var}: {name}" for var, row in sorted(doc.items()) for name in sorted(row["reaches"])
               if not (name.removeprefix(f"{PLAN_MODULE}.") in code.plan_options if name.startswith(f"{PLAN_MODULE}.")
                       else name in code.options)]
    assert not unknown, ("options in " + shown(DOC) + " that neither case_plan's DOCUMENTATION nor a role's "
                         "meta/argument_specs.yml declares: " + "; ".join(unknown))


def test_defaults_agree_with_the_code(code: Code, doc: dict[str, dict[str, Any]]) -> None:
    wrong = [f"{var} (line {doc[var]['line']}): the code's default {', '.join(sorted(defaults))}, the doc's "
             f"{', '.join(sorted(doc[var]['default'])) or 'none'}"
             for var, defaults in sorted(code.defaults.items()) if var in doc and not defaults <= doc[var]["default"]]
    assert not wrong, f"{shown(DOC)}, column 'default' (each of the code's defaults in backticks): " + "; ".join(wrong)


def plan_defaults() -> dict[str, Any]:
    """perfplay_<x> -> the default the plan gives it when unset; the launcher's for the rendezvous timeout, which
    the plan leaves unset (a host's environment may change it)."""
    found = {RUN_VAR_PREFIX + name: default for name, (_, default) in CHOICES.items()}
    found.update({RUN_VAR_PREFIX + name: default for name, (_, default) in SCALARS.items() if default is not None})
    found[f"{RUN_VAR_PREFIX}rdzv_timeout_s"] = defaults.RDZV_TIMEOUT_S
    return found


def states(cell: set[str], value: Any) -> bool:
    """Whether a default cell's backticked items include `value` (a number as the doc writes it: 30, 30.0)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return any(re.fullmatch(r"-?[0-9.]+", item) and float(item) == value for item in cell)
    return plain(value) in cell


def test_the_plans_defaults_are_the_docs(doc: dict[str, dict[str, Any]]) -> None:
    known = plan_defaults()
    assert {"perfplay_vendor", "perfplay_progress_interval_s", "perfplay_rdzv_timeout_s"} <= set(known)
    wrong = [f"{var}: the plan's default is {value!r}, " + (
        f"the doc's (line {doc[var]['line']}) {', '.join(sorted(doc[var]['default'])) or 'none'}" if var in doc
        else "not documented") for var, value in sorted(known.items())
        if var not in doc or not states(doc[var]["default"], value)]
    assert not wrong, f"{shown(DOC)}, column 'default': " + "; ".join(wrong)


def test_the_plans_known_vars_are_the_documented_and_the_plays_own(code: Code, doc: dict[str, dict[str, Any]]) -> None:
    """run_vars.KNOWN_RUN_VARS, the perfplay_* names the plan accepts, is this page's rows (DOCUMENTED_RUN_VARS) and
    the names the plays define themselves (PLAY_VARS): any other is refused instead of being ignored."""
    assert sorted(DOCUMENTED_RUN_VARS) == sorted(doc), f"case_runners/plan/run_vars.py vs the rows of {shown(DOC)}"
    assert sorted(PLAY_VARS) == sorted(n for n in code.defined if VAR.fullmatch(n)), "the names the plays define"
    assert KNOWN_RUN_VARS == DOCUMENTED_RUN_VARS | PLAY_VARS


def test_preflight_queries_the_names_the_plan_checks() -> None:
    """The controller's and the hosts' var names reach the plan through run_vars.QUERIED_NAMES, written in
    playbooks/preflight.yml (a play cannot import it)."""
    text = (ROOT / "playbooks" / "preflight.yml").read_text(encoding="utf-8")
    assert text.count(f"perfplay_queried_names: '{QUERIED_NAMES}'") == 1, f"preflight.yml must define {QUERIED_NAMES}"
    assert "query('ansible.builtin.varnames', perfplay_queried_names)" in text, "the controller's names"
    assert "map('select', 'match', perfplay_queried_names)" in text, "each host's names"
    assert text.count(QUERIED_NAMES) == 1, "the pattern is written once"
    pattern = re.compile(QUERIED_NAMES)
    assert all(pattern.search(n) for n in ("perfplay_vendr", "VENDOR", "FLAGPERF_LOG_PATH", "SSH_PORT"))
    assert not any(pattern.search(n) for n in ("ansible_port", "Vendor", "hostvars", "MY-VAR"))


def test_renamed_run_vars_are_no_longer_documented(code: Code, doc: dict[str, dict[str, Any]]) -> None:
    assert not set(RENAMED) & (set(doc) | set(code.read)), "a renamed run var is refused by the plan"


def inventory_vars(path: Path) -> set[str]:
    """The vars an inventory file sets: a group_vars/host_vars file's keys; in a hosts file, each host's keys and
    each group's vars (never the group names under children)."""
    data = load(path) or {}
    if {"group_vars", "host_vars"} & set(path.relative_to(ROOT).parts):
        return set(data)
    found: set[str] = set()

    def group(node: Any) -> None:
        if not isinstance(node, dict):
            return
        for host in (node.get("hosts") or {}).values():
            found.update(host or {})
        found.update(node.get("vars") or {})
        for child in (node.get("children") or {}).values():
            group(child)

    for top in data.values():
        group(top)
    return found


def test_the_inventories_set_only_documented_vars(doc: dict[str, dict[str, Any]]) -> None:
    unknown = sorted(f"{var} ({shown(path)})" for path in yaml_files("inventory") for var in inventory_vars(path)
                     if VAR.fullmatch(var) and var not in doc)
    assert "perfplay_node_addr" in inventory_vars(ROOT / "inventory" / "local" / "hosts.yml")
    assert not unknown, f"inventory vars that {shown(DOC)} does not document: " + ", ".join(unknown)


def test_run_vars_are_documented_in_one_place() -> None:
    """Other pages link to docs/run-vars.md rather than keeping a table of their own."""
    elsewhere = [f"{shown(path)}:{number}"
                 for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))] if path != DOC
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if ROW.match(line)]
    assert not elsewhere, f"run var tables outside {shown(DOC)}: " + ", ".join(elsewhere)


def test_the_local_host_test_is_defined_once() -> None:
    """Whether a host is the controller is perfplay_host_is_local (playbooks/vars/hosts.yml), which every play on
    the hosts loads; no play or role tests ansible_connection itself."""
    found = [f"{shown(path)}:{number}" for path in yaml_files("playbooks", "roles")
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if "ansible_connection" in line]
    assert found == ["playbooks/vars/hosts.yml:6"], found
    loading = [shown(path) for path in yaml_files("playbooks") for play in (load(path) or [])
               if isinstance(play, dict) and "vars/hosts.yml" in (play.get("vars_files") or [])]
    assert loading == ["playbooks/cleanup.yml", "playbooks/preflight.yml", "playbooks/run_case.yml"]
