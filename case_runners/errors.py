"""Errors that carry what a user needs to fix the input: the key, the file, the allowed values."""

from __future__ import annotations

from collections.abc import Iterable

RUN_VARS_FILE = "run vars"  # the file an error in a run var names: "run vars: key 'perfplay_vendor': ..."


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


def raise_all(errors: list[ConfigError]) -> None:
    """Raise the one error, or one ConfigError joining several (each keeps its file and key); none: return."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigError("; ".join(str(e) for e in errors))
