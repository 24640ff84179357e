"""Type checking of config values against the type of their default.

Values from `ansible-playbook -e key=value` arrive as strings, so a string that spells a number or a
boolean is accepted where one is expected; anything else is an error naming the key and where it came from.
"""

from __future__ import annotations

from typing import Any

from case_runners.errors import ConfigError

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)


def coerce(value: Any, like: Any, *, key: str, file: str) -> Any:
    """Return `value` converted to the type of `like`, or raise ConfigError."""
    if like is None or value is None:
        return value
    want = type(like)
    if want is bool:
        return to_bool(value, key=key, file=file)
    if want is int:
        return to_int(value, key=key, file=file)
    if want is float:
        return to_float(value, key=key, file=file)
    if isinstance(value, want):
        return value
    raise ConfigError(f"expected {type_name(like)}, got {value!r}", key=key, file=file)


def to_bool(value: Any, *, key: str, file: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ConfigError(f"expected a boolean, got {value!r}", key=key, file=file, allowed=["true", "false"])


def to_int(value: Any, *, key: str, file: str, minimum: int | None = None) -> int:
    result: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        result = value
    elif isinstance(value, float) and value.is_integer():
        result = int(value)
    elif isinstance(value, str):
        try:
            result = int(value.strip())
        except ValueError:
            result = None
    if result is None:
        raise ConfigError(f"expected an integer, got {value!r}", key=key, file=file)
    if minimum is not None and result < minimum:
        raise ConfigError(f"must be at least {minimum}, got {result}", key=key, file=file)
    return result


def to_float(value: Any, *, key: str, file: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise ConfigError(f"expected a number, got {value!r}", key=key, file=file)
