"""The range of every param, declared where the param is declared, and checked on every value it takes.

A case's own param is written with its range: `embedding_size: {default: 64, min: 1, max: 4096}`; a param many
cases share is written with its default alone, its range being in shared_params.py. A param with no range is an
error when the case is loaded, and so is a default out of its own range.

Spec keys: `default`; `type` (bool, int, float, str, list: the default's type, required when it is null);
`min`/`max` (inclusive) and `above`/`below` (exclusive) bounds, a lower and an upper one required for numbers,
which must also be finite; `choices`; `nullable` (null accepted; false unless given); `min_length`/`max_length`
for strings and lists (a string needs `max_length` or `choices`); `items`, the spec of a list's items.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from case_runners.core.errors import ConfigError, raise_all, shown
from case_runners.plan.config.shared_params import SHARED_FILE, SHARED_PARAMS
from case_runners.plan.config.types import BOOL_WORDS, coerce

TYPES: dict[str, type] = {"bool": bool, "int": int, "float": float, "str": str, "list": list}
SPEC_KEYS = ("default", "type", "min", "max", "above", "below", "choices", "nullable", "min_length", "max_length",
             "items")


@dataclass(frozen=True)
class Constraint:
    """A param's type and range; check() returns the value converted to the type, or raises ConfigError."""

    kind: type
    min: float | None = None
    max: float | None = None
    above: float | None = None
    below: float | None = None
    choices: tuple[Any, ...] | None = None
    nullable: bool = False
    min_length: int | None = None
    max_length: int | None = None
    items: Constraint | None = None

    def check(self, value: Any, *, key: str, file: str, name: str | None = None) -> Any:
        name = name or key.rsplit(".", 1)[-1]
        if value is None:
            if self.nullable:
                return None
            raise ConfigError("null is not allowed", key=key, file=file, allowed=[self.describe(name)])
        value = coerce(value, self.kind, key=key, file=file)
        if self.kind is float and not math.isfinite(value):
            raise ConfigError(f"{shown(value)} is not a finite number", key=key, file=file,
                              allowed=[self.describe(name)])
        if self.kind in (int, float) and not self._in_range(value):
            raise ConfigError(f"{shown(value)} is out of range", key=key, file=file, allowed=[self.describe(name)])
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"{shown(value)} is not one of the allowed values", key=key, file=file,
                              allowed=[*self.choices, *(["null"] if self.nullable else [])])
        if self.kind in (str, list):
            low, high = self.min_length or 0, math.inf if self.max_length is None else self.max_length
            if not low <= len(value) <= high:
                raise ConfigError(f"{shown(value)} has length {len(value)}", key=key, file=file,
                                  allowed=[self.describe(name)])
        if self.items is not None:
            return [self.items.check(item, key=f"{key}[{i}]", file=file, name=f"{name}[i]")
                    for i, item in enumerate(value)]
        return value

    def _in_range(self, value: float) -> bool:
        return ((self.min is None or value >= self.min) and (self.max is None or value <= self.max)
                and (self.above is None or value > self.above) and (self.below is None or value < self.below))

    def describe(self, name: str) -> str:
        """The range in words for messages: "1 <= batch_size <= 65536", "0 < lr <= 10"."""
        if self.choices is not None:
            text = "one of " + ", ".join(map(str, self.choices))
        elif self.kind in (int, float):
            low = f"{_num(self.min)} <= " if self.min is not None else f"{_num(self.above)} < "
            high = f" <= {_num(self.max)}" if self.max is not None else f" < {_num(self.below)}"
            text = f"{low}{name}{high}"
        elif self.kind is bool:
            text = f"a boolean: {BOOL_WORDS}"
        else:
            what, noun = ("a string", "characters") if self.kind is str else ("a list", "items")
            count = f"{self.min_length} to" if self.min_length else "at most"
            text = f"{what} of {count} {self.max_length} {noun}"
            if self.items is not None:
                text += f", each {self.items.describe(f'{name}[i]')}"
        return text + (", or null" if self.nullable else "")


Bad = Callable[[str], ConfigError]  # a spec's error, naming its key and file


def make_constraint(spec: Mapping[str, Any], like: Any, *, key: str, file: str) -> Constraint:
    """The Constraint of a spec (without `default`) for a param whose default is `like`; ConfigError if the spec
    is incomplete or inconsistent (a developer's error)."""
    def bad(message: str) -> ConfigError:
        return ConfigError(f"bad range declaration: {message}", key=key, file=file, allowed=SPEC_KEYS)

    if not isinstance(spec, Mapping):
        raise bad(f"expected a mapping, got {shown(spec)}")
    kind = _spec_kind(spec, like, bad)
    nullable = spec.get("nullable", False)
    if not isinstance(nullable, bool):
        raise bad("nullable must be true or false")
    bounds = _spec_bounds(spec, kind, bad)
    choices = spec.get("choices")
    if choices is not None:
        if not isinstance(choices, list) or not choices:
            raise bad("choices must be a non-empty list")
        choices = tuple(coerce(c, kind, key=key, file=file) for c in choices)
    lengths = _spec_lengths(spec, kind, bad)
    items = None
    if "items" in spec:
        if kind is not list:
            raise bad("items is for lists")
        items = make_constraint(spec["items"], like[0] if like else None, key=f"{key}.items", file=file)
    _check_complete(kind, bounds, lengths, choices is not None, items is not None, bad)
    return Constraint(kind, **bounds, choices=choices, nullable=nullable, **lengths, items=items)


def _spec_kind(spec: Mapping[str, Any], like: Any, bad: Bad) -> type:
    """A spec's value type: its `type`, else its default's; its keys checked first."""
    unknown = sorted(set(spec) - set(SPEC_KEYS) - {"default"})
    if unknown:
        raise bad(f"unknown key '{unknown[0]}'")
    if spec.get("type") is not None and spec["type"] not in TYPES:
        raise bad(f"unknown type {spec['type']!r}")
    kind = TYPES[spec["type"]] if spec.get("type") is not None else type(like) if like is not None else None
    if kind is None:
        raise bad("a null default needs a type")
    if kind not in TYPES.values():
        raise bad(f"unsupported type {kind.__name__}")
    return kind


def _spec_bounds(spec: Mapping[str, Any], kind: type, bad: Bad) -> dict[str, Any]:
    """A spec's min, max, above and below: numbers, for a number, one lower and one upper bound at most."""
    bounds = {b: spec.get(b) for b in ("min", "max", "above", "below")}
    if any(v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))) for v in bounds.values()):
        raise bad("min, max, above and below must be numbers")
    if any(v is not None for v in bounds.values()) and kind not in (int, float):
        raise bad(f"bounds are for numbers, not {kind.__name__}")
    if (bounds["min"] is not None and bounds["above"] is not None) or (
            bounds["max"] is not None and bounds["below"] is not None):
        raise bad("give min or above, max or below, not both")
    return bounds


def _spec_lengths(spec: Mapping[str, Any], kind: type, bad: Bad) -> dict[str, Any]:
    """A spec's min_length and max_length: integers >= 0, for a string or a list."""
    lengths = {b: spec.get(b) for b in ("min_length", "max_length")}
    if any(v is not None for v in lengths.values()) and kind not in (str, list):
        raise bad("min_length and max_length are for strings and lists")
    if any(v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0) for v in lengths.values()):
        raise bad("min_length and max_length must be integers >= 0")
    return lengths


def _check_complete(kind: type, bounds: dict[str, Any], lengths: dict[str, Any], choices: bool, items: bool,
                    bad: Bad) -> None:
    """A range that bounds its values: a number both ways, a string's and a list's length (or choices)."""
    if kind in (int, float) and not choices and (
            (bounds["min"] is None and bounds["above"] is None) or (bounds["max"] is None and bounds["below"] is None)):
        raise bad("a number needs a lower bound (min or above) and an upper one (max or below), or choices")
    if kind is str and not choices and lengths["max_length"] is None:
        raise bad("a string needs max_length or choices")
    if kind is list and (lengths["max_length"] is None or not items):
        raise bad("a list needs max_length and items")


SHARED: dict[str, Constraint] = {name: make_constraint(spec, None, key=name, file=SHARED_FILE)
                                 for name, spec in SHARED_PARAMS.items()}


def declare_params(raw: Mapping[str, Any], *, file: str, prefix: str = "",
                   inherited: Mapping[str, Constraint] | None = None,
                   inherited_file: str = "") -> tuple[dict[str, Any], dict[str, Constraint]]:
    """(defaults, constraints) of a file's params, each default checked against its range; ConfigError naming
    every param without a range, with a bad one, or out of its own range (keys named `<prefix><name>`).

    A param is `name: {default: ..., <range>}`, or `name: default` when its range is declared elsewhere: in
    shared_params.py, or in `inherited` (an inference case's parameters share the training case's ranges).
    """
    inherited = inherited or {}
    defaults: dict[str, Any] = {}
    constraints: dict[str, Constraint] = {}
    errors: list[ConfigError] = []
    for name, value in raw.items():
        key = f"{prefix}{name}"
        try:
            if isinstance(value, Mapping):
                where = SHARED_FILE if name in SHARED else inherited_file if name in inherited else None
                if where:
                    raise ConfigError(f"its range is declared once, in {where}; give only its default", key=key,
                                      file=file)
                if "default" not in value:
                    raise ConfigError("a param with a range needs its default: {default: ..., min: ..., max: ...}",
                                      key=key, file=file)
                value, constraint = value["default"], make_constraint(value, value["default"], key=key, file=file)
            elif name in SHARED or name in inherited:
                constraint = SHARED.get(name) or inherited[name]
            else:
                raise ConfigError("has no range: write it as {default: ..., min: ..., max: ...} (see "
                                  f"case_runners/plan/config/constraints.py), or declare it in {SHARED_FILE}",
                                  key=key, file=file)
            defaults[name] = _check_default(constraint, value, key=key, file=file)
            constraints[name] = constraint
        except ConfigError as exc:
            errors.append(exc)
    raise_all(errors)
    return defaults, constraints


def _check_default(constraint: Constraint, value: Any, *, key: str, file: str) -> Any:
    try:
        return constraint.check(value, key=key, file=file)
    except ConfigError as exc:
        raise ConfigError(f"bad default: {exc.message}", key=key, file=file, allowed=exc.allowed) from None


def _num(value: float | None) -> str:
    return repr(value) if isinstance(value, float) else str(value)
