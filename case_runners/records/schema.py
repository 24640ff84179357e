"""Typed, versioned JSON documents: a dataclass per kind of document, checked against its own annotations.

A document class is a keyword-only dataclass whose fields are its keys, in the order they are written. The types a
field may have: str, int, float (an int is one; a bool is neither), bool, None, Any (any JSON), list[X],
dict[str, X], unions of these, and other document classes (nested objects). A field whose type includes `Absent`
may be missing from the document (its default is ABSENT, and to_json leaves it out); every other field must be
there. `choices(...)` restricts a field to some values, `check(fn)` adds a check of its own.

A top-level document names its kind and version in `schema` (SCHEMA, `perfplay.<kind>/<version>`): from_json
refuses another. Every problem is named, with its key and what was expected: RecordError.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar, TypeVar, Union

from case_runners.core.errors import PerfplayError

SCHEMA_KEY = "schema"
MAX_BYTES = 64 << 20  # no perfplay document comes near this; a bigger file is not one
_TOP = "(document)"


class Absent(enum.Enum):
    """The value of a field whose key the document does not have."""
    ABSENT = "absent"

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = Absent.ABSENT
Problem = str  # "key 'metrics.p_core': expected a number or null, got 'fast'"
Check = Callable[[Any, str], list[Problem]]  # (value, key) -> problems


class RecordError(PerfplayError):
    """A document that is not what its schema says: `source` (the file), and every problem, naming its key."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source, self.problems = source, problems
        super().__init__(f"{source}: {'; '.join(problems)}")


def choices(*allowed: Any) -> dict[str, Any]:
    """Field metadata: the value must be one of `allowed`."""
    return {"choices": tuple(allowed)}


def check(fn: Check) -> dict[str, Any]:
    """Field metadata: fn(value, key) returns the value's problems, after its type was checked."""
    return {"check": fn}


def key_name(where: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def object_entries(items: list[Any], where: str, found: list[Problem]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key name, entry) of each entry of a list that is an object; a problem in found for each that is not."""
    for index, entry in enumerate(items):
        at = key_name(where, index)
        if isinstance(entry, dict):
            yield at, entry
        else:
            found.append(f"key '{at}': expected an object, got {described(entry)}")


def described(value: Any) -> str:
    """A value as a message shows it: short, and typed (a string quoted, a list by its length)."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    text = json.dumps(value) if isinstance(value, (str, bool)) or value is None else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


D = TypeVar("D", bound="Document")


@dataclasses.dataclass(kw_only=True)
class Document:
    """The base of every document class (and of the objects nested in them)."""

    SCHEMA: ClassVar[str | None] = None  # perfplay.<kind>/<version>, for a top-level document

    @classmethod
    def variant(cls, doc: dict[str, Any]) -> type[Document]:
        """The class a document of this kind is (a kind with variants under one schema picks one)."""
        return cls

    @classmethod
    def more_problems(cls, doc: dict[str, Any], where: str) -> list[Problem]:
        """Problems no single field's type can tell (keys that depend on another key's value): [] by default."""
        return []

    @classmethod
    def problems(cls, doc: Any, where: str = "") -> list[Problem]:
        """What is wrong with `doc` as this kind of document: [] when nothing."""
        found: list[Problem] = []
        _decode_document(cls, doc, where, found)
        return found

    @classmethod
    def from_json(cls: type[D], doc: Any, source: str = _TOP) -> D:
        """The document `doc` (parsed JSON) as an instance; RecordError naming source and every problem."""
        found: list[Problem] = []
        value = _decode_document(cls, doc, "", found)
        if found:
            raise RecordError(source, found)
        return value

    @classmethod
    def load(cls: type[D], path: Path | str) -> D:
        """The document in the file at `path`; RecordError when it cannot be read, is not JSON or not this kind."""
        return cls.from_json(read_json(path), str(path))

    def to_json(self) -> dict[str, Any]:
        """The document as JSON values, its keys in their order, absent ones left out."""
        out: dict[str, Any] = {SCHEMA_KEY: self.SCHEMA} if self.SCHEMA else {}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if value is not ABSENT:
                out[item.name] = _encode(value)
        return out


def read_json(path: Path | str) -> Any:
    """The JSON value in the file at `path`; RecordError naming the file when it cannot be read or parsed."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise RecordError(str(path), [f"cannot be read: {exc.strerror or exc}"]) from None
    if len(data) > MAX_BYTES:
        raise RecordError(str(path), [f"is larger than {MAX_BYTES} bytes: not a perfplay document"])
    try:
        return json.loads(data)
    except ValueError as exc:  # UnicodeDecodeError included
        raise RecordError(str(path), [f"is not JSON ({exc})" if data.strip() else "is empty"]) from None


def field_names(cls: type[Document]) -> tuple[str, ...]:
    """A document class's keys, in their order (schema aside)."""
    return tuple(f.name for f in dataclasses.fields(cls))


def schema_problems(doc: Any, expected: str) -> list[Problem]:
    """Whether a parsed document names the schema `expected` (kind and version)."""
    if not isinstance(doc, dict):
        return [f"expected a JSON object, got {described(doc)}"]
    if SCHEMA_KEY not in doc:
        return [f"key '{SCHEMA_KEY}': missing (expected {json.dumps(expected)})"]
    found = doc[SCHEMA_KEY]
    if found == expected:
        return []
    if isinstance(found, str) and found.rpartition("/")[0] == expected.rpartition("/")[0]:
        return [_other_schema(found, [expected])]
    return [f"key '{SCHEMA_KEY}': expected {json.dumps(expected)}, got {described(found)}"]


def _other_schema(found: Any, known: Iterable[str]) -> Problem:
    """The problem of a document whose schema is `found`, not one of `known`: another version of a known kind
    (perfplay.<kind>/<version>), or another kind."""
    known = sorted(known)
    kind = found.rpartition("/")[0] if isinstance(found, str) else None
    same_kind = [name for name in known if kind and name.rpartition("/")[0] == kind]
    if same_kind:
        return (f"key '{SCHEMA_KEY}': {described(found)} is a version this perfplay does not read "
                f"(it reads {json.dumps(same_kind[0])})")
    return f"key '{SCHEMA_KEY}': unknown schema {described(found)} (known: {', '.join(known)})"


def value_problems(tp: Any, value: Any, where: str) -> list[Problem]:
    """What is wrong with `value` as a value of type `tp` (a field's type) at key `where`: [] when nothing."""
    found: list[Problem] = []
    _decode(tp, value, where, found)
    return found


# -- decoding ---------------------------------------------------------------------------------------------------------

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _members(tp: Any) -> tuple[Any, ...]:
    """The members of a union type (X | Y, Optional[X]); (tp,) for any other."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        return typing.get_args(tp)
    return (tp,)


def _may_be_absent(tp: Any) -> bool:
    return Absent in _members(tp)


def _decode_document(cls: type[D], doc: Any, where: str, found: list[Problem]) -> Any:
    if not isinstance(doc, dict):
        found.append(f"{_at(where)}expected an object, got {described(doc)}")
        return None
    kind = cls.variant(doc)
    wrong_kind = schema_problems(doc, kind.SCHEMA) if kind.SCHEMA else []
    if wrong_kind:  # another kind's document, or another version's: its keys are not this one's to judge
        found += wrong_kind
        return None
    hints = _hints(kind)
    fields = dataclasses.fields(kind)
    known = {f.name for f in fields} | ({SCHEMA_KEY} if kind.SCHEMA else set())
    unknown = [k for k in doc if k not in known]
    for key in unknown:
        found.append(f"key '{key_name(where, key)}': unknown (allowed: {', '.join(sorted(known))})")
    values: dict[str, Any] = {}
    for item in fields:
        tp, key = hints[item.name], key_name(where, item.name)
        if item.name not in doc:
            if _may_be_absent(tp):
                values[item.name] = ABSENT
            else:
                found.append(f"key '{key}': missing (expected {_expected(tp)})")
                values[item.name] = None
            continue
        before = len(found)
        values[item.name] = value = _decode(tp, doc[item.name], key, found)
        if len(found) == before:
            allowed = item.metadata.get("choices")
            if allowed is not None and value not in allowed:
                found.append(f"key '{key}': expected one of {', '.join(map(str, allowed))}, got {described(value)}")
            extra = item.metadata.get("check")
            if extra is not None:
                found += extra(value, key)
    found += kind.more_problems(doc, where)
    return kind(**values)


def _at(where: str) -> str:
    return f"key '{where}': " if where else ""


def _decode(tp: Any, value: Any, where: str, found: list[Problem]) -> Any:
    members = [m for m in _members(tp) if m is not Absent]
    if len(members) > 1:
        for member in members:
            trial: list[Problem] = []
            decoded = _decode(member, value, where, trial)
            if not trial:
                return decoded
        documents = [m for m in members if isinstance(m, type) and issubclass(m, Document)]
        if len(documents) == 1 and isinstance(value, dict):  # an object: its own problems say more
            return _decode(documents[0], value, where, found)
        found.append(f"key '{where}': expected {_expected(tp)}, got {described(value)}")
        return value
    (tp,) = members
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if isinstance(tp, type) and issubclass(tp, Document):
        return _decode_document(tp, value, where, found)
    if origin is list:
        if not isinstance(value, list):
            found.append(f"key '{where}': expected {_expected(tp)}, got {described(value)}")
            return value
        (item,) = typing.get_args(tp)
        return [_decode(item, v, key_name(where, i), found) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            found.append(f"key '{where}': expected {_expected(tp)}, got {described(value)}")
            return value
        _, item = typing.get_args(tp)
        return {k: _decode(item, v, key_name(where, k), found) for k, v in value.items()}
    if not _scalar_ok(tp, value):
        found.append(f"key '{where}': expected {_expected(tp)}, got {described(value)}")
    return value


def _scalar_ok(tp: Any, value: Any) -> bool:
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    raise TypeError(f"unsupported type in a document class: {tp!r}")


_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", type(None): "null"}


def _expected(tp: Any) -> str:
    members = [m for m in _members(tp) if m is not Absent]
    if len(members) > 1:
        return " or ".join(_expected(m) for m in members)
    (tp,) = members
    origin = typing.get_origin(tp)
    if tp is Any:
        return "any value"
    if isinstance(tp, type) and issubclass(tp, Document):
        return "an object"
    if origin is list:
        return f"a list of {_plural(typing.get_args(tp)[0])}"
    if origin is dict:
        return f"an object of {_plural(typing.get_args(tp)[1])}"
    return _NAMES.get(tp, repr(tp))


def _plural(tp: Any) -> str:
    text = _expected(tp)
    for article in ("an ", "a "):
        if text.startswith(article):
            return text[len(article):] + "s"
    return text


def _encode(value: Any) -> Any:
    if isinstance(value, Document):
        return value.to_json()
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


def problems_of(kinds: Iterable[type[Document]], doc: Any) -> tuple[type[Document] | None, list[Problem]]:
    """The kind among `kinds` whose schema `doc` names, and the document's problems as one; (None, [why]) when it
    names none of theirs."""
    registry = {k.SCHEMA: k for k in kinds if k.SCHEMA}
    if not isinstance(doc, dict):
        return None, [f"expected a JSON object, got {described(doc)}"]
    if SCHEMA_KEY not in doc:
        return None, [f"key '{SCHEMA_KEY}': missing: not a perfplay document (known: {', '.join(sorted(registry))})"]
    kind = registry.get(doc[SCHEMA_KEY])
    if kind is None:
        return None, [_other_schema(doc[SCHEMA_KEY], registry)]
    return kind, kind.problems(doc)
