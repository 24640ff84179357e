"""Device memory helpers the base benchmarks share: a size as the records show it, and whether an exception is an
allocation failure (the only error a memory benchmark catches). Torch-free."""

from __future__ import annotations

UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size_label(nbytes: int) -> str:
    """A byte count as shown in a measurement's size: "256 MiB", "1.5 GiB", "100 B" (two decimals at most)."""
    value, unit = float(nbytes), UNITS[0]
    for unit in UNITS:
        if value < 1024 or unit == UNITS[-1]:
            break
        value /= 1024
    return f"{value:.2f}".rstrip("0").rstrip(".") + f" {unit}"


def out_of_memory(exc: BaseException) -> bool:
    """An allocation the device refused: torch's OutOfMemoryError (a RuntimeError), or a RuntimeError that says
    memory (the CPU allocator's "can't allocate memory")."""
    return isinstance(exc, RuntimeError) and (type(exc).__name__ == "OutOfMemoryError" or "memory" in str(exc).lower())
