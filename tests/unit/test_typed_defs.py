"""Every function in the files mypy checks says what it takes and gives (pyproject.toml [tool.mypy]
disallow_untyped_defs, which `make lint` runs): read with ast, so that a test run says so too, naming each one."""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MYPY = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def untyped(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, name) of each def that leaves out a parameter's or its return's annotation, as mypy's rule counts:
    a method's self or cls needs none, an __init__ with an annotated parameter needs no return annotation."""
    methods = {id(item) for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for item in node.body
               if not any(isinstance(d, ast.Name) and d.id == "staticmethod"
                          for d in getattr(item, "decorator_list", []))}
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = node.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, (args.vararg, args.kwarg))]
        if id(node) in methods and (args.posonlyargs or args.args):
            params = params[1:]
        missing = [a.arg for a in params if a.annotation is None]
        if node.returns is None and not (node.name == "__init__" and len(missing) < len(params)):
            missing.append("return")
        if missing:
            yield node.lineno, f"{node.name} ({', '.join(missing)})"


def test_mypy_checks_that_every_function_is_annotated_and_every_one_is() -> None:
    assert MYPY["disallow_untyped_defs"] is True
    assert {"case_runners", "library", "module_utils", "playbooks", "bench", "vendor"} <= set(MYPY["files"])
    found = [f"{path.relative_to(REPO)}:{line}: {name}"
             for folder in MYPY["files"] for path in sorted((REPO / folder).rglob("*.py"))
             for line, name in untyped(ast.parse(path.read_text(encoding="utf-8"), str(path)))]
    assert found == []


def test_the_check_counts_what_mypy_counts() -> None:
    code = """
def bare(a, b: int): ...
def typed(a: int) -> None: ...
class C:
    def __init__(self, x: int): ...
    def method(self) -> int: ...
    def untyped(self, *args): ...
    @staticmethod
    def static(x) -> None: ...
"""
    assert list(untyped(ast.parse(code))) == [(2, "bare (a, return)"), (7, "untyped (args, return)"),
                                               (9, "static (x)")]
