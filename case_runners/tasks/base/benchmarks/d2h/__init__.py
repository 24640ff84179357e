"""d2h: device-to-host copy bandwidth to pinned and pageable host memory, by size (README.md: the method; the code,
shared with h2d: case_runners/tasks/base/transfer.py). The device memory its sizes need, torch-free."""

from __future__ import annotations

from case_runners.tasks.base.transfer import footprint

__all__ = ["footprint"]
