"""The layers of case_runners, read from the source with ast (nothing is imported).

A node of the graph is a subpackage (case_runners.plan.config, case_runners.launch, ...) or a top-level module
(case_runners.cli.main, case_runners.core.files, ...); an edge is any import statement of one in another: at module level, in
a function, under TYPE_CHECKING, absolute or relative. A cycle between nodes fails the test, naming each import of
it. A lookup by name at run time (importlib.import_module of a case or a task) is dispatch, not an import: a case's
code and a task's package sit above what finds them.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
PACKAGE = "case_runners"
LAUNCHER = "case_runners.launch"  # stdlib only: the docker runtime runs it on the host, where torch may be absent
CONFIG = "case_runners.plan.config"  # the leaf of configuration: YAML, types, ranges, selections, the resolved shape
CONFIG_MAY_IMPORT = {"case_runners.core.errors", "case_runners.core.paths"}


def modules(root: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Every module of `package` under `root`: dotted name -> (file, whether it is a package's __init__)."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def imports(name: str, known: dict[str, tuple[Path, bool]], package: str) -> Iterator[tuple[str, int]]:
    """(module of `package` imported, line) for every import statement of module `name`; `from X import y` is
    X.y where that is a module, else X."""
    path, is_package = known[name]
    here = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            if target == package or target.startswith(package + "."):
                while target and target not in known:  # the longest prefix that is a module
                    target = target.rpartition(".")[0]
                if target:
                    yield target, node.lineno


def node_of(name: str, package: str) -> str:
    """The subpackage or top-level module a module belongs to (the package's own __init__ is a node too)."""
    return ".".join(name.split(".")[:2]) if name != package else package


def import_graph(root: Path, package: str) -> dict[str, dict[str, list[str]]]:
    """node -> {node it imports -> ["<file>:<line> imports <module>", ...]}, between different nodes."""
    known = modules(root, package)
    graph: dict[str, dict[str, list[str]]] = {node_of(m, package): {} for m in known}
    for name, (path, _) in known.items():
        for target, line in imports(name, known, package):
            a, b = node_of(name, package), node_of(target, package)
            if a != b:
                graph[a].setdefault(b, []).append(f"{path.relative_to(root)}:{line} imports {target}")
    return graph


def cycles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """One cycle [a, b, ..., a] through each group of nodes that import each other (strongly connected)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_in(group, graph) for group in groups]


def _cycle_in(group: list[str], graph: dict[str, dict[str, list[str]]]) -> list[str]:
    """A shortest cycle from the group's first node back to it, within the group."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w == start:
                    return paths[v] + [start]
                if w in members and w not in paths:
                    paths[w] = paths[v] + [w]
                    following.append(w)
        frontier = following
    raise AssertionError(f"no cycle in {group}")


def describe(cycle: list[str], graph: dict[str, dict[str, list[str]]]) -> str:
    lines = [" -> ".join(cycle)]
    for a, b in zip(cycle, cycle[1:]):
        lines += [f"    {evidence}" for evidence in graph[a][b]]
    return "\n".join(lines)


def closure(root: Path, package: str, start: str) -> set[str]:
    """The modules of `package` that importing the modules under `start` may load: their imports, followed,
    with the __init__ of every package on the way."""
    known = modules(root, package)
    todo = [m for m in known if m == start or m.startswith(start + ".")]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parent = name.rpartition(".")[0]
        todo += [parent] if parent else []
        todo += [target for target, _ in imports(name, known, package)]
    return seen


def external_imports(path: Path) -> set[str]:
    """The top-level names of the modules a file imports from outside its package (absolute imports)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_no_import_cycle_between_the_subpackages_of_case_runners():
    graph = import_graph(PROJECT, PACKAGE)
    assert {"case_runners.launch", "case_runners.rank", "case_runners.plan.config", "case_runners.cli.main"} <= set(graph)
    found = cycles(graph)
    assert not found, "import cycles between case_runners' subpackages:\n" + \
        "\n".join(describe(c, graph) for c in found)


def test_the_config_leaf_imports_nothing_above_it():
    graph = import_graph(PROJECT, PACKAGE)
    assert set(graph[CONFIG]) <= CONFIG_MAY_IMPORT, graph[CONFIG]
    assert all(set(graph[m]) <= CONFIG_MAY_IMPORT - {m} for m in CONFIG_MAY_IMPORT), \
        "errors and paths import nothing of case_runners but each other"


def test_the_launcher_is_stdlib_only():
    known = modules(PROJECT, PACKAGE)
    loaded = closure(PROJECT, PACKAGE, LAUNCHER)
    assert "case_runners.launch.node" in loaded and "case_runners.rank.env" in loaded
    outside = {name: sorted(external_imports(known[name][0]) - set(sys.stdlib_module_names) - {PACKAGE})
               for name in sorted(loaded)}
    assert not {k: v for k, v in outside.items() if v}, "the launcher's imports that are not the standard library"


def test_a_planted_cycle_is_found_and_named(tmp_path):
    """Relative and function-level imports, `from . import x`, and a top-level module as a node of its own."""
    files = {
        "pkg/__init__.py": "",
        "pkg/tool.py": "from pkg.a import x\n",
        "pkg/a/__init__.py": "",
        "pkg/a/x.py": "from ..b import y\n",
        "pkg/b/__init__.py": "from . import y\n",
        "pkg/b/y.py": "import os\n\ndef later():\n    from .. import tool\n    return tool, os\n",
        "pkg/c/__init__.py": "",
        "pkg/c/z.py": "import pkg.a.x\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph(tmp_path, "pkg")
    assert graph == {"pkg": {}, "pkg.tool": {"pkg.a": ["pkg/tool.py:1 imports pkg.a.x"]},
                     "pkg.a": {"pkg.b": ["pkg/a/x.py:1 imports pkg.b.y"]},
                     "pkg.b": {"pkg.tool": ["pkg/b/y.py:4 imports pkg.tool"]},
                     "pkg.c": {"pkg.a": ["pkg/c/z.py:1 imports pkg.a.x"]}}
    (cycle,) = cycles(graph)
    assert cycle == ["pkg.a", "pkg.b", "pkg.tool", "pkg.a"]
    assert describe(cycle, graph).splitlines() == [
        "pkg.a -> pkg.b -> pkg.tool -> pkg.a", "    pkg/a/x.py:1 imports pkg.b.y", "    pkg/b/y.py:4 imports pkg.tool",
        "    pkg/tool.py:1 imports pkg.a.x"]

    (tmp_path / "pkg/b/y.py").write_text("import os\n")  # the cycle broken
    assert cycles(import_graph(tmp_path, "pkg")) == []
