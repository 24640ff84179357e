"""How the base benchmarks show a byte count as a measurement's size: "64 MiB", "1.5 GiB", "512 B"."""

from __future__ import annotations

UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size_text(nbytes: int) -> str:
    """nbytes in the largest binary unit it reaches, without a trailing ".0" (65536 -> "64 KiB")."""
    if nbytes < 1024:
        return f"{nbytes} B"
    value = float(nbytes)
    for unit in UNITS[1:]:
        value /= 1024
        if value < 1024 or unit == UNITS[-1]:
            break
    return f"{value:.4g} {unit}"
