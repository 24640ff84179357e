"""Read a FlagPerf Python config without running it.

Only module-level assignments are read (`x = ...`, `x: int = ...`, `x += ...`), and only values built from
literals: numbers, strings, booleans, None; arithmetic on them; names assigned earlier in the file (FlagPerf writes
`eval_batch_size = train_batch_size`); and list, tuple, set and dict displays of these. `from NAME import *` (or
`import a, b` from it) reads the sibling file NAME.py the same way (`from config_common import *`), and its own
sibling imports, to any depth (a cycle is reported); a sibling that is not there is reported missing. Anything else
(a call, an attribute, another import, a comprehension, a statement that is not an assignment) is skipped and
reported with its file and line.
"""

from __future__ import annotations

import ast
import importlib.util
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_BYTES = 1 << 20  # of one config file
MAX_INT_BITS = 4096  # arithmetic results beyond this are refused (a config's numbers are not this big)
MAX_LENGTH = 100_000  # items or characters of a repeated sequence

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}


class Unsupported(Exception):
    """A value the reader does not evaluate; the message says what it is."""


@dataclass
class Skipped:
    file: str
    line: int
    what: str  # the statement, shortened
    why: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: `{self.what}` skipped: {self.why}"


@dataclass
class PyConfig:
    """The names a config assigns, in the order first assigned, with the file:line of their last assignment."""
    values: dict[str, Any] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    siblings: list[str] = field(default_factory=list)  # the sibling files read through imports, at any depth


def read_config(path: Path, shown: str | None = None) -> PyConfig:
    """The config at `path` (OSError, SyntaxError, UnicodeDecodeError when it cannot be read as Python);
    `shown` is how messages name it (default: the path)."""
    config = PyConfig()
    _read_into(config, path, shown or str(path), seen=set())
    return config


def _short(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 72 else text[:69] + "..."


def _read_into(config: PyConfig, path: Path, shown: str, seen: set[Path]) -> None:
    """Read `path` into `config`, following sibling imports (`seen`: the files being read, against cycles)."""
    seen = seen | {path.resolve()}
    data = path.read_bytes()
    if len(data) > MAX_BYTES:
        raise ValueError(f"{shown}: larger than {MAX_BYTES} bytes")
    tree = ast.parse(data, filename=shown)
    local: dict[str, Any] = {}  # the names of this file (an imported file's own namespace)
    for node in tree.body:
        try:
            _statement(config, node, path, shown, seen, local)
        except Unsupported as exc:
            config.skipped.append(Skipped(shown, node.lineno, _short(node), str(exc)))


def _assign(config: PyConfig, local: dict[str, Any], name: str, value: Any, where: str) -> None:
    local[name] = value
    config.values[name] = value
    config.where[name] = where


def _statement(config: PyConfig, node: ast.stmt, path: Path, shown: str, seen: set[Path],
               local: dict[str, Any]) -> None:
    where = f"{shown}:{node.lineno}"
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return  # a docstring
    if isinstance(node, ast.Assign):
        value = _value(node.value, local)
        for target in node.targets:
            if not isinstance(target, ast.Name):
                raise Unsupported("only assignments to plain names are read")
        for target in node.targets:
            assert isinstance(target, ast.Name)
            _assign(config, local, target.id, value, where)
    elif isinstance(node, ast.AnnAssign):
        if not isinstance(node.target, ast.Name):
            raise Unsupported("only assignments to plain names are read")
        if node.value is not None:  # `x: int` alone assigns nothing
            _assign(config, local, node.target.id, _value(node.value, local), where)
    elif isinstance(node, ast.AugAssign):
        if not isinstance(node.target, ast.Name) or node.target.id not in local:
            raise Unsupported("updates a name not assigned earlier")
        _assign(config, local, node.target.id,
                _binary(node.op, local[node.target.id], _value(node.value, local)), where)
    elif isinstance(node, ast.ImportFrom):
        _import(config, node, path, shown, seen, local)
    elif isinstance(node, ast.Import):
        raise Unsupported("an import of another module is not followed")
    else:
        raise Unsupported(f"a {type(node).__name__} statement is not read (configs are read, never run)")


def _import(config: PyConfig, node: ast.ImportFrom, path: Path, shown: str, seen: set[Path],
            local: dict[str, Any]) -> None:
    """`from sibling import *` or `from sibling import a, b as c`: the sibling file's names, read the same way."""
    module = node.module or ""
    sibling = path.parent / f"{module}.py"
    sibling_shown = str(Path(shown).parent / sibling.name)
    if not node.level and module and "." not in module and not sibling.is_file() and _sibling_name(module, node):
        raise Unsupported(f"the sibling file {sibling_shown} is missing")
    if node.level or not module or "." in module or not sibling.is_file():
        raise Unsupported(f"an import of another module ({module or '.'}) is not followed; only a sibling file "
                          f"(from config_common import *) is")
    if sibling.resolve() in seen:
        raise Unsupported(f"{module}.py imports itself in a cycle")
    inner = PyConfig()
    try:
        _read_into(inner, sibling, sibling_shown, seen)  # its own sibling imports too, to any depth
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError) as exc:
        raise Unsupported(f"{sibling_shown} cannot be read ({exc})") from None
    config.skipped += inner.skipped
    config.siblings += [name for name in [sibling_shown, *inner.siblings] if name not in config.siblings]
    star = any(alias.name == "*" for alias in node.names)
    names = {n: n for n in inner.values} if star else {a.name: a.asname or a.name for a in node.names}
    for name, as_name in names.items():
        if name not in inner.values:
            config.skipped.append(Skipped(shown, node.lineno, _short(node), f"{sibling_shown} assigns no {name}"))
            continue
        _assign(config, local, as_name, inner.values[name], inner.where[name])


def _sibling_name(module: str, node: ast.ImportFrom) -> bool:
    """Whether a module that is not in the folder is meant as a sibling file: FlagPerf's config_* names, or a
    star import of a name Python cannot find (found without importing it)."""
    if module.startswith("config"):
        return True
    return any(alias.name == "*" for alias in node.names) and importlib.util.find_spec(module) is None


def _value(node: ast.expr, names: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (str, int, float, bool)) or node.value is None:
            return node.value
        raise Unsupported(f"a {type(node.value).__name__} literal is not read")
    if isinstance(node, ast.Name):
        if node.id in names:
            return names[node.id]
        if node.id in ("True", "False", "None"):  # not Constants only in very old Pythons
            return {"True": True, "False": False, "None": None}[node.id]
        raise Unsupported(f"uses {node.id}, which is not assigned earlier")
    if isinstance(node, ast.BinOp):
        return _binary(node.op, _value(node.left, names), _value(node.right, names))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        operand = _value(node.operand, names)
        if not isinstance(operand, (int, float)):
            raise Unsupported(f"{type(node.op).__name__} of a {type(operand).__name__}")
        return _UNARY[type(node.op)](operand)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            raise Unsupported("a starred item is not read")
        items = [_value(e, names) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items  # a set: a list (YAML has no sets)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise Unsupported("a ** item is not read")
        result = {}
        for key, value in zip(node.keys, node.values):
            k = _value(key, names)  # type: ignore[arg-type]  # no None key (checked above)
            if isinstance(k, (list, dict)):
                raise Unsupported("a dict key must be a literal")
            result[k] = _value(value, names)
        return result
    kinds = {ast.Call: "a call", ast.Attribute: "an attribute", ast.Subscript: "a subscript",
             ast.JoinedStr: "an f-string", ast.ListComp: "a comprehension", ast.DictComp: "a comprehension",
             ast.SetComp: "a comprehension", ast.GeneratorExp: "a comprehension", ast.Lambda: "a lambda"}
    what = kinds.get(type(node), f"a {type(node).__name__} expression")
    raise Unsupported(f"{what} is not evaluated (configs are read, never run)")


def _binary(op: ast.operator, left: Any, right: Any) -> Any:
    function = _BINARY.get(type(op))
    if function is None:
        raise Unsupported(f"the operator {type(op).__name__} is not evaluated")
    numbers = all(isinstance(x, (int, float)) for x in (left, right))
    if type(op) is ast.Pow and numbers:
        if isinstance(left, int) and isinstance(right, int) and right > 0 \
                and max(left.bit_length(), 1) * right > MAX_INT_BITS:
            raise Unsupported("a number that large is not read")
    elif type(op) is ast.Mult and not numbers:
        sequence, count = (left, right) if isinstance(right, int) else (right, left)
        if not isinstance(count, int) or not isinstance(sequence, (str, list, tuple)) \
                or len(sequence) * max(count, 0) > MAX_LENGTH:
            raise Unsupported("only a short string or list may be repeated")
    elif not numbers and not (type(op) is ast.Add and type(left) is type(right)
                              and isinstance(left, (str, list, tuple))):
        raise Unsupported(f"{type(op).__name__} of a {type(left).__name__} and a {type(right).__name__}")
    try:
        result = function(left, right)
    except (ArithmeticError, ValueError, TypeError) as exc:
        raise Unsupported(f"the arithmetic fails ({exc})") from None
    if isinstance(result, int) and result.bit_length() > MAX_INT_BITS:
        raise Unsupported("a number that large is not read")
    return result
