"""One finding of check-vendor: its level, where it is (a file or a case) and what is wrong or was verified."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    level: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self.where}: {self.message}"


def error(where: str, message: str) -> Finding:
    return Finding("error", where, message)


def warning(where: str, message: str) -> Finding:
    return Finding("warning", where, message)


def ok(where: str, message: str) -> Finding:
    return Finding("ok", where, message)
