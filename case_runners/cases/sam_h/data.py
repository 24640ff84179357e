"""sam_h's data, FlagPerf's way (stdlib only: the host preflight imports this without torch).

FlagPerf's sam_h segments one image (the car of transformers' SamModel example, which its dataloader downloads)
with one point prompt, datasize times; its ground truth is the three masks transformers' SamModel example computes
on that image, saved with torch.save as <ground_truth>_0.pt .. _2.pt (bool, the image's height x width) in the data
dir. Here the image is a file in the data dir too (nothing is downloaded at run time).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

MASKS = 3  # SAM's multimask output: three masks a prompt


def truth_files(data_dir: str, params: dict[str, Any]) -> list[Path]:
    return [Path(data_dir) / f"{params['ground_truth']}_{index}.pt" for index in range(MASKS)]


def check_data_dir(data_dir: str, params: dict[str, Any]) -> list[str]:
    """The image and the three ground-truth masks under data_dir; [] when they are there."""
    image = Path(data_dir) / str(params["image"])
    problems = [] if image.is_file() else [f"{image}: missing; expected the image to segment (FlagPerf's car.png)"]
    problems += [f"{path}: missing; expected a bool mask of the image's size saved with torch.save (FlagPerf's "
                 "sam_gt_<i>.pt)" for path in truth_files(data_dir, params) if not path.is_file()]
    return problems
