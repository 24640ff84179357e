"""The RunContext of a case built inside a test's own process: rank 0 of one on the CPU (or the given rank of
world_size, for a rank's share), no event log."""

from __future__ import annotations

from pathlib import Path

import torch

from case_runners.tasks.training.case_api import RunContext


def cpu_context(data_dir: str | Path | None = None, rank: int = 0, world_size: int = 1) -> RunContext:
    return RunContext(rank=rank, local_rank=rank, world_size=world_size, device=torch.device("cpu"),
                      data_dir=None if data_dir is None else str(data_dir), log=None)  # type: ignore[arg-type]
