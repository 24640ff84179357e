"""A vendor's Python plugin (runtime.py, extern/trainer_adapter.py) against its contract: the points it may define
and how the caller calls each. Checked twice: from the source on the controller, without importing it (the
controller may lack the vendor's libraries, and a bad plugin is refused before any host is touched), and on the
loaded module where the rank runs it. Stdlib only.
"""

from __future__ import annotations

import ast
import inspect
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Point:
    """A function a plugin may define: its name, the positional arguments its caller passes, what it does."""
    name: str
    params: tuple[str, ...]
    doc: str

    @property
    def call(self) -> str:
        return f"{self.name}({', '.join(self.params)})"


def contract(*points: Point) -> dict[str, Point]:
    return {p.name: p for p in points}


def last_line(exc: BaseException) -> str:
    """The last line of exc's traceback ("ModuleNotFoundError: No module named 'apex'"): what a plugin's failure
    says."""
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def _arity_problem(required: int, total: int, varargs: bool, kwonly_required: list[str], point: Point) -> str | None:
    given = len(point.params)
    if kwonly_required:
        return f"has required keyword-only parameters ({', '.join(kwonly_required)}); the caller calls {point.call}"
    if given < required or (given > total and not varargs):
        takes = f"{required}" if required == total else f"{required} to {total}"
        return f"takes {takes} positional parameter(s); the caller calls {point.call}"
    return None


def source_arity(node: ast.FunctionDef | ast.AsyncFunctionDef, point: Point) -> str | None:
    args = node.args
    positional = args.posonlyargs + args.args
    kwonly = [a.arg for a, default in zip(args.kwonlyargs, args.kw_defaults) if default is None]
    return _arity_problem(len(positional) - len(args.defaults), len(positional), args.vararg is not None, kwonly,
                          point)


def parse_source(path: Path, shown: str) -> tuple[ast.Module, None] | tuple[None, str]:
    """(the file's syntax tree, None), or (None, why it cannot be parsed: the line of a syntax error)."""
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=shown), None
    except SyntaxError as exc:
        return None, f"{shown}: line {exc.lineno}: {exc.msg}"
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{shown}: cannot be read ({exc})"


def _not_a_point(shown: str, line: int, name: str, points: Mapping[str, Point], constants: Mapping[str, str]) -> str:
    return (f"{shown}: line {line}: defines '{name}', which is not a point of the contract (known: "
            f"{', '.join([*points, *constants])}); give helpers a leading underscore")


def check_source(path: Path, points: Mapping[str, Point], constants: Mapping[str, str], shown: str
                 ) -> tuple[list[str], list[str]]:
    """(problems, the points the file defines) from the source alone. A problem: a syntax error, a public function
    that is not a point, a point the caller cannot call as the contract says."""
    parsed = parse_source(path, shown)
    if parsed[0] is None:
        return [parsed[1]], []
    tree = parsed[0]
    problems, defined = [], []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("_"):
                continue
            point = points.get(node.name)
            if point is None:
                problems.append(_not_a_point(shown, node.lineno, node.name, points, constants))
                continue
            wrong = source_arity(node, point)
            if wrong:
                problems.append(f"{shown}: line {node.lineno}: {node.name} {wrong}")
            defined.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined += [t.id for t in targets if isinstance(t, ast.Name) and (t.id in points or t.id in constants)]
    return problems, [name for name in defined if name in points or name in constants]


def check_callable(obj: object, point: Point) -> str | None:
    """Why the caller cannot call obj as point.call, or None."""
    if not callable(obj):
        return f"{point.name} is a {type(obj).__name__}, not a function"
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None  # a builtin without a signature: the call itself will tell
    kinds = inspect.Parameter
    positional = [p for p in signature.parameters.values() if p.kind in (kinds.POSITIONAL_ONLY,
                                                                        kinds.POSITIONAL_OR_KEYWORD)]
    required = sum(1 for p in positional if p.default is kinds.empty)
    varargs = any(p.kind is kinds.VAR_POSITIONAL for p in signature.parameters.values())
    kwonly = [p.name for p in signature.parameters.values()
              if p.kind is kinds.KEYWORD_ONLY and p.default is kinds.empty]
    wrong = _arity_problem(required, len(positional), varargs, kwonly, point)
    return f"{point.name} {wrong}" if wrong else None


def loaded_points(module: object, points: Mapping[str, Point], shown: str) -> tuple[dict[str, Callable], list[str]]:
    """({name: function} for the points the loaded module defines, problems)."""
    found, problems = {}, []
    for name, point in points.items():
        if hasattr(module, name):
            wrong = check_callable(getattr(module, name), point)
            if wrong:
                problems.append(f"{shown}: {wrong}")
            else:
                found[name] = getattr(module, name)
    return found, problems


def unknown_functions(module: object, points: Mapping[str, Point], constants: Mapping[str, str], shown: str
                      ) -> list[str]:
    """check_source's "not a point" on a loaded module: its own public functions that are not points."""
    name = getattr(module, "__name__", None)
    return [_not_a_point(shown, value.__code__.co_firstlineno, key, points, constants)
            for key, value in vars(module).items()
            if inspect.isfunction(value) and value.__module__ == name and not key.startswith("_")
            and key not in points]
