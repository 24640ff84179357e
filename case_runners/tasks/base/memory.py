"""Whether an exception is an allocation failure: the only error a memory benchmark catches. Torch-free."""

from __future__ import annotations


def out_of_memory(exc: BaseException) -> bool:
    """An allocation the device refused: torch's OutOfMemoryError (a RuntimeError), or a RuntimeError that says
    memory (the CPU allocator's "can't allocate memory")."""
    return isinstance(exc, RuntimeError) and (type(exc).__name__ == "OutOfMemoryError" or "memory" in str(exc).lower())
