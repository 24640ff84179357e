"""Format check for bigtransfer data (standard library only): ImageNet in ImageFolder layout
(case_runners/cases/imagenet/data.py) and, as FlagPerf lays them out beside it, BiT's released weights the case
fine-tunes from: <data_dir>/<transfer_weights> (backbone_weights/bigtransfer/BiT-M-R152x2.npz)."""

from __future__ import annotations

from pathlib import Path

from case_runners.cases.imagenet import data as imagenet
from case_runners.cases.imagenet.data import LAYOUT

__all__ = ["LAYOUT", "check_data_dir", "weights_path"]

WEIGHTS_SOURCE = "https://storage.googleapis.com/bit_models/BiT-M-R152x2.npz"


def weights_path(data_dir: str | None, params: dict) -> Path | None:
    """The .npz the case loads: transfer_weights under data_dir (or an absolute path); None in synthetic mode or
    when transfer_weights is "" (training from the initialisation)."""
    name = str(params.get("transfer_weights") or "")
    if params.get("synthetic") or not name or not data_dir:
        return None
    return Path(data_dir) / name


def check_data_dir(data_dir: str | None, params: dict) -> list[str]:
    problems = imagenet.check_data_dir(data_dir, params)
    path = weights_path(data_dir, params)
    if path is not None and not path.is_file():
        problems.append(f"{path}: missing: the BiT weights the case fine-tunes from (transfer_weights: "
                        f"{params['transfer_weights']}, from {WEIGHTS_SOURCE}); or set transfer_weights: \"\" to "
                        f"train from the initialisation (non-standard)")
    return problems
