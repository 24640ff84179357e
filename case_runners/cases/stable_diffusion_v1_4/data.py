"""stable_diffusion_v1_4's prompts, FlagPerf's way (stdlib only: the host preflight imports this without torch).

The prompts file is a captions JSON in COCO's layout, as VizWiz's image-captioning val.json: {"annotations":
[{"caption": "..."}, ...]}. FlagPerf keeps the captions shorter than prompt_max_len - 2 characters and samples
prompt_samples of them with Python's random seeded with the case's seed; so does this case.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

# Without a data dir: prompts made from these words (throughput only; their CLIP score means nothing).
_WORDS = ("a", "photo", "of", "red", "blue", "small", "large", "cat", "dog", "house", "tree", "car", "bottle",
          "on", "the", "table", "street", "beach", "at", "night")


def prompts_file(data_dir: str, params: dict[str, Any]) -> Path:
    return Path(data_dir) / str(params["prompts"])


def check_data_dir(data_dir: str, params: dict[str, Any]) -> list[str]:
    """Problems with the prompts file under data_dir; [] when it holds enough captions."""
    path = prompts_file(data_dir, params)
    try:
        captions = read_captions(path)
    except (OSError, ValueError) as exc:
        return [f"{path}: {exc}; expected a captions JSON {{\"annotations\": [{{\"caption\": \"...\"}}, ...]}} "
                "(VizWiz's val.json)"]
    short = [c for c in captions if len(c) < int(params["prompt_max_len"]) - 2]
    if len(short) < int(params["prompt_samples"]):
        return [f"{path}: {len(short)} captions shorter than prompt_max_len - 2 = "
                f"{int(params['prompt_max_len']) - 2} characters; prompt_samples is {params['prompt_samples']}"]
    return []


def read_captions(path: Path) -> list[str]:
    """The captions of a captions JSON; ValueError when it is not one."""
    try:
        annotations = json.loads(path.read_text(encoding="utf-8"))["annotations"]
        return [str(item["caption"]) for item in annotations]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"not a captions JSON ({type(exc).__name__}: {exc})") from None


def load_prompts(data_dir: str | None, params: dict[str, Any]) -> list[str]:
    """prompt_samples prompts: FlagPerf's sample of the data dir's captions, or synthetic ones without a data dir."""
    count, seed = int(params["prompt_samples"]), int(params["seed"])
    if data_dir is None:
        rng = random.Random(seed)
        return [" ".join(rng.choice(_WORDS) for _ in range(6)) for _ in range(count)]
    captions = [c for c in read_captions(prompts_file(data_dir, params)) if len(c) < int(params["prompt_max_len"]) - 2]
    # FlagPerf's dataloader.py: random.seed(random_seed); random.sample(dataset, prompt_samples): the same sample
    return random.Random(seed).sample(captions, count)
