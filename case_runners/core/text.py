"""How the summaries write a table and a number as text: one definition for the run summary, the base table and
compare's report."""

from __future__ import annotations

from typing import Any


def text_columns(header: list[str], rows: list[list[str]]) -> list[str]:
    """A table as lines of text: the header, then the rows, each column as wide as its widest cell."""
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()
    return [line, *("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)]


def number_text(value: Any, digits: int = 1) -> str:
    """A number with `digits` decimals, or "-" for anything that is not one."""
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def percent_text(fraction: Any, digits: int = 2) -> str:
    """A fraction as a percentage with `digits` decimals ("26.37%"), or "-" for anything that is not a number."""
    text = number_text(fraction * 100 if isinstance(fraction, (int, float)) and not isinstance(fraction, bool)
                       else None, digits)
    return text if text == "-" else text + "%"
