"""Type conversion of config values to the type of their param.

Values from `ansible-playbook -e key=value` arrive as strings, so a string that spells a number or a
boolean is accepted where one is expected; anything else is an error naming the key and where it came from.
Ranges are checked after conversion (case_runners/plan/config/constraints.py).
"""

from __future__ import annotations

from typing import Any

from case_runners.core.errors import ConfigError, shown

# The one boolean parser of run vars and config values: the words Ansible's `bool` reads (any case), 1 and 0.
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")
BOOL_WORDS = ", ".join(f"{t}/{f}" for t, f in zip(TRUE_WORDS, FALSE_WORDS))  # "true/false, yes/no, on/off, 1/0"


def type_name(kind: type) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a mapping"}.get(kind, kind.__name__)


def coerce(value: Any, kind: type, *, key: str, file: str) -> Any:
    """Return `value` (not None) converted to `kind`, or raise ConfigError."""
    if kind is bool:
        return to_bool(value, key=key, file=file)
    if kind is int:
        return to_int(value, key=key, file=file)
    if kind is float:
        return to_float(value, key=key, file=file)
    if isinstance(value, kind) and not isinstance(value, bool):
        return value
    raise ConfigError(f"expected {type_name(kind)}, got {shown(value)}", key=key, file=file)


def to_bool(value: Any, *, key: str, file: str | None) -> bool:
    """A bool, the integers 1 and 0, or one of BOOL_WORDS in any case; else ConfigError listing them."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        value = str(value)
    word = value.strip().lower() if isinstance(value, str) else None
    if word in TRUE_WORDS + FALSE_WORDS:
        return word in TRUE_WORDS
    raise ConfigError(f"expected a boolean, got {shown(value)}", key=key, file=file, allowed=[BOOL_WORDS])


def to_int(value: Any, *, key: str, file: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ConfigError(f"expected an integer, got {shown(value)}", key=key, file=file)


def to_float(value: Any, *, key: str, file: str) -> float:
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            return float(value.strip())
    except (ValueError, OverflowError):
        pass
    raise ConfigError(f"expected a number, got {shown(value)}", key=key, file=file)

