"""How the base benchmarks show a byte count as a measurement's size: "256 MiB", "1.5 GiB", "100 B". Torch-free."""

from __future__ import annotations

UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size_label(nbytes: int) -> str:
    """nbytes in the largest binary unit it reaches, two decimals at most, no trailing zeros (65536 -> "64 KiB")."""
    value, unit = float(nbytes), UNITS[0]
    for unit in UNITS:
        if value < 1024 or unit == UNITS[-1]:
            break
        value /= 1024
    return f"{value:.2f}".rstrip("0").rstrip(".") + f" {unit}"
