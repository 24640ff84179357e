"""Errors that carry what a user needs to fix the input: the key, the file, the allowed values."""

from __future__ import annotations

import reprlib
from collections.abc import Iterable

RUN_VARS_FILE = "run vars"  # the file an error in a run var names: "run vars: key 'perfplay_vendor': ..."
SHOWN_CHARS = 60  # the most of an input value a message echoes (a 1 MB run id makes no 3 MB log)
MAX_PATH_CHARS = 4096  # the longest path the plan accepts (Linux's PATH_MAX)
MAX_NAME_CHARS = 255  # the longest name the plan accepts: case, hardware, framework (NAME_MAX)
_BOUNDED = reprlib.Repr()  # a container's repr without walking all of it
_BOUNDED.maxstring = _BOUNDED.maxother = SHOWN_CHARS


class PerfplayError(Exception):
    """Base class for errors reported to the user without a traceback."""


class ConfigError(PerfplayError):
    """A bad input: names the key, the file it came from and the allowed values."""

    def __init__(self, message: str, *, key: str | None = None, file: str | None = None,
                 allowed: Iterable[object] | None = None) -> None:
        self.message = message
        self.key = key
        self.file = file
        self.allowed = sorted({str(a) for a in allowed}) if allowed is not None else None
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.file}: " if self.file else ""
        what = f"key '{self.key}': " if self.key else ""
        allowed = f" (allowed: {', '.join(self.allowed)})" if self.allowed is not None else ""
        return f"{where}{what}{self.message}{allowed}"


def cut(text: str, limit: int = SHOWN_CHARS) -> str:
    """`text` for a message: at most `limit` characters, "..." ending one that was cut."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def shown(value: object) -> str:
    """repr(value) for a message, cut to SHOWN_CHARS: an input value is never echoed whole."""
    return cut(repr(value[:SHOWN_CHARS + 1]) if isinstance(value, str) else _BOUNDED.repr(value))


def too_long(value: object, limit: int, *, key: str, file: str | None = None) -> ConfigError | None:
    """The error of a string value longer than the plan accepts, naming the limit; None for any other value."""
    if isinstance(value, str) and len(value) > limit:
        return ConfigError(f"{shown(value)} is {len(value)} characters long", key=key, file=file,
                           allowed=[f"at most {limit} characters"])
    return None


def path_too_long(value: object, *, key: str, file: str | None = None) -> ConfigError | None:
    """The error of a path longer than MAX_PATH_CHARS, or with a name in it longer than MAX_NAME_CHARS (the file
    system would refuse it, with a traceback where it is first used); None for any other value."""
    if not isinstance(value, str):
        return None
    longest = max(value.split("/"), key=len)
    if len(value) <= MAX_PATH_CHARS and len(longest) <= MAX_NAME_CHARS:
        return None
    what = f"is {len(value)} characters long" if len(value) > MAX_PATH_CHARS else \
        f"has a name of {len(longest)} characters in it"
    return ConfigError(f"{shown(value)} {what}", key=key, file=file,
                       allowed=[f"at most {MAX_PATH_CHARS} characters, {MAX_NAME_CHARS} per name"])


def raise_all(errors: list[ConfigError]) -> None:
    """Raise the one error, or one ConfigError joining several (each keeps its file and key); none: return."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigError("; ".join(str(e) for e in errors))
