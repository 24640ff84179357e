"""h2d: host-to-device copy bandwidth from pinned and pageable host memory, by size (README.md: the method; the code,
shared with d2h: case_runners/tasks/base/transfer.py). The device memory its sizes need, torch-free."""

from __future__ import annotations

from case_runners.tasks.base.transfer import footprint

__all__ = ["footprint"]
