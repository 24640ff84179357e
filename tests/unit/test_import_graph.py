"""The layers of case_runners, read from the source with ast (nothing is imported).

A node of the graph is a room of case_runners' map (its __init__ docstring: case_runners.core,
case_runners.plan.config, ...): a module belongs to the deepest room that holds it. An edge is any import statement
of one in another: at module level, in a function, under TYPE_CHECKING, absolute or relative. A cycle between nodes
fails the test, naming each import of it; so does an import that goes up or sideways on the map's floors. A lookup
by name at run time (importlib.import_module of a case or a task) is dispatch, not an import: a case's code and a
task's package sit above what finds them.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
PACKAGE = "case_runners"
LAUNCHER = "case_runners.launch"  # stdlib only: the docker runtime runs it on the host, where torch may be absent
# The node's end and cleanup (which stop containers too) and the docker runtime use the docker SDK: they are not the
# launcher of a node's ranks, which runs the same on a host and inside a container.
# The launch room's commands (launch/command.py) are the CLI's side of it.
NOT_THE_LAUNCHER = ("case_runners.launch.container", "case_runners.launch.cleanup", "case_runners.launch.node_end",
                    "case_runners.launch.command")
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


MAP_LINE = re.compile(r"^\s*(\d+)\s+([a-z_/]+)/\s", re.M)


def floors(root: Path, package: str) -> dict[str, int]:
    """The map in the package's __init__ docstring: room (dotted) -> floor."""
    doc = ast.get_docstring(ast.parse((root / package / "__init__.py").read_text(encoding="utf-8"))) or ""
    return {f"{package}.{room.replace('/', '.')}": int(floor) for floor, room in MAP_LINE.findall(doc)}


def node_of(name: str, package: str, rooms: Iterable[str] = ()) -> str:
    """The deepest room of the map that holds a module; without a map (or outside it), the subpackage or top-level
    module (the package's own __init__ is a node too)."""
    held = [room for room in rooms if name == room or name.startswith(room + ".")]
    if held:
        return max(held, key=len)
    return ".".join(name.split(".")[:2]) if name != package else package


def import_graph(root: Path, package: str, rooms: Iterable[str] = ()) -> dict[str, dict[str, list[str]]]:
    """node -> {node it imports -> ["<file>:<line> imports <module>", ...]}, between different nodes."""
    known, rooms = modules(root, package), list(rooms)
    graph: dict[str, dict[str, list[str]]] = {node_of(m, package, rooms): {} for m in known}
    for name, (path, _) in known.items():
        for target, line in imports(name, known, package):
            a, b = node_of(name, package, rooms), node_of(target, package, rooms)
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


def closure(root: Path, package: str, start: str, leave_out: tuple[str, ...] = ()) -> set[str]:
    """The modules of `package` that importing the modules under `start` (but not under `leave_out`) may load: their
    imports, followed, with the __init__ of every package on the way."""
    known = modules(root, package)
    todo = [m for m in known if (m == start or m.startswith(start + "."))
            and not any(m == o or m.startswith(o + ".") for o in leave_out)]
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


def test_no_import_cycle_between_the_rooms_of_case_runners():
    graph = import_graph(PROJECT, PACKAGE, floors(PROJECT, PACKAGE))
    assert {"case_runners.launch", "case_runners.rank", "case_runners.plan", "case_runners.cli"} <= set(graph)
    found = cycles(graph)
    assert not found, "import cycles between case_runners' subpackages:\n" + \
        "\n".join(describe(c, graph) for c in found)


def floor_problems(root: Path, package: str) -> list[str]:
    """Each import that goes up or sideways on the map, and each room (or loose module) that is not on it."""
    rooms = floors(root, package)
    graph = import_graph(root, package, rooms)
    ends = {package: 0, f"{package}.__main__": max(rooms.values(), default=0) + 1}  # __version__; the entry point
    problems = [f"{node} is on no floor of {package}/__init__.py's map" for node in sorted(graph)
                if node not in rooms and node not in ends]
    level = {**rooms, **ends}
    for a, targets in sorted(graph.items()):
        for b, evidence in sorted(targets.items()):
            if a in level and b in level and level[b] >= level[a]:
                problems += [f"{a} (floor {level[a]}) imports {b} (floor {level[b]}): {e}" for e in evidence]
    return problems


def test_every_import_goes_down_the_floors_of_the_map():
    rooms = floors(PROJECT, PACKAGE)
    assert len({r.split(".")[1] for r in rooms}) <= 13, "about a dozen rooms at the top"
    top = {p.name for p in (PROJECT / PACKAGE).iterdir() if p.name != "__pycache__"} - {"__init__.py", "__main__.py"}
    assert top == {r.split(".")[1] for r in rooms}, "every entry at the top of case_runners is a room of the map"
    problems = floor_problems(PROJECT, PACKAGE)
    assert not problems, "\n".join(problems)


def test_an_import_up_the_floors_and_a_room_off_the_map_are_named(tmp_path):
    files = {"pkg/__init__.py": '"""Map:\n\n  1  low/   bottom\n  2  high/  top\n  2  high/sub/  a sub-room\n"""\n',
             "pkg/low/__init__.py": "", "pkg/low/a.py": "from pkg.high import b\n",
             "pkg/high/__init__.py": "", "pkg/high/b.py": "from pkg.low import a\n",
             "pkg/high/sub/__init__.py": "", "pkg/high/sub/c.py": "from pkg.high import b\n",
             "pkg/stray.py": ""}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert floors(tmp_path, "pkg") == {"pkg.low": 1, "pkg.high": 2, "pkg.high.sub": 2}
    assert floor_problems(tmp_path, "pkg") == [
        "pkg.stray is on no floor of pkg/__init__.py's map",
        "pkg.high.sub (floor 2) imports pkg.high (floor 2): pkg/high/sub/c.py:1 imports pkg.high.b",
        "pkg.low (floor 1) imports pkg.high (floor 2): pkg/low/a.py:1 imports pkg.high.b"]
    (tmp_path / "pkg/low/a.py").write_text("")
    (tmp_path / "pkg/high/sub/c.py").write_text("from pkg.low import a\n")
    (tmp_path / "pkg/stray.py").unlink()
    assert floor_problems(tmp_path, "pkg") == []


def test_the_config_leaf_imports_nothing_above_it():
    graph = import_graph(PROJECT, PACKAGE, floors(PROJECT, PACKAGE))
    assert set(graph[CONFIG]) <= {"case_runners.core"}, graph[CONFIG]
    known = modules(PROJECT, PACKAGE)
    for name in known:
        if name.startswith(CONFIG + ".") or name in CONFIG_MAY_IMPORT:
            outside = {t for t, _ in imports(name, known, PACKAGE) if not t.startswith(CONFIG)} - {name}
            assert outside <= CONFIG_MAY_IMPORT, f"{name} imports {sorted(outside)}: config's leaf imports only " \
                "errors and paths, and they nothing of case_runners but each other"


def test_the_records_keep_data_and_the_views_write_their_text():
    """The summary's rows are built in records/ and written as tables and Markdown in views/summary: no module of
    the records room writes a text table (core/text.py text_columns)."""
    known = modules(PROJECT, PACKAGE)
    writers = [name for name, (path, _) in known.items()
               if name.startswith("case_runners.records.") and "text_columns" in path.read_text(encoding="utf-8")]
    assert writers == [], "text tables written in the records room"


def test_the_launcher_is_stdlib_only():
    known = modules(PROJECT, PACKAGE)
    loaded = closure(PROJECT, PACKAGE, LAUNCHER, NOT_THE_LAUNCHER)
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


def test_the_docs_show_the_same_map():
    """docs/development.md's "Where things live" lists each room of the map on its floor, and no other."""
    text = (PROJECT / "docs/development.md").read_text(encoding="utf-8").split("## Where things live", 1)[1]
    shown = re.findall(r"^\| (\d+) \| `([a-z_/]+)/` \|", text.split("\n## ", 1)[0], re.M)
    assert {f"{PACKAGE}.{room.replace('/', '.')}": int(floor) for floor, room in shown} == floors(PROJECT, PACKAGE)
